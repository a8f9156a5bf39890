import { ConfigError } from "../../core/errors.js";

/**
 * spec A Endpoints: the standard base path, and the enterprise plan's own
 * base path with the same two paths under it. spec A Versioning: /api/v3 is
 * the API version; no /v1/ or /v2/ scheme exists.
 */
export const A_BASE_PATHS = { standard: "/api/v3", enterprise: "/api/plan/v3" } as const;
export type APlan = keyof typeof A_BASE_PATHS;

const TASKS_PATH = "/contents/generations/tasks";
const LEGACY_VERSION = /\/v[12](\/|$)/i;

export interface AEndpoints {
  plan: APlan;
  /** POST: create a task. */
  tasks: string;
  /** GET: read a task. */
  task(id: string): string;
}

/**
 * The two URLs of A for a plan. The configured base address must not carry
 * a path of its own under /api: mediagate adds /api/v3 or /api/plan/v3 from
 * MEDIAGATE_A_ENTERPRISE, so a key and a base path of different plans are
 * never mixed, and a /v1/ or /v2/ path is never built.
 */
export function aEndpoints(baseUrl: string, plan: APlan): AEndpoints {
  const base = baseUrl.replace(/\/+$/, "");
  if (base !== "") {
    let path: string;
    try {
      const parsed = new URL(base);
      if (parsed.protocol !== "https:" && parsed.protocol !== "http:") throw new TypeError("scheme");
      path = parsed.pathname;
    } catch {
      throw new ConfigError("MEDIAGATE_A_BASE_URL", `MEDIAGATE_A_BASE_URL must be an http(s) address, got "${baseUrl}"`);
    }
    if (LEGACY_VERSION.test(`${path}/`)) {
      throw new ConfigError("MEDIAGATE_A_BASE_URL", `MEDIAGATE_A_BASE_URL must not contain a /v1/ or /v2/ segment: A has no such API version (it is /api/v3)`);
    }
    if (/\/api(\/|$)/.test(path)) {
      throw new ConfigError(
        "MEDIAGATE_A_BASE_URL",
        "MEDIAGATE_A_BASE_URL must stop before /api: mediagate adds /api/v3, or /api/plan/v3 when MEDIAGATE_A_ENTERPRISE=1, so the key and the base path always belong to the same plan",
      );
    }
  }
  const tasks = `${base}${A_BASE_PATHS[plan]}${TASKS_PATH}`;
  return {
    plan,
    tasks,
    // Ids the provider hands back are encoded so they cannot add a segment, query or fragment.
    task: (id) => `${tasks}/${encodeURIComponent(id)}`,
  };
}

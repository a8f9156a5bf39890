import { systemClock } from "../../../src/core/clock.js";
import type { UrlPolicy } from "../../../src/core/url-safety.js";
import type { CallContext, JobRequest } from "../../../src/providers/adapter.js";
import { createEAdapter, type EAdapter, type EAdapterConfig } from "../../../src/providers/e/index.js";
import { ProviderHttp } from "../../../src/providers/http.js";
import { DEFAULT_E_CLIENT } from "../../../src/sandbox/e/index.js";
import { startSandbox, type EEmulator, type EEmulatorOptions, type LoggedRequest, type Sandbox } from "../../../src/sandbox/index.js";

/** The names that fill the spec's scope placeholders for the sandbox (its README: vendor "Sandbox", service "imagegen", short "ig"). */
export const SANDBOX_SCOPE_NAMES = { vendor: "Sandbox", service: "imagegen", serviceShort: "ig" };
export const CLIENT_ID = DEFAULT_E_CLIENT.clientId;
export const CLIENT_SECRET = DEFAULT_E_CLIENT.clientSecret;
export const RENDER_MS = 5_000;
export const MINUTE = 60_000;
export const DAY = 24 * 3_600_000;
export const LOOSE: UrlPolicy = { allowHttp: true, allowPrivate: true };

export interface EWorld {
  sandbox: Sandbox;
  e: EEmulator;
  advance(ms: number): void;
  client(config?: Partial<EAdapterConfig>, options?: ClientOptions): EClient;
  /** Requests the sandbox received for E (token, API, status host), result downloads left out. */
  requests(): LoggedRequest[];
  tokenRequests(): LoggedRequest[];
  submits(): LoggedRequest[];
  statusReads(): LoggedRequest[];
  close(): Promise<void>;
}

export interface ClientOptions {
  urlPolicy?: UrlPolicy;
  /** What the HTTP layer redacts; by default the adapter's own secrets, as the engine must wire them. */
  secrets?: () => string[];
  maxAttempts?: number;
  /** Called before every request leaves, as the engine's rate limiter is. */
  beforeRequest?: () => Promise<void>;
}

export interface EClient {
  adapter: EAdapter;
  context: CallContext;
  http: ProviderHttp;
}

/**
 * A sandbox with E only. Quota-neutral tests raise the per-minute limit so
 * they need not step the clock; the quota tests keep E's 4 per minute.
 */
export async function startE(options: EEmulatorOptions = {}): Promise<EWorld> {
  const sandbox = await startSandbox({ providers: ["e"], emulators: { e: { renderMs: RENDER_MS, requestsPerMinute: 1_000, ...options } } });
  const e = sandbox.emulators.e!;
  const requests = () => sandbox.requests().filter((entry) => entry.provider === "e" && !entry.url.startsWith("/e-files/"));
  return {
    sandbox,
    e,
    advance: (ms) => sandbox.clock.advance(ms),
    client(config = {}, options = {}) {
      const adapter = createEAdapter({
        baseUrl: `${sandbox.url}/e`,
        authUrl: `${sandbox.url}/e-auth`,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        scopeNames: SANDBOX_SCOPE_NAMES,
        ...config,
      });
      // Resends of idempotent requests wait zero time, so no test sleeps.
      const http = new ProviderHttp({
        provider: "e",
        clock: systemClock,
        secrets: options.secrets ?? (() => adapter.secrets()),
        urlPolicy: options.urlPolicy ?? LOOSE,
        random: () => 0,
        ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
        ...(options.beforeRequest ? { beforeRequest: options.beforeRequest } : {}),
      });
      // The sandbox's virtual clock, so token lifetimes and the 7-day upload validity can be crossed with advance().
      return { adapter, http, context: { http, clock: sandbox.clock } };
    },
    requests,
    tokenRequests: () => requests().filter((entry) => entry.url.startsWith("/e-auth/")),
    submits: () => requests().filter((entry) => entry.method === "POST" && /^\/e\/v\d\/images\//.test(entry.url)),
    statusReads: () => requests().filter((entry) => entry.method === "GET" && entry.url.startsWith("/e-status/")),
    close: () => sandbox.stop(),
  };
}

export function generate(input: Record<string, unknown> = {}, extra: Partial<JobRequest> = {}): JobRequest {
  return { provider: "e", model: "v3", input: { prompt: "a lighthouse at dawn", ...input }, ...extra };
}

export async function thrown(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw");
}

/** Path and query of a URL, as the sandbox logs it. */
export function pathOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

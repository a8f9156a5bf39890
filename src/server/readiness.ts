import type { FastifyInstance } from "fastify";
import type { Engine } from "../engine/engine.js";
import type { EngineLogger } from "../engine/logger.js";
import type { Store } from "../store/store.js";

/** A load balancer's probe gives up after a few seconds; a store slower than this is not ready either. */
export const READY_STORE_TIMEOUT_MS = 2_000;

export interface ReadinessDeps {
  store: Store;
  log: EngineLogger;
}

/** What `/readyz` answers: ready when the store answers and the engine runs (when this server runs one). */
export interface Readiness {
  ready: boolean;
  /** "ok"; "timeout": no answer within the bound; "error": the query failed. */
  store: "ok" | "timeout" | "error";
  /** "running"; "stopped": this server's engine is not (yet, or any more) running; "none": `serve --no-engine`. */
  engine: "running" | "stopped" | "none";
  /** Why it is not ready, one sentence each (no store address, no error detail: the probe is unauthenticated). */
  reasons: string[];
  /** When not ready (503): the server's error shape, `not_ready`, its message the reasons. */
  error?: { code: "not_ready"; message: string };
}

/**
 * `GET /readyz`: 200 when this server can do its work, else 503, both with
 * a `Readiness` body. The store is asked the smallest question it has (its
 * halts, a row per halted provider) within `timeoutMs`; the engine must be
 * running unless this server runs none (`engine` null: the API only, the
 * workers elsewhere). `/healthz` stays the process's liveness: it answers
 * whatever the store does.
 */
export function registerReadiness(app: FastifyInstance, deps: ReadinessDeps, options: { engine: Engine | null; timeoutMs?: number }): void {
  const timeoutMs = options.timeoutMs ?? READY_STORE_TIMEOUT_MS;
  app.get("/readyz", async (_request, reply) => {
    const store = await storeAnswers(deps, timeoutMs);
    const engine = options.engine === null ? "none" : options.engine.running ? "running" : "stopped";
    const reasons: string[] = [];
    if (store === "timeout") reasons.push(`the store did not answer within ${timeoutMs} ms`);
    if (store === "error") reasons.push("the store failed a trivial query (the server's log says why)");
    if (engine === "stopped") reasons.push("the engine is not running");
    const body: Readiness = { ready: reasons.length === 0, store, engine, reasons, ...(reasons.length > 0 ? { error: { code: "not_ready" as const, message: reasons.join("; ") } } : {}) };
    return reply.code(body.ready ? 200 : 503).header("cache-control", "no-store").send(body);
  });
}

async function storeAnswers(deps: ReadinessDeps, timeoutMs: number): Promise<Readiness["store"]> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  const asked = Promise.resolve()
    .then(() => deps.store.halts())
    .then(
      () => "ok" as const,
      (error: unknown) => {
        deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, "readiness: the store failed a trivial query");
        return "error" as const;
      },
    );
  try {
    return await Promise.race([asked, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

import type { FastifyInstance } from "fastify";
import type { EngineLogger } from "../engine/logger.js";

/** Paths are cut to this length in the log: an id is far shorter, a garbage request need not fill the line. */
const MAX_LOGGED_PATH = 200;

/**
 * One log line (info) per API request once it is answered: method, path
 * (never the query string), status, duration and the caller's token name.
 * Fields are picked one by one, so neither the Authorization header nor a
 * token's secret can reach the line; an unauthenticated request has caller
 * null.
 */
export function logApiRequests(app: FastifyInstance, log: EngineLogger): void {
  app.addHook("onResponse", async (request, reply) => {
    const path = request.url.split("?")[0]!;
    if (path !== "/v1" && !path.startsWith("/v1/")) return;
    log.info(
      {
        method: request.method,
        path: path.slice(0, MAX_LOGGED_PATH),
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
        caller: request.caller?.name ?? null,
      },
      "api request",
    );
  });
}

import type { FastifyError, FastifyInstance } from "fastify";
import { InputError } from "../core/errors.js";
import type { LoggedRequest, RequestFilter } from "./request-log.js";
import type { SandboxStats } from "./stats.js";

/** What the `/_sandbox/` endpoints act on; the library's `startSandbox` offers the same as methods. */
export interface SandboxControls {
  requests(filter: RequestFilter): LoggedRequest[];
  stats(): SandboxStats;
  reset(): Promise<void>;
  /** Moves virtual time forward; returns the virtual time now. */
  advance(ms: number): number;
  /** Adds the rules of a fault spec (the JSON vocabulary of fault-spec.ts); returns how many. `field` names the input in errors. */
  addFaults(spec: unknown, field: string): number;
  clearFaults(): void;
}

/**
 * The sandbox's own endpoints for tests. They are not logged and never get an
 * injected fault, so looking does not change what is looked at.
 */
export const CONTROL_PATH = /^\/_sandbox\/(requests|stats|reset|advance|faults)$/;

function wholeNumber(value: string | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new InputError(field, `"${value}" is not a whole number`, "a whole number ≥ 0");
  return Number(value);
}

export async function registerInspectionRoutes(app: FastifyInstance, controls: SandboxControls): Promise<void> {
  await app.register(async (scope) => {
    scope.setErrorHandler(async (error: FastifyError | InputError, _request, reply) => {
      if (error instanceof InputError) return reply.code(400).send({ error: { code: error.code, field: error.field, message: error.message } });
      const statusCode = error.statusCode ?? 500;
      return reply.code(statusCode).send({ error: { code: statusCode < 500 ? "invalid_input" : "internal_error", message: error.message } });
    });

    scope.get<{ Querystring: { provider?: string; since?: string; limit?: string } }>("/_sandbox/requests", async (request) => {
      const { provider, since, limit } = request.query;
      if (provider !== undefined && !/^[a-f]$/.test(provider)) throw new InputError("provider", `"${provider}" is not a provider`, "a, b, c, d, e or f");
      const filter: RequestFilter = {};
      if (provider !== undefined) filter.provider = provider;
      const sinceMs = wholeNumber(since, "since");
      if (sinceMs !== undefined) filter.since = sinceMs;
      const count = wholeNumber(limit, "limit");
      if (count !== undefined) filter.limit = count;
      const requests = controls.requests(filter);
      return { count: requests.length, requests };
    });

    scope.get("/_sandbox/stats", async () => controls.stats());

    scope.post("/_sandbox/reset", async () => {
      await controls.reset();
      return { reset: true };
    });

    scope.post<{ Querystring: { ms?: string } }>("/_sandbox/advance", async (request) => {
      const ms = wholeNumber(request.query.ms, "ms");
      if (ms === undefined) throw new InputError("ms", "is missing", "?ms= a whole number of milliseconds ≥ 0");
      return { advancedMs: ms, now: controls.advance(ms) };
    });

    scope.post("/_sandbox/faults", async (request) => ({ added: controls.addFaults(request.body, "body") }));

    scope.delete("/_sandbox/faults", async () => {
      controls.clearFaults();
      return { cleared: true };
    });
  });
}

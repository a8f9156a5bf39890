import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { apiBatch } from "../../app/batch-view.js";
import { cancelBatchUnsent, cancelJob } from "../../app/cancel.js";
import type { Caller } from "../../app/caller.js";
import { ConflictError } from "../../app/errors.js";
import { prepareLines, quoteOf, submitBatch, submitJob } from "../../app/intake.js";
import { deadlineWarning, NO_TIMING, timingsOf, type JobTiming } from "../../app/eta.js";
import { apiEvent, apiJob } from "../../app/job-view.js";
import { requestView } from "../../app/request-view.js";
import { planBatch } from "../../app/plan.js";
import { providerStates } from "../../app/provider-states.js";
import { batchOf, jobEvents, jobOutput, jobOutputs, listJobs, spendOf, spendPeriod, spendView, visibleJob } from "../../app/queries.js";
import type { Runtime } from "../../app/runtime.js";
import { InputError } from "../../core/errors.js";
import { checkJsonText } from "../../core/json-text.js";
import { checkWellFormed } from "../../core/well-formed.js";
import type { Job, JobOutput } from "../../core/job.js";
import type { EngineLogger } from "../../engine/logger.js";
import { sendOutputFile } from "../output-file.js";
import { callerOfRequest } from "../request-caller.js";
import { apiLineRequest, batchLines } from "./batches.js";
import { ApiError, apiErrorOf, failureOf, frameworkErrorCode } from "./errors.js";
import { cancelAfterOfHeader, encodeCursor, idempotencyOf, jobListQuery, quotedRequestOfBody, submissionOfBody, utf8Body } from "./requests.js";
import { openApiDocument, type ApiRoute, type DescribedRoute } from "./openapi.js";
import { methodNotAllowed, type RouteMethods } from "../route-methods.js";

export interface ApiDeps {
  runtime: Runtime;
  log: EngineLogger;
}

declare module "fastify" {
  interface FastifyRequest {
    caller?: Caller;
  }
}

/** A batch of 20,000 lines is a few megabytes; one request is far smaller (the server's 1 MB default). */
const BATCH_BODY_LIMIT = 64 * 1024 * 1024;

function jsonBody(request: FastifyRequest): unknown {
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  if (raw.length === 0) return undefined;
  const text = utf8Body(raw);
  checkJsonText(text, "body", { namesMember: true });
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError("invalid_json", "the body is not valid JSON");
  }
}

function query(request: FastifyRequest): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries((request.query ?? {}) as Record<string, unknown>)) {
    values[name] = Array.isArray(value) ? String(value.at(-1)) : value === undefined ? undefined : String(value);
    if (values[name] !== undefined) checkWellFormed(values[name], name);
  }
  return values;
}

/** The routes of the REST API, each described for the OpenAPI document it is served with. */
function routes(deps: ApiDeps): ApiRoute[] {
  const { runtime } = deps;
  const store = () => runtime.store();
  // A job as admission answers it: with a warning when it is expected to finish after its deadline.
  const admittedJob = (job: Job, outputs: JobOutput[], timing: JobTiming = NO_TIMING) => {
    const shown = apiJob(job, outputs, runtime.config.publicUrl, timing);
    const warning = deadlineWarning(job, timing);
    return warning === null ? shown : { ...shown, warnings: [...shown.warnings, warning] };
  };
  return [
    {
      method: "POST",
      path: "/v1/jobs",
      summary: "Queue one job: a native request (provider, model, input) or a common one (task, prompt, …, model or route); optional ref (the same ref and request answer the job stored under it), notify_url, cancel_after_s (or the Cancel-After header: 90s, 5m, 1h; not sent by then, it is cancelled) and Idempotency-Key; its estimate is reserved in the token's budget as it is stored. With traces exported, a W3C traceparent header makes the job's span a child of the caller's",
      writes: true,
      responses: {
        200: "the job stored before under this ref or key, same request, as it is now",
        201: "the job, queued",
        402: "over_budget: its estimate is more than the token's budget has left; nothing was queued",
        409: "ref_conflict",
        422: "invalid_input, no_eligible_target or idempotency_key_reused",
      },
      handler: async (request, reply) => {
        const body = jsonBody(request);
        const submission = submissionOfBody(body);
        const header = cancelAfterOfHeader(request.headers["cancel-after"]);
        if (header !== null && submission.cancelAfterS !== null) throw new InputError("Cancel-After", "is given with cancel_after_s in the body: send one of them", "Cancel-After, or cancel_after_s in the body");
        const traceparent = headerText(request.headers.traceparent);
        const created = await submitJob(runtime, request.caller!, { ...submission, cancelAfterS: submission.cancelAfterS ?? header, traceparent }, idempotencyOf(request.headers["idempotency-key"], "POST /v1/jobs", body));
        // A job still queued has no outputs: only one further on (found under its ref or key) is read for them.
        const outputs = created.job.state === "queued" ? [] : await jobOutputs(runtime, created.job);
        return reply.code(created.status).send(admittedJob(created.job, outputs, (await timingsOf(runtime, [created.job])).get(created.job.id)));
      },
    },
    {
      method: "GET",
      path: "/v1/jobs",
      summary: "Jobs newest first, a page at a time (limit, cursor), filtered by state, provider, ref or ref_prefix, batch, created_after, created_before",
      query: {
        state: "only jobs in these states (comma-separated)",
        provider: "only this provider's jobs (a to f)",
        ref: "only the job with exactly this ref",
        ref_prefix: "only jobs whose ref starts with this, compared character by character (case matters; % and _ are plain characters): batch-7 finds batch-7-001 and batch-70",
        batch: "only this batch's jobs",
        created_after: "created at or after this time (ISO 8601 or milliseconds since the epoch)",
        created_before: "created before this time (ISO 8601 or milliseconds since the epoch)",
        limit: "jobs per page, 1 to 200 (default 50)",
        cursor: "the next_cursor of the previous page",
      },
      responses: { 200: "{jobs, next_cursor}" },
      handler: async (request) => {
        const { filter, limit } = jobListQuery(query(request));
        const page = await listJobs(runtime, request.caller!, filter, limit);
        // The page's outputs in one read, not one a job.
        const [outputs, timings] = await Promise.all([(await store()).outputsOfJobs(page.jobs.map((job) => job.id)), timingsOf(runtime, page.jobs)]);
        return { jobs: page.jobs.map((job) => apiJob(job, outputs.get(job.id) ?? [], runtime.config.publicUrl, timings.get(job.id))), next_cursor: page.next ? encodeCursor(page.next) : null };
      },
    },
    {
      method: "GET",
      path: "/v1/jobs/{id}",
      summary: "One job: state, outputs, cost, attempts, and its request (what was asked: the fields sent, files by name, type, size and sha256, links without their query)",
      responses: { 200: "the job, with its request", 404: "not_found" },
      handler: async (request) => {
        const job = await visibleJob(runtime, request.caller!, (request.params as { id: string }).id);
        const [outputs, timings] = await Promise.all([jobOutputs(runtime, job), timingsOf(runtime, [job])]);
        return { ...apiJob(job, outputs, runtime.config.publicUrl, timings.get(job.id)), request: requestView(job) };
      },
    },
    {
      method: "GET",
      path: "/v1/jobs/{id}/events",
      summary: "The job's event log, oldest first",
      responses: { 200: "{events}", 404: "not_found" },
      handler: async (request) => {
        const job = await visibleJob(runtime, request.caller!, (request.params as { id: string }).id);
        return { events: (await jobEvents(runtime, job)).map(apiEvent) };
      },
    },
    {
      method: "GET",
      path: "/v1/jobs/{id}/outputs/{n}",
      summary: "The saved bytes of output n, with its content type, an ETag (its sha256) and byte ranges",
      responses: { 200: "the file", 206: "a byte range of it", 304: "not modified (If-None-Match)", 404: "not_found", 416: "range_not_satisfiable" },
      handler: async (request, reply) => {
        const params = request.params as { id: string; n: string };
        const job = await visibleJob(runtime, request.caller!, params.id);
        const output = await jobOutput(runtime, job, params.n);
        return sendOutputFile(request, reply, output, `output ${params.n} of job ${job.id}`);
      },
    },
    {
      method: "POST",
      path: "/v1/jobs/{id}/cancel",
      summary: "Cancel a job: a queued one locally; a running one at its provider where the provider has a cancel operation",
      writes: true,
      responses: { 200: "the cancelled job", 404: "not_found", 409: "not_cancellable" },
      handler: async (request) => {
        const job = await visibleJob(runtime, request.caller!, (request.params as { id: string }).id);
        const outcome = await cancelJob(runtime, job);
        if (outcome.kind === "refused") throw new ConflictError("not_cancellable", outcome.message);
        return apiJob(outcome.job, [], runtime.config.publicUrl);
      },
    },
    {
      method: "POST",
      path: "/v1/quote",
      summary: "The estimate of one request (native or common: its chosen target's), with warnings; nothing is stored or sent",
      responses: { 200: "{estimate_micro_usd, source, warnings, target?, route?}", 422: "invalid_input or no_eligible_target" },
      handler: async (request) => quoteOf(runtime, quotedRequestOfBody(jsonBody(request))),
    },
    {
      method: "POST",
      path: "/v1/plan",
      summary: "Waves and expected wall time per provider of a batch (a JSON array or JSON lines), and its estimate; nothing is stored or sent",
      bodyLimit: BATCH_BODY_LIMIT,
      responses: { 200: "{providers}", 422: "invalid_input, one entry per bad line" },
      handler: async (request) => {
        const lines = await prepareLines(runtime, batchLines(Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0), request.headers["content-type"]), apiLineRequest);
        return { providers: await planBatch(runtime, await store(), lines.map((line) => line.prepared)) };
      },
    },
    {
      method: "POST",
      path: "/v1/batches",
      summary: "Queue a batch (a JSON array or JSON lines, every line with a ref), validated whole before anything is queued, its estimates reserved in the token's budget as it is stored; optional Idempotency-Key, and Cancel-After for the lines without their own cancel_after_s. With traces exported, a W3C traceparent header makes each job's span a child of the caller's",
      bodyLimit: BATCH_BODY_LIMIT,
      writes: true,
      responses: {
        200: "{batch_id, jobs, created}: every job was stored before (a batch or key sent again), each as it is now",
        201: "{batch_id, jobs, created}",
        402: "over_budget: the jobs it would create cost more than the token's budget has left; nothing was queued",
        409: "ref_conflict",
        422: "invalid_input, one entry per bad line; idempotency_key_reused",
      },
      handler: async (request, reply) => {
        const lines = batchLines(Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0), request.headers["content-type"]);
        const batch = await submitBatch(runtime, request.caller!, lines, apiLineRequest, idempotencyOf(request.headers["idempotency-key"], "POST /v1/batches", lines), cancelAfterOfHeader(request.headers["cancel-after"]), headerText(request.headers.traceparent));
        // The outputs of jobs past the queue (stored before, found again) in one read, not one a job.
        const further = batch.jobs.filter((job) => job.state !== "queued").map((job) => job.id);
        const outputs = further.length === 0 ? new Map<string, JobOutput[]>() : await (await store()).outputsOfJobs(further);
        const timings = await timingsOf(runtime, batch.jobs);
        return reply.code(batch.status).send({ batch_id: batch.batchId, created: batch.created, jobs: batch.jobs.map((job) => admittedJob(job, outputs.get(job.id) ?? [], timings.get(job.id))) });
      },
    },
    {
      method: "GET",
      path: "/v1/batches/{id}",
      summary: "A batch: its jobs counted by state, its estimate and the charges known, its href (absolute under MEDIAGATE_PUBLIC_URL) and its dashboard page",
      responses: { 200: "{batch_id, jobs, by_state, estimate_micro_usd, unpriced, charged_micro_usd, href, dashboard_href}", 404: "not_found", 422: "invalid_input: not a batch id" },
      handler: async (request) => {
        const id = (request.params as { id: string }).id;
        return apiBatch(id, await batchOf(runtime, request.caller!, id), runtime.config.publicUrl);
      },
    },
    {
      method: "POST",
      path: "/v1/batches/{id}/cancel",
      summary: "Cancel every job of the batch not sent yet (queued), a page at a time, each by compare-and-set: a job already claimed for sending, or sent, is left to run and be charged as it is",
      writes: true,
      responses: { 200: "{cancelled, batch}: how many were cancelled (0 when none was left unsent), and the batch as it is after", 404: "not_found", 422: "invalid_input: not a batch id" },
      handler: async (request) => {
        const id = (request.params as { id: string }).id;
        const outcome = await cancelBatchUnsent(runtime, request.caller!, id);
        return { cancelled: outcome.cancelled, batch: apiBatch(id, outcome.summary, runtime.config.publicUrl) };
      },
    },
    {
      method: "GET",
      path: "/v1/providers",
      summary: "Each provider: configured or not and why, slots in use against their caps, rate budget left in each window, halt, recent errors",
      responses: { 200: "{providers}" },
      handler: async (request) => {
        const states = await providerStates(runtime, request.caller!, Date.now());
        return {
          providers: states.map((state) => ({
            id: state.id,
            name: state.name,
            configured: state.configured,
            missing: state.missing,
            slots: state.slots.map((slot) => ({ pool: slot.pool, in_use: slot.inUse, capacity: slot.capacity, paused_until: slot.pausedUntil === null ? null : new Date(slot.pausedUntil).toISOString() })),
            rate_windows: state.rates.map((rate) => ({ key: rate.key, limit: rate.limit, window_ms: rate.windowMs, used: rate.used, left: Math.max(0, rate.limit - rate.used) })),
            halt: state.halt ? { code: state.halt.code, message: state.halt.message, at: new Date(state.halt.at).toISOString() } : null,
            recent_errors: state.errors.map((error) => ({ job_id: error.jobId, ref: error.ref, code: error.code, at: new Date(error.at).toISOString() })),
          })),
        };
      },
    },
    {
      method: "GET",
      path: "/v1/spend",
      summary: "Spend between from and to (default the last 30 days) by provider, model and token: settled (the ledger) beside estimated",
      query: {
        from: "start of the period: a day (YYYY-MM-DD, UTC), an ISO 8601 time or milliseconds since the epoch; default 30 days before to",
        to: "end of the period (default now): a day is included whole (from=D&to=D is day D), a time is not",
      },
      responses: { 200: "{from, to, lines, settled_micro_usd, estimated_micro_usd, unpriced_jobs}: estimates sum the priced jobs; unpriced ones are counted, never taken as free" },
      handler: async (request) => {
        const params = query(request);
        const { from, to } = spendPeriod(params.from, params.to, Date.now());
        return spendView(await spendOf(runtime, request.caller!, from, to), from, to);
      },
    },
  ];
}

/** Fastify's path form of an OpenAPI path: `/v1/jobs/{id}` → `/v1/jobs/:id`. */
function fastifyPath(path: string): string {
  return path.replace(/\{([a-z_]+)\}/g, ":$1");
}

/**
 * Registers the REST API (`/v1/…`, `/openapi.json`) on the server. Every
 * `/v1` route needs a caller: a bearer token when the store has any, else
 * the local user (the server then listens on loopback only). A read-only
 * token may only read. Errors have one shape (`ApiError`). `otherRoutes`
 * (the OpenAI shapes) are described in the same `/openapi.json`.
 */
export function registerApi(app: FastifyInstance, deps: ApiDeps, methods: RouteMethods, otherRoutes: readonly DescribedRoute[] = []): void {
  const table = routes(deps);
  const document = openApiDocument([...table, ...otherRoutes]);

  app.register(async (api) => {
    api.addHook("onRequest", async (request) => {
      request.caller = await callerOfRequest(deps.runtime, request);
    });
    for (const route of table) {
      api.route({
        method: route.method,
        ...(route.bodyLimit !== undefined ? { bodyLimit: route.bodyLimit } : {}),
        // Registered under the /v1 prefix.
        url: fastifyPath(route.path.slice("/v1".length)) || "/",
        handler: async (request: FastifyRequest, reply: FastifyReply) => {
          if (route.writes && request.caller!.readOnly) throw new ApiError("read_only_token", `token ${request.caller!.name} is read-only: it cannot ${route.method} ${route.path}`);
          return route.handler(request, reply);
        },
      });
    }
    api.setErrorHandler((error, request, reply) => {
      const known = apiErrorOf(error);
      if (known) return reply.code(known.status).send(known.body());
      const status = (error as { statusCode?: number }).statusCode;
      if (status === 413) return reply.code(413).send(new ApiError("payload_too_large", "the body is larger than the API takes").body());
      if (status !== undefined && status >= 400 && status < 500) {
        // Fastify refused the request before the handler ran (a content type it cannot read, a body it could not receive).
        const refused = new ApiError(frameworkErrorCode(status), `the request could not be read: ${(error as Error).message}`);
        return reply.code(refused.status).send(refused.body());
      }
      deps.log.error({ method: request.method, path: request.url.split("?")[0], caller: request.caller?.name ?? null, ...failureOf(error) }, "API request failed");
      return reply.code(500).send(new ApiError("internal_error", "the request could not be handled; it was logged").body());
    });
    api.setNotFoundHandler(
      (request, reply) =>
        methodNotAllowed(methods, request, reply) ?? reply.code(404).send(new ApiError("not_found", `no route ${request.method.slice(0, 20)} ${request.url.split("?")[0]!.slice(0, 80)}`).body()),
    );
  }, { prefix: "/v1" });

  app.get("/openapi.json", async () => document);
}

/** A header's one value (a repeated header is not one value: null, as if absent). */
function headerText(value: string | string[] | undefined): string | null {
  return typeof value === "string" ? value : null;
}

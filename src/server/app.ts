import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { PROVIDER_IDS, type WebhookDelivery } from "../providers/adapter.js";
import { WebhookRefusals } from "./refusals.js";
import { receiveWebhook, type WebhookIngressDeps, type WebhookRefusal } from "./webhooks.js";
import { registerApi, type ApiDeps } from "./api/index.js";
import { registerOpenAi } from "./openai/index.js";
import { registerDashboard } from "./dashboard/index.js";
import type { Engine } from "../engine/engine.js";
import { registerMetrics } from "./metrics.js";
import { registerReadiness } from "./readiness.js";
import { logApiRequests } from "./request-log.js";
import { answerClientError } from "./client-errors.js";
import { ApiError } from "./api/errors.js";
import { methodNotAllowed, RouteMethods } from "./route-methods.js";

/** Deliveries larger than this are refused before verification (no provider sends more). */
const MAX_WEBHOOK_BYTES = 1024 * 1024;

/** How long closing the server waits for the requests it is handling before it ends their connections. */
const CLOSE_GRACE_MS = 5_000;

export interface ServerOptions {
  /**
   * The engine this server runs: `/readyz` needs it running, `/metrics` times
   * its steps. Absent or null: none (`serve --no-engine`, the workers run
   * elsewhere), and `/readyz` checks the store only.
   */
  engine?: Engine | null;
  /** How long `/readyz` waits for the store (default READY_STORE_TIMEOUT_MS). */
  readyTimeoutMs?: number;
}

/** What the router refused before any route or hook ran. */
function answerFrameworkError(log: WebhookIngressDeps["log"], error: FastifyError, reply: FastifyReply): FastifyReply {
  const answer =
    error.code === "FST_ERR_MAX_PARAM_LENGTH"
      ? new ApiError("path_too_long", "a segment of the path is longer than 100 characters; no id or name is that long")
      : error.code === "FST_ERR_BAD_URL"
        ? new ApiError("invalid_path", "the path holds a percent-encoding that is not %XX escapes of UTF-8 bytes")
        : null;
  if (answer) return reply.code(answer.status).send(answer.body());
  log.error({ code: error.code, error: error.message }, "request failed before routing");
  return reply.code(500).send(new ApiError("internal_error", "the request could not be handled; it was logged").body());
}

/** A path segment that names its parent or itself: a client resolves these before sending (RFC 3986 §5.2.4). */
const DOT_SEGMENT = /(^|\/)(\.|%2e){1,2}(\/|$)/i;

/**
 * The HTTP server of `mediagate serve`. Webhook routes get the raw body as
 * bytes (signatures cover the exact bytes, so nothing is parsed first).
 * Every refused request (failed verification, no such route, too large,
 * unreadable) goes through WebhookRefusals: counted, bounded per source.
 * Every error is answered in one shape (error-body.ts): those Fastify and
 * Node would word themselves (a bad URL, headers too large, a request while
 * closing) included.
 */
export async function buildServer(deps: WebhookIngressDeps, api?: ApiDeps, options: ServerOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    bodyLimit: MAX_WEBHOOK_BYTES,
    clientErrorHandler: answerClientError,
    // Answered by the hook below, in the server's error shape.
    return503OnClosing: false,
    frameworkErrors: (error, _request, reply) => answerFrameworkError(deps.log, error, reply as FastifyReply),
  });
  const methods = RouteMethods.of(app);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  // Closing waits for the requests being handled, at most CLOSE_GRACE_MS, then ends every connection: one
  // opened but silent (a client that gave up while connecting) is not "idle" to Node's server and would
  // otherwise hold the close for its headers timeout, a minute.
  let forceClose: NodeJS.Timeout | undefined;
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
    forceClose = setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS);
    forceClose.unref();
  });
  app.addHook("onClose", async () => clearTimeout(forceClose));
  app.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0]!;
    const refused = closing
      ? new ApiError("shutting_down", "the server is stopping; send the request again (to another server, or once this one is back)")
      : DOT_SEGMENT.test(path)
        ? new ApiError("invalid_path", `the path ${path.slice(0, 80)} holds a . or .. segment; send the path it resolves to`)
        : null;
    if (refused) return reply.code(refused.status).send(refused.body());
  });
  // A request answered while the server closes ends its connection: one kept alive would hold the close until the grace ends.
  app.addHook("onSend", async (_request, reply) => {
    if (closing) reply.header("connection", "close");
  });
  app.addHook("onResponse", async (request) => {
    if (closing) request.raw.socket?.end();
  });

  // The store is read when a count is written, not now: `deps` may be completed after the server is built.
  const refusals = new WebhookRefusals({ countWebhookRejections: (counts) => deps.store.countWebhookRejections(counts) }, deps.log, () => deps.now());
  app.addHook("onClose", async () => refusals.flush());

  const metrics = await registerMetrics(app, deps, options.engine ?? null);
  registerReadiness(app, deps, { engine: options.engine ?? null, ...(options.readyTimeoutMs !== undefined ? { timeoutMs: options.readyTimeoutMs } : {}) });
  logApiRequests(app, deps.log);

  const refuse = (request: FastifyRequest, reply: FastifyReply, refusal: WebhookRefusal, jobId: string | null) => {
    const answer = refusals.refuse(request.ip, refusal, jobId);
    metrics.webhookDelivery(refusal.provider, answer.body.outcome);
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  };

  const handle = async (request: FastifyRequest, reply: FastifyReply, provider: string, jobId: string | null) => {
    const delivery: WebhookDelivery = {
      rawBody: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
      headers: Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value.join(", ") : value])),
      jobId,
    };
    const answer = await receiveWebhook(deps, provider, delivery);
    if (answer.kind === "refused") return refuse(request, reply, answer.refusal, jobId);
    metrics.webhookDelivery(provider, answer.body.outcome);
    return reply.code(answer.status).send(answer.body);
  };

  app.post<{ Params: { provider: string } }>("/webhooks/:provider", async (request, reply) => handle(request, reply, request.params.provider, null));
  app.post<{ Params: { provider: string; jobId: string } }>("/webhooks/:provider/:jobId", async (request, reply) =>
    handle(request, reply, request.params.provider, request.params.jobId),
  );
  app.get("/healthz", async () => ({ ok: true }));
  if (api) registerApi(app, api, methods, registerOpenAi(app, api));
  if (api) registerDashboard(app, { ...api, engine: deps.engine });

  // A request to no route at all is refused like a webhook request to none: counted, bounded per source (anyone may send one).
  app.setNotFoundHandler(
    (request, reply) =>
      methodNotAllowed(methods, request, reply) ??
      refuse(request, reply, { status: 404, provider: "unknown", code: "unknown_route", reason: `no route for ${request.method.slice(0, 20)} ${request.url.split("?")[0]!.slice(0, 80)}` }, null),
  );
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) return reply.code(error.status).send(error.body());
    const status = error.statusCode ?? 500;
    if (status < 400 || status >= 500) {
      deps.log.error({ code: error.code, error: error.message, url: request.url.split("?")[0] }, "request failed");
      return reply.code(500).send(new ApiError("internal_error", "the request could not be handled; it was logged").body());
    }
    // Fastify refused it before the handler ran: a body over the limit (413), an unreadable request (400, 415).
    const params = (request.params ?? {}) as { provider?: string; jobId?: string };
    const provider = PROVIDER_IDS.find((id) => id === params.provider) ?? "unknown";
    const refusal: WebhookRefusal =
      status === 413
        ? { status, provider, code: "too_large", reason: `a delivery may be at most ${MAX_WEBHOOK_BYTES} bytes` }
        : { status, provider, code: "unreadable_request", reason: `the request could not be read (${error.code ?? `HTTP ${status}`})` };
    return refuse(request, reply, refusal, params.jobId ?? null);
  });
  return app;
}

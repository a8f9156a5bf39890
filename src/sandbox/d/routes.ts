import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DApiError } from "./errors.js";
import type { DResults } from "./results.js";
import { D_POLLING_PATH, type DService } from "./service.js";

function sendError(error: FastifyError | DApiError, reply: FastifyReply): FastifyReply {
  if (error instanceof DApiError) return reply.code(error.httpStatus).send(error.body());
  const statusCode = error.statusCode ?? 500;
  if (statusCode === 415) return reply.code(415).send({ code: "unsupported_media_type", message: error.message });
  // Fastify's own body refusals (unparsable or empty JSON) are validation errors of the body as a whole.
  if (statusCode < 500) return reply.code(422).send(new DApiError(422, "invalid_field", `body: ${error.message}`, "body").body());
  return reply.code(statusCode).send({ code: "internal_error", message: error.message });
}

/** Every D route answers errors in one shape (errors.ts) and unknown paths with a JSON 404. */
function commonHandlers(app: FastifyInstance): void {
  app.setErrorHandler(async (error: FastifyError | DApiError, _request, reply) => sendError(error, reply));
  app.setNotFoundHandler(async (request, reply) => sendError(new DApiError(404, "not_found", `no route ${request.method} ${request.url}`), reply));
}

/**
 * spec D Authentication 1: x-key on every call, submit and poll alike;
 * checked before the body is read. Returns the key each request carried.
 */
function requireKey(app: FastifyInstance, service: DService): (request: FastifyRequest) => string {
  const keys = new WeakMap<FastifyRequest, string>();
  app.addHook("onRequest", async (request: FastifyRequest) => {
    keys.set(request, service.authenticate(request.headers));
  });
  return (request) => keys.get(request) ?? service.authenticate(request.headers);
}

/** `POST /d/v1/{endpoint}`, to be registered under the `/d` prefix. */
export function registerSubmitRoutes(app: FastifyInstance, service: DService): void {
  const keyOf = requireKey(app, service);
  app.post<{ Params: { endpoint: string } }>(
    "/v1/:endpoint",
    {
      // Counted once the key is accepted and before the body is read, so a body that fails to parse counts too.
      onRequest: async () => {
        service.submitCount += 1;
      },
    },
    async (request) => service.submit(keyOf(request), request.params.endpoint, request.body),
  );
  commonHandlers(app);
}

/** `GET /d-poll/v1/get_result?id=…`, to be registered under the `/d-poll` prefix. */
export function registerPollingRoutes(app: FastifyInstance, service: DService): void {
  requireKey(app, service);
  app.get<{ Querystring: { id?: string } }>(D_POLLING_PATH, async (request) => {
    // The polling URL names the other host: a poll that arrives through the submit host was not used as given.
    if (service.options.pollingHostCheck && request.hostname !== service.pollingHostname()) {
      throw new DApiError(404, "not_found", `no route GET ${request.url} on this host`);
    }
    return service.poll(typeof request.query.id === "string" ? request.query.id : "");
  });
  commonHandlers(app);
}

/** `GET /d-results/{id}.png?expires=…&sig=…`, to be registered under the `/d-results` prefix. */
export function registerResultRoutes(app: FastifyInstance, results: DResults): void {
  results.register(app);
  commonHandlers(app);
}

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { BApiError } from "./errors.js";
import { B_FILES_PATH, type BAnswer, type BService } from "./service.js";

export const B_PREFIX = "/b";
const MEDIA_PREFIX = `${B_PREFIX}/v1/media/`;
const CATALOG_PREFIX = `${B_PREFIX}/catalog/apis/`;

function send(reply: FastifyReply, answer: BAnswer): FastifyReply {
  reply.code(answer.httpStatus);
  for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
  return answer.body === undefined ? reply.send() : reply.send(answer.body);
}

function sendError(error: FastifyError | BApiError, reply: FastifyReply): FastifyReply {
  if (error instanceof BApiError) return reply.code(error.httpStatus).send(error.body());
  const statusCode = error.statusCode ?? 500;
  if (statusCode === 415) return reply.code(415).send(new BApiError(415, "unsupported_media_type", error.message).body());
  // Fastify's own body refusals (unparsable or empty JSON): nothing is created.
  if (statusCode < 500) return reply.code(400).send(new BApiError(400, "invalid_json", `body: ${error.message}`).body());
  return reply.code(statusCode).send({ error: { code: "internal_error", message: error.message } });
}

/** The part of the raw path after `prefix`, without the query: slashes and escapes as the client sent them. */
function rawRest(request: FastifyRequest, prefix: string): string {
  const path = request.url.split("?")[0] ?? "";
  return path.startsWith(prefix) ? path.slice(prefix.length) : "";
}

/**
 * Every B route, to be registered under the `/b` prefix. Key-protected
 * routes check the key in `onRequest`, before the body is read, so a bad
 * key is 401 whatever the body.
 */
export function registerBRoutes(app: FastifyInstance, service: BService): void {
  const keys = new WeakMap<FastifyRequest, string>();
  const requireKey = async (request: FastifyRequest): Promise<void> => {
    keys.set(request, service.authenticate(request.headers));
  };
  const keyOf = (request: FastifyRequest): string => keys.get(request) ?? service.authenticate(request.headers);

  // Due webhook attempts run before anything is answered, so a clock.advance() shows at once.
  app.addHook("onRequest", async () => service.timers?.runDue());
  app.setErrorHandler(async (error: FastifyError | BApiError, _request, reply) => sendError(error, reply));
  app.setNotFoundHandler(async (request, reply) => sendError(new BApiError(404, "not_found", `no route ${request.method} ${request.url}`), reply));

  // Catalog: no key (spec B Endpoints, Authentication 4).
  app.get("/catalog/apis", async (_request, reply) => send(reply, service.catalogList()));
  app.get<{ Querystring: { expand?: string } }>("/catalog/apis/*", async (request, reply) =>
    send(reply, service.catalogRecord(rawRest(request, CATALOG_PREFIX), request.query.expand)),
  );
  app.post("/catalog/apis/*", async (request, reply) => {
    const rest = rawRest(request, CATALOG_PREFIX);
    if (!rest.endsWith("/quote")) throw new BApiError(404, "not_found", `no route POST ${request.url}`);
    return send(reply, service.quote(rest.slice(0, -"/quote".length), request.body));
  });

  // Jobs.
  app.get<{ Params: { id: string } }>("/v1/media/jobs/:id", { onRequest: requireKey }, async (request, reply) => send(reply, service.read(request.params.id)));
  app.get<{ Params: { id: string } }>("/v1/media/jobs/:id/content", { onRequest: requireKey }, async (request, reply) =>
    send(reply, service.content(request.params.id)),
  );
  app.delete<{ Params: { id: string } }>("/v1/media/jobs/:id", { onRequest: requireKey }, async (request, reply) =>
    send(reply, service.remove(request.params.id)),
  );
  app.post(
    "/v1/media/*",
    {
      onRequest: async (request) => {
        await requireKey(request);
        service.submitCount += 1;
      },
    },
    async (request, reply) => send(reply, service.submit(keyOf(request), rawRest(request, MEDIA_PREFIX), request.headers, request.body)),
  );

  // Billing.
  app.get("/billing/balance", { onRequest: requireKey }, async (_request, reply) => send(reply, service.balance()));
  app.get<{ Querystring: { start_date?: string; end_date?: string } }>("/billing/spend/daily", { onRequest: requireKey }, async (request, reply) =>
    send(reply, service.spend(request.query)),
  );

  // Result files: the signature is the credential.
  app.get<{ Params: { id: string; name: string }; Querystring: { expires?: string; sig?: string } }>(
    `${B_FILES_PATH.slice(B_PREFIX.length)}/:id/:name`,
    async (request, reply) => {
      const file = service.file(request.params.id, request.params.name, request.query);
      return reply.code(200).header("content-type", file.contentType).header("content-length", String(file.bytes.length)).send(file.bytes);
    },
  );
}

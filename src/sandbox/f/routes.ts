import multipart from "@fastify/multipart";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { FApiError, invalidRequest } from "./errors.js";
import type { FService } from "./service.js";

/** Sandbox limits on the form (not shown by the spec): 1 MB a field or file part, 32 parts. */
const FORM_LIMITS = { fieldSize: 1024 * 1024, fileSize: 1024 * 1024, fields: 32, files: 8, parts: 32 };

function sendError(error: FastifyError | FApiError, reply: FastifyReply): FastifyReply {
  if (error instanceof FApiError) return reply.code(error.statusCode).send(error.body());
  // Fastify's and @fastify/multipart's own refusals: unsupported type (415), over a limit (413), malformed (400).
  const statusCode = error.statusCode ?? 500;
  if (statusCode === 415) return reply.code(415).send(new FApiError(415, "unsupported_media_type", error.message).body());
  if (statusCode === 413) return reply.code(413).send(new FApiError(413, "payload_too_large", error.message).body());
  if (statusCode < 500) return reply.code(statusCode).send(new FApiError(statusCode, "invalid_request", error.message, "body").body());
  return reply.code(statusCode).send(new FApiError(statusCode, "internal_error", error.message).body());
}

/** The multipart form's parts as text (a file part, e.g. json_prompt sent as a Blob, read as UTF-8). A repeated field is refused. */
async function formFields(request: FastifyRequest): Promise<Map<string, string>> {
  // spec F request: "multipart form"; any other body is 415.
  if (!request.isMultipart()) throw new FApiError(415, "unsupported_media_type", "the request must be multipart/form-data");
  const fields = new Map<string, string>();
  for await (const part of request.parts()) {
    const value = part.type === "file" ? (await part.toBuffer()).toString("utf8") : String(part.value);
    if (fields.has(part.fieldname)) throw invalidRequest(part.fieldname, "is given more than once");
    fields.set(part.fieldname, value);
  }
  return fields;
}

/**
 * Routes of service F, to be registered under the `/f` prefix. @fastify/multipart
 * is registered here, inside F's own plugin scope, so it parses F's forms only.
 */
export async function registerFRoutes(app: FastifyInstance, service: FService): Promise<void> {
  await app.register(multipart, { limits: FORM_LIMITS, throwFileSizeLimit: true });
  app.setErrorHandler(async (error: FastifyError | FApiError, _request, reply) => sendError(error, reply));
  app.setNotFoundHandler(async (request, reply) =>
    sendError(new FApiError(404, "not_found", `no route ${request.method} ${request.url.split("?")[0]}`), reply),
  );

  const accounts = new WeakMap<FastifyRequest, string>();
  // Checked before the body is read, so a bad key is 401 whatever the body.
  const authenticate = async (request: FastifyRequest) => {
    accounts.set(request, service.authenticate(request.headers));
  };
  const accountOf = (request: FastifyRequest): string => {
    const account = accounts.get(request);
    if (account === undefined) throw new FApiError(401, "unauthorized", "not authenticated");
    return account;
  };

  app.post<{ Params: { model: string }; Querystring: { webhook_url?: string | string[] } }>(
    "/v1/:model/async/generate",
    { onRequest: authenticate },
    async (request) => {
      service.requireModel(request.params.model);
      const fields = await formFields(request);
      return service.create(accountOf(request), request.params.model, request.query.webhook_url, fields);
    },
  );

  app.get<{ Params: { id: string } }>("/v1/generations/:id", { onRequest: authenticate }, async (request, reply) => {
    const answer = service.read(accountOf(request), request.params.id);
    if (Buffer.isBuffer(answer)) return reply.header("content-type", "application/json; charset=utf-8").send(answer);
    return answer;
  });

  // spec F Events 3: the key set. Public keys only, so the sandbox serves it without Api-Key.
  app.get("/v1/.well-known/jwks.json", async () => service.keys.jwks());

  service.results.register(app);
}

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { EApiError } from "./errors.js";
import { E_OPERATIONS } from "./operations.js";
import { mediaType, type ERequestKind, type ERequestRecord, type EService } from "./service.js";
import { ETokenError } from "./tokens.js";
import { E_UPLOAD_CONTENT_TYPES, E_UPLOAD_MAX_BYTES, type EUploadContentType } from "./uploads.js";

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function sendError(error: FastifyError | EApiError | ETokenError, reply: FastifyReply): FastifyReply {
  if (error instanceof EApiError) {
    for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
    return reply.code(error.statusCode).send(error.body());
  }
  if (error instanceof ETokenError) return reply.code(error.statusCode).send(error.body());
  // Fastify's own refusals: a body that is not JSON (415), unparsable JSON (400), too large (413).
  const statusCode = error.statusCode ?? 500;
  if (statusCode === 415) return reply.code(415).send(new EApiError(415, "unsupported_media_type", error.message).body());
  if (statusCode < 500) return reply.code(statusCode).send(new EApiError(statusCode, "validation_error", `body: ${error.message}`, "body").body());
  return reply.code(statusCode).send(new EApiError(statusCode, "internal_error", error.message).body());
}

/**
 * Shared by every E scope: each request is recorded with its virtual time and
 * kind, and its answer's status; errors have one shape; unknown paths are a JSON 404.
 */
function recordAndAnswer(
  app: FastifyInstance,
  service: EService,
  scopeKind: ERequestKind,
): (request: FastifyRequest) => ERequestRecord {
  const entries = new WeakMap<FastifyRequest, ERequestRecord>();
  const entryOf = (request: FastifyRequest): ERequestRecord => {
    let entry = entries.get(request);
    if (!entry) {
      const path = request.url.split("?")[0] ?? "";
      entry = service.record(request.method, path, scopeKind, single(request.headers["content-type"]));
      entries.set(request, entry);
    }
    return entry;
  };
  app.addHook("onRequest", async (request) => {
    entryOf(request);
  });
  app.addHook("onResponse", async (request, reply) => {
    entryOf(request).statusCode = reply.statusCode;
  });
  app.setErrorHandler(async (error: FastifyError | EApiError | ETokenError, _request, reply) => sendError(error, reply));
  app.setNotFoundHandler(async (request, reply) =>
    sendError(new EApiError(404, "not_found", `no route ${request.method} ${request.url.split("?")[0]}`), reply),
  );
  return entryOf;
}

/** Authentication and quota (service.admit) before the body is read; the client id is kept for the handler. */
function admission(service: EService, entryOf: (request: FastifyRequest) => ERequestRecord) {
  /** Names the kind of request a route serves in its record (an onRequest hook placed first). */
  const kind = (requestKind: ERequestKind) => async (request: FastifyRequest) => {
    entryOf(request).kind = requestKind;
  };
  const clients = new WeakMap<FastifyRequest, string>();
  const admit = async (request: FastifyRequest) => {
    clients.set(request, service.admit(request.headers, entryOf(request)));
  };
  const clientOf = (request: FastifyRequest): string => {
    const clientId = clients.get(request);
    if (clientId === undefined) throw new EApiError(401, "invalid_api_key", "not authenticated");
    return clientId;
  };
  return { kind, admit, clientOf };
}

const FORM = "application/x-www-form-urlencoded";

/** `POST /e-auth/ims/token/v3`, under the `/e-auth` prefix. It does not count against the quota. */
export function registerETokenRoutes(app: FastifyInstance, service: EService): void {
  recordAndAnswer(app, service, "token");
  app.addContentTypeParser(FORM, { parseAs: "string" }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(typeof body === "string" ? body : body.toString("utf8"))));
  });
  app.post<{ Body: Record<string, string> }>(
    "/ims/token/v3",
    {
      // spec E token request: "form-encoded POST"; anything else is refused before the body is read.
      onRequest: async (request) => {
        if (mediaType(single(request.headers["content-type"])) !== FORM) {
          throw new ETokenError(400, "invalid_request", `the body must be ${FORM}`);
        }
      },
    },
    async (request) => service.tokens.issue(request.body ?? {}),
  );
}

/** Submit and upload routes, under the `/e` prefix (client base `{sandbox}/e`). */
export function registerEApiRoutes(app: FastifyInstance, service: EService): void {
  const entryOf = recordAndAnswer(app, service, "unknown");
  const { kind, admit, clientOf } = admission(service, entryOf);
  app.addContentTypeParser([...E_UPLOAD_CONTENT_TYPES], { parseAs: "buffer", bodyLimit: E_UPLOAD_MAX_BYTES }, (_request, body, done) => {
    done(null, body);
  });

  // spec E Authentication 2: "Submit also carries Content-Type: application/json"; other types are 415.
  const requireJson = async (request: FastifyRequest) => {
    const type = mediaType(single(request.headers["content-type"]));
    if (type !== "application/json") {
      throw new EApiError(415, "unsupported_media_type", `submit needs Content-Type: application/json, got ${type ?? "none"}`);
    }
  };
  for (const operation of E_OPERATIONS) {
    app.post(
      operation.path,
      { onRequest: [kind("submit"), admit, requireJson] },
      async (request, reply) => reply.code(202).send(service.submit(clientOf(request), operation, request.body)),
    );
  }

  const requireImage = async (request: FastifyRequest) => {
    const type = mediaType(single(request.headers["content-type"]));
    if (!E_UPLOAD_CONTENT_TYPES.includes(type as EUploadContentType)) {
      throw new EApiError(415, "unsupported_media_type", `upload needs Content-Type ${E_UPLOAD_CONTENT_TYPES.join(", ")}`);
    }
  };
  app.post(
    "/v2/storage/image",
    { onRequest: [kind("upload"), admit, requireImage] },
    async (request) => {
      const type = mediaType(single(request.headers["content-type"])) as EUploadContentType;
      return service.upload(clientOf(request), type, request.body);
    },
  );
}

/** Status and cancel routes of the tenant-specific status host, under the `/e-status` prefix. */
export function registerEStatusRoutes(app: FastifyInstance, service: EService): void {
  const entryOf = recordAndAnswer(app, service, "unknown");
  const { kind, admit, clientOf } = admission(service, entryOf);
  // A status or cancel request's body, if any, is ignored (a stray Content-Type must not make a poll fail).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, _body, done) => done(null, undefined));
  // spec E Endpoints: "never build [the statusUrl] from the submit host": arriving on the submit host is 404.
  const requireStatusHost = async (request: FastifyRequest) => {
    if (service.options.statusHostCheck && request.hostname !== service.statusHostname()) {
      throw new EApiError(404, "not_found", `no route ${request.method} ${request.url.split("?")[0]} on this host`);
    }
  };
  type JobParams = { Params: { tenant: string; id: string } };

  app.get<JobParams>(
    "/:tenant/v3/status/:id",
    { onRequest: [kind("status"), requireStatusHost, admit] },
    async (request) => {
      const job = service.jobFor(clientOf(request), request.params.tenant, request.params.id);
      // spec E Endpoints: a poll should carry no Content-Type; it is accepted and recorded for tests to assert on.
      return service.status(job, single(request.headers["content-type"]));
    },
  );
  app.route<JobParams>({
    // spec E: the HTTP method of cancel is not shown; PUT and DELETE are both accepted.
    method: ["PUT", "DELETE"],
    url: "/:tenant/v3/cancel/:id",
    onRequest: [kind("cancel"), requireStatusHost, admit],
    handler: async (request) => service.cancel(service.jobFor(clientOf(request), request.params.tenant, request.params.id)),
  });
}

/** Signed result links, under `/e-files`. */
export function registerEFileRoutes(app: FastifyInstance, service: EService): void {
  recordAndAnswer(app, service, "image");
  service.results.register(app);
}

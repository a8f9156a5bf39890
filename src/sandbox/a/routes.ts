import type { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import type { AAccount, APlan } from "./accounts.js";
import { AApiError } from "./errors.js";
import type { AService } from "./service.js";

/** spec A Endpoints: the standard base path and the enterprise plan's, each with the same two paths. */
const BASE_PATHS: Record<APlan, string> = { standard: "/api/v3", enterprise: "/api/plan/v3" };

function registerTaskRoutes(app: FastifyInstance, service: AService, plan: APlan): void {
  const tasksPath = `${BASE_PATHS[plan]}/contents/generations/tasks`;
  // Authenticate before the body is parsed, so a bad key is a 401 whatever the body, and each request is counted once.
  const accounts = new WeakMap<FastifyRequest, AAccount>();
  const onRequest = async (request: FastifyRequest) => {
    accounts.set(request, service.admit(request.headers.authorization, plan));
  };
  const accountOf = (request: FastifyRequest): AAccount => {
    const account = accounts.get(request);
    if (!account) throw new AApiError(401, "AuthenticationError", "not authenticated");
    return account;
  };
  app.post(tasksPath, { onRequest }, async (request) => {
    const task = service.create(accountOf(request), request.body);
    return { id: task.id };
  });
  app.get<{ Params: { id: string } }>(`${tasksPath}/:id`, { onRequest }, async (request) => {
    return service.read(accountOf(request), request.params.id);
  });
}

/** Routes of service A, to be registered under the `/a` prefix. */
export function registerARoutes(app: FastifyInstance, service: AService): void {
  registerTaskRoutes(app, service, "standard");
  registerTaskRoutes(app, service, "enterprise");
  service.results.register(app);

  app.setNotFoundHandler(async (request, reply) => {
    // spec A Versioning: /api/v3/ is the API version; no /v1/ or /v2/ scheme exists.
    const path = request.url.split("?")[0] ?? "";
    const message = /\/v[12](\/|$)/.test(path) ? "no such API version (the API is /api/v3)" : "no such route";
    return reply.code(404).send(new AApiError(404, "NotFound", message).body());
  });

  app.setErrorHandler(async (error: FastifyError | AApiError, _request, reply) => {
    if (error instanceof AApiError) {
      for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
      return reply.code(error.statusCode).send(error.body());
    }
    // Fastify's own refusals: unparsable JSON (400), a body that is not JSON (415), too large (413).
    const statusCode = error.statusCode ?? 500;
    const code = statusCode === 415 ? "UnsupportedMediaType" : statusCode < 500 ? "InvalidParameter" : "InternalError";
    const param = statusCode < 500 ? "body" : undefined;
    return reply.code(statusCode).send(new AApiError(statusCode, code, error.message, param).body());
  });
}

import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import { C_ERR, CApiError, success, type CEnvelope } from "./envelope.js";
import type { CService } from "./service.js";

/** Routes of service C, to be registered under the `/c` prefix. */
export function registerCRoutes(app: FastifyInstance, service: CService): void {
  const send = (reply: FastifyReply, envelope: CEnvelope, httpStatus = 200) => {
    service.countErrCode(envelope.ErrCode);
    return reply.code(httpStatus).send(envelope);
  };

  app.post("/openapi/v2/video/text/generate", async (request, reply) => {
    service.submitCount += 1;
    const account = service.authenticate(request.headers);
    const task = service.submit(account, request.body);
    return send(reply, success({ video_id: task.videoId }));
  });

  app.get<{ Params: { videoId: string } }>("/openapi/v2/video/result/:videoId", async (request, reply) => {
    const account = service.authenticate(request.headers);
    return send(reply, success(service.result(account, request.params.videoId)));
  });

  service.results.register(app);

  app.setNotFoundHandler(async (_request, reply) => reply.code(404).send({ error: "no such route" }));

  app.setErrorHandler(async (error: FastifyError | CApiError, _request, reply) => {
    if (error instanceof CApiError) return send(reply, error.envelope(), error.httpStatus(service.options.errorHttpStatus));
    // Fastify's own refusals (unparsable JSON, a body that is not JSON) are parameter errors in the envelope.
    const statusCode = error.statusCode ?? 500;
    const envelope = new CApiError(C_ERR.invalidParameter, `body: ${error.message}`);
    if (statusCode < 500) return send(reply, envelope.envelope(), envelope.httpStatus(service.options.errorHttpStatus));
    return send(reply, { ErrCode: statusCode, ErrMsg: error.message, Resp: {} }, statusCode);
  });
}

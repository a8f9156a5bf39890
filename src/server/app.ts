import Fastify, { type FastifyInstance } from "fastify";
import type { WebhookDelivery } from "../providers/adapter.js";
import { receiveWebhook, type WebhookIngressDeps } from "./webhooks.js";

/** Deliveries larger than this are refused before verification (no provider sends more). */
const MAX_WEBHOOK_BYTES = 1024 * 1024;

/**
 * The HTTP server of `mediagate serve`. Webhook routes get the raw body as
 * bytes (signatures cover the exact bytes, so nothing is parsed first).
 */
export async function buildServer(deps: WebhookIngressDeps): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: MAX_WEBHOOK_BYTES });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  const handle = async (provider: string, jobId: string | null, body: unknown, headers: Record<string, string | string[] | undefined>) => {
    const delivery: WebhookDelivery = {
      rawBody: Buffer.isBuffer(body) ? body : Buffer.alloc(0),
      headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value.join(", ") : value])),
      jobId,
    };
    return receiveWebhook(deps, provider, delivery);
  };

  app.post<{ Params: { provider: string } }>("/webhooks/:provider", async (request, reply) => {
    const answer = await handle(request.params.provider, null, request.body, request.headers);
    return reply.code(answer.status).send(answer.body);
  });
  app.post<{ Params: { provider: string; jobId: string } }>("/webhooks/:provider/:jobId", async (request, reply) => {
    const answer = await handle(request.params.provider, request.params.jobId, request.body, request.headers);
    return reply.code(answer.status).send(answer.body);
  });
  app.get("/healthz", async () => ({ ok: true }));
  return app;
}

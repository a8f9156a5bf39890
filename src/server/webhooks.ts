import type { Job } from "../core/job.js";
import type { Engine } from "../engine/engine.js";
import type { EngineLogger } from "../engine/logger.js";
import { PROVIDER_IDS, type ProviderId, type WebhookDelivery } from "../providers/adapter.js";
import type { ProviderEntry } from "../providers/registry.js";
import type { Store } from "../store/store.js";

export interface WebhookIngressDeps {
  store: Store;
  engine: Engine;
  providers: Map<ProviderId, ProviderEntry>;
  log: EngineLogger;
  now: () => number;
}

export interface WebhookAnswer {
  status: number;
  body: { outcome: "applied" | "duplicate" | "unmatched" | "rejected" | "unknown_provider"; reason?: string; job_id?: string };
}

/**
 * One webhook delivery, from raw bytes to effect: verified by the provider's
 * adapter before anything is parsed, recorded, de-duplicated by its delivery
 * id, matched to a job, and then only a nudge to the engine (with the status
 * when the delivery is signed). A bad delivery answers 4xx and changes
 * nothing; a verified one for no job of ours answers 2xx so it is not retried.
 */
export async function receiveWebhook(
  deps: WebhookIngressDeps,
  providerName: string,
  delivery: WebhookDelivery,
): Promise<WebhookAnswer> {
  const provider = PROVIDER_IDS.find((id) => id === providerName);
  const adapter = provider ? deps.providers.get(provider)?.adapter : undefined;
  if (!provider || !adapter?.webhooks) {
    return { status: 404, body: { outcome: "unknown_provider", reason: `no webhook route for provider "${providerName}"` } };
  }
  const context = await deps.engine.providerContext(provider);
  const verdict = await adapter.webhooks.verify(delivery, context);
  if (verdict.kind === "rejected") {
    await deps.store.recordDelivery({ provider, deliveryId: null, jobId: delivery.jobId, outcome: "rejected", reason: verdict.reason, at: deps.now() });
    deps.log.warn({ provider, jobId: delivery.jobId, reason: verdict.reason }, "webhook delivery refused");
    return { status: 401, body: { outcome: "rejected", reason: verdict.reason } };
  }

  const job = await matchJob(deps.store, provider, delivery.jobId, verdict.providerJobId);
  const outcome = job ? "applied" : "unmatched";
  const reason = job ? `for ${job.id} (${job.state})` : `no job of ours has provider job id ${verdict.providerJobId ?? "(none)"} / job id ${delivery.jobId ?? "(none)"}`;
  const recorded = await deps.store.recordDelivery({ provider, deliveryId: verdict.deliveryId, jobId: job?.id ?? null, outcome, reason, at: deps.now() });
  if (recorded === "duplicate") return { status: 200, body: { outcome: "duplicate", ...(job ? { job_id: job.id } : {}) } };
  if (!job) return { status: 202, body: { outcome: "unmatched", reason } };
  await deps.engine.nudge(job, verdict.status);
  return { status: 200, body: { outcome: "applied", job_id: job.id } };
}

/** The route's job id wins, but must agree with the provider job id when the delivery names one. */
async function matchJob(store: Store, provider: ProviderId, jobId: string | null, providerJobId: string | null): Promise<Job | null> {
  if (jobId) {
    const job = await store.getJob(jobId);
    if (!job || job.provider !== provider) return null;
    if (providerJobId && job.providerJobId && job.providerJobId !== providerJobId) return null;
    return job;
  }
  return providerJobId ? store.jobByProviderJobId(provider, providerJobId) : null;
}

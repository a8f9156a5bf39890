import type { Job } from "../core/job.js";
import { redactDeep, redactSecrets } from "../core/redact.js";
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

/** A delivery refused before it could change anything; counted, not stored (see WebhookRefusals). */
export interface WebhookRefusal {
  /** A 4xx: 401 failed verification, 404 no such route, 413 too large, 400 or 415 unreadable. */
  status: number;
  /** One of our provider ids, or `unknown` when the route named none. */
  provider: string;
  /** A stable code from a fixed set: counters are keyed by it. */
  code: string;
  reason: string;
}

export type WebhookAnswer =
  | { kind: "answered"; status: number; body: { outcome: "applied" | "duplicate" | "unmatched"; reason?: string; job_id?: string } }
  | { kind: "refused"; refusal: WebhookRefusal };

/**
 * One webhook delivery, from raw bytes to effect: verified by the provider's
 * adapter before anything is parsed, recorded, de-duplicated by its delivery
 * id, matched to a job, and then only a nudge to the engine (with the status
 * when the delivery is signed). A bad delivery is refused and changes
 * nothing (the caller counts it); a verified one for no job of ours answers
 * 2xx so it is not retried.
 */
export async function receiveWebhook(
  deps: WebhookIngressDeps,
  providerName: string,
  delivery: WebhookDelivery,
): Promise<WebhookAnswer> {
  const startedAt = deps.now();
  const provider = PROVIDER_IDS.find((id) => id === providerName);
  const adapter = provider ? deps.providers.get(provider)?.adapter : undefined;
  if (!provider || !adapter?.webhooks) {
    return { kind: "refused", refusal: { status: 404, provider: provider ?? "unknown", code: "no_webhook_route", reason: `no webhook route for provider "${providerName.slice(0, 40)}"` } };
  }
  const context = await deps.engine.providerContext(provider);
  const verdict = await adapter.webhooks.verify(delivery, context);
  if (verdict.kind === "rejected") return { kind: "refused", refusal: { status: 401, provider, code: verdict.code, reason: verdict.reason } };

  const job = await matchJob(deps.store, provider, delivery.jobId, verdict.providerJobId);
  const outcome = job ? "applied" : "unmatched";
  const reason = job ? `for ${job.id} (${job.state})` : `no job of ours has provider job id ${verdict.providerJobId ?? "(none)"} / job id ${delivery.jobId ?? "(none)"}`;
  const recorded = await deps.store.recordDelivery({ provider, deliveryId: verdict.deliveryId, jobId: job?.id ?? null, outcome, reason, at: deps.now() });
  if (recorded === "duplicate") {
    return job ? traced(deps, job, delivery, startedAt, { kind: "answered", status: 200, body: { outcome: "duplicate", job_id: job.id } }) : { kind: "answered", status: 200, body: { outcome: "duplicate" } };
  }
  if (!job) return { kind: "answered", status: 202, body: { outcome: "unmatched", reason } };
  // A verified status is kept like a polled one (error detail, event log): without any secret it quotes.
  const secrets = deps.engine.secrets();
  await deps.engine.nudge(job, verdict.status && redactDeep(verdict.status, (text) => redactSecrets(text, secrets)));
  return traced(deps, job, delivery, startedAt, { kind: "answered", status: 200, body: { outcome: "applied", job_id: job.id } });
}

/** A delivery about a traced job is a span under the job's (traces exported); the answer is passed through. */
function traced(deps: WebhookIngressDeps, job: Job, delivery: WebhookDelivery, startedAt: number, answer: WebhookAnswer & { kind: "answered" }): WebhookAnswer {
  const tracer = deps.engine.tracer;
  if (tracer && job.trace) {
    tracer.webhookReceived(
      { id: job.id, provider: job.provider, trace: job.trace },
      { method: "POST", host: delivery.headers.host ?? null, path: `/webhooks/${job.provider}${delivery.jobId ? `/${encodeURIComponent(delivery.jobId)}` : ""}`, status: answer.status, outcome: answer.body.outcome, startedAt, endedAt: deps.now() },
    );
  }
  return answer;
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

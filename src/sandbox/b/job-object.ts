import { billingStateAt, chargeMicroUsd, isFinishedAt, statusAt, type BJobRecord } from "./jobs.js";
import { usageOf } from "./media.js";

/** Where the output of a completed job is served (a signed address). */
export type OutputUrl = (job: BJobRecord) => string;

function isoAt(virtualMs: number): string {
  return new Date(virtualMs).toISOString();
}

/**
 * The spec B job object. Fields the spec names: `id`, `status`, `output`
 * (completed only: `media_type` and `video: { url }` or `audio: { url }`),
 * `error` (failed only: `code`, `message`), `usage`, `billing` (`state`,
 * `charge_micro_usd`; null on the submit answer, on webhooks and while the
 * job is not finished). The full list is not shown; the sandbox adds
 * `api_id`, `created_at`, `finished_at` (null until finished) and, after a
 * DELETE, `deleted_at`. `charge_micro_usd` is an integer in every billing
 * state but final only when `settled`: it reads 0 while `pending` or
 * `unavailable`, so a client that records spend before `settled` records a
 * wrong amount (spec B Billing state: record spend only when settled).
 */
export function jobObject(job: BJobRecord, now: number, outputUrl: OutputUrl, withBilling: boolean): Record<string, unknown> {
  const status = statusAt(job, now);
  const finished = isFinishedAt(job, now);
  const object: Record<string, unknown> = {
    id: job.id,
    api_id: job.operation.apiId,
    status,
    created_at: isoAt(job.createdAt),
    finished_at: finished ? isoAt(job.finishesAt) : null,
  };
  if (status === "completed") {
    const mediaType = job.operation.outputMediaType;
    const contentType = mediaType === "audio" ? "audio/wav" : "video/mp4";
    object.output = { media_type: mediaType, [mediaType]: { url: outputUrl(job), content_type: contentType } };
  }
  if (status === "failed" && job.outcome.kind === "failed") object.error = { ...job.outcome.error };
  object.usage = status === "completed" ? usageOf(job) : {};
  object.billing = withBilling ? billingObject(job, now) : null;
  if (job.deletedAt !== null) object.deleted_at = isoAt(job.deletedAt);
  return object;
}

function billingObject(job: BJobRecord, now: number): Record<string, unknown> | null {
  const state = billingStateAt(job, now);
  if (state === null) return null;
  return { state, charge_micro_usd: state === "settled" ? chargeMicroUsd(job) : 0 };
}

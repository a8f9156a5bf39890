import type { Job, JobOutput } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";
import { displayUrl } from "../core/redact.js";
import type { JobEvent } from "../core/job.js";
import { shownNotifyUrl } from "./notify-urls.js";

/** The `--json` shape of a job (a contract for scripts; see the README). */
export interface JobJson {
  id: string;
  ref: string;
  provider: string;
  model: string;
  state: string;
  provider_job_id: string | null;
  /** `width`/`height` (images, videos) and `duration_s` (videos) as read from the saved bytes; `seed` as the provider reported it, else as sent. */
  outputs: Array<{ path: string; url: string; content_type: string; bytes: number; sha256: string; width?: number; height?: number; duration_s?: number; seed?: number }>;
  error: { code: string; message: string } | null;
  cost: { estimate_micro_usd: number | null; charge_micro_usd: number | null; source: string };
  /** A common request's target now (`d/gen-2-pro`), and every target tried, in order, the last being this one. Absent for native jobs. */
  target?: string;
  attempts?: Array<{ target: string; provider: string; model: string; provider_job_id: string | null; outcome: string }>;
}

export function jobJson(job: Job, outputs: JobOutput[]): JobJson {
  return {
    id: job.id,
    ref: job.ref,
    provider: job.provider,
    model: job.model,
    state: job.state,
    provider_job_id: job.providerJobId,
    outputs: outputs.map((output) => ({
      path: output.path,
      // Stored without its query (see `captureOutputs`); a row saved before that may still hold a signature.
      url: displayUrl(output.url),
      content_type: output.contentType,
      bytes: output.bytes,
      sha256: output.sha256,
      ...output.media,
      ...seedOf(output.metadata, job.body),
    })),
    error: job.error ? { code: job.error.code, message: job.error.message } : null,
    cost: {
      estimate_micro_usd: job.estimateMicroUsd,
      charge_micro_usd: job.chargeMicroUsd,
      source: job.chargeSource ?? job.estimateSource,
    },
    ...(job.route
      ? {
          target: job.route.current,
          attempts: [
            ...job.route.tried.map((attempt) => ({ target: attempt.name, provider: attempt.provider, model: attempt.model, provider_job_id: attempt.providerJobId, outcome: attempt.reason })),
            { target: job.route.current, provider: job.provider, model: job.model, provider_job_id: job.providerJobId, outcome: job.state },
          ],
        }
      : {}),
  };
}

function seedOf(metadata: Record<string, unknown>, body: Record<string, unknown>): { seed?: number } {
  if (typeof metadata.seed === "number") return { seed: metadata.seed };
  return typeof body.seed === "number" ? { seed: body.seed } : {};
}

export function costText(job: Pick<Job, "estimateMicroUsd" | "chargeMicroUsd">): string {
  if (job.chargeMicroUsd !== null) return formatMicroUsd(job.chargeMicroUsd);
  if (job.estimateMicroUsd !== null) return `~${formatMicroUsd(job.estimateMicroUsd)}`;
  return "unpriced";
}

/** A job as the API answers it: the CLI's `--json` shape, and what a remote client needs besides. */
export interface ApiJob extends JobJson {
  batch_id: string | null;
  reason: string | null;
  warnings: string[];
  notify_url: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  outputs: Array<JobJson["outputs"][number] & { href: string }>;
}

export function apiJob(job: Job, outputs: JobOutput[]): ApiJob {
  const json = jobJson(job, outputs);
  return {
    ...json,
    outputs: json.outputs.map((output, index) => ({ ...output, href: `/v1/jobs/${encodeURIComponent(job.id)}/outputs/${outputs[index]!.index}` })),
    batch_id: job.batchId,
    reason: job.reason,
    warnings: job.warnings,
    // Its token, if it carries one, is not shown: scheme and host only.
    notify_url: shownNotifyUrl(job),
    created_at: new Date(job.createdAt).toISOString(),
    updated_at: new Date(job.updatedAt).toISOString(),
    finished_at: job.finishedAt === null ? null : new Date(job.finishedAt).toISOString(),
  };
}

export function apiEvent(event: JobEvent) {
  return { at: new Date(event.at).toISOString(), from: event.fromState, to: event.toState, reason: event.reason, detail: event.detail ?? null };
}

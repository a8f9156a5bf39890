import type { Job, JobOutput } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";

/** The `--json` shape of a job (a contract for scripts; see the README). */
export interface JobJson {
  id: string;
  ref: string;
  provider: string;
  model: string;
  state: string;
  provider_job_id: string | null;
  outputs: Array<{ path: string; url: string; content_type: string; bytes: number; sha256: string }>;
  error: { code: string; message: string } | null;
  cost: { estimate_micro_usd: number | null; charge_micro_usd: number | null; source: string };
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
      url: output.url,
      content_type: output.contentType,
      bytes: output.bytes,
      sha256: output.sha256,
    })),
    error: job.error ? { code: job.error.code, message: job.error.message } : null,
    cost: {
      estimate_micro_usd: job.estimateMicroUsd,
      charge_micro_usd: job.chargeMicroUsd,
      source: job.chargeSource ?? job.estimateSource,
    },
  };
}

export function costText(job: Pick<Job, "estimateMicroUsd" | "chargeMicroUsd">): string {
  if (job.chargeMicroUsd !== null) return formatMicroUsd(job.chargeMicroUsd);
  if (job.estimateMicroUsd !== null) return `~${formatMicroUsd(job.estimateMicroUsd)}`;
  return "unpriced";
}

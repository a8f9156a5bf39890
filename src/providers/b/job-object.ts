import { z } from "zod";

/**
 * spec B Job object: `id` and `status` always; `output`, `error`, `usage`
 * and `billing` as the job's state allows. "The full job-object field list:
 * not shown", so only these are read and the whole object is kept as `raw`
 * wherever a status is reported. `status` is any string: a value the spec
 * does not list is kept, never refused.
 */
export const BJob = z.object({
  id: z.string().min(1),
  status: z.string(),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
  usage: z.unknown().optional(),
  billing: z.unknown().optional(),
});
export type BJob = z.infer<typeof BJob>;

/** spec B Job status: the values listed; only completed and failed are terminal. */
export const B_JOB_STATUSES = ["queued", "running", "completed", "failed"] as const;

const JobError = z.object({ code: z.string().min(1), message: z.string().optional() });
const Billing = z.object({ state: z.string(), charge_micro_usd: z.unknown().optional() });
const Media = z.object({ url: z.string().min(1).optional(), content_type: z.string().optional() });

export function parseJob(value: unknown): BJob | null {
  const parsed = BJob.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** spec B Job object `error`: `code` is stable (branch on it), `message` is diagnostic text that may change. */
export function jobErrorOf(job: BJob): { code: string; message: string } | null {
  const parsed = JobError.safeParse(job.error);
  if (!parsed.success) return null;
  return { code: parsed.data.code, message: parsed.data.message ?? "" };
}

export interface BMedia {
  /** `output.media_type` (video, audio, …), or null when absent. */
  mediaType: string | null;
  /** `output.{media_type}.url`, or null when absent. */
  url: string | null;
  /** Not a field the spec shows; kept when the media object carries it. */
  contentType: string | null;
}

/**
 * spec B Job object `output`: `media_type` and a media object holding `url`,
 * e.g. `output.video.url`. The object is found under the name `media_type`
 * gives, whatever that type is.
 */
export function mediaOf(job: BJob): BMedia | null {
  const output = job.output;
  if (typeof output !== "object" || output === null) return null;
  const record = output as Record<string, unknown>;
  const mediaType = typeof record.media_type === "string" ? record.media_type : null;
  const media = Media.safeParse(mediaType === null ? undefined : record[mediaType]);
  return {
    mediaType,
    url: media.success ? (media.data.url ?? null) : null,
    contentType: media.success ? (media.data.content_type ?? null) : null,
  };
}

/** spec B Billing object: `state` and `charge_micro_usd`; null when `billing` is null, absent or not an object ("a null billing is not a charge"). */
export function billingOf(job: BJob): { state: string; chargeMicroUsd: unknown } | null {
  const parsed = Billing.safeParse(job.billing);
  return parsed.success ? { state: parsed.data.state, chargeMicroUsd: parsed.data.charge_micro_usd } : null;
}

import type { OutputRef, ProviderStatus } from "../adapter.js";
import { jobErrorOf, mediaOf, type BJob } from "./job-object.js";

/** A `/content` read: the address once the job completed, or 409 ("not yet complete", spec B Errors). */
export type BContent = { kind: "ready"; url: string; raw: unknown } | { kind: "not_ready"; raw: unknown };

/** The code used when B reports a failed job without the `error.code` the spec promises (kept raw). */
export const FAILED_WITHOUT_CODE = "provider_failed";

/**
 * spec B Job status, normalised. queued/running are pending; completed reads
 * the content address; failed carries `error.code`. Moves between queued and
 * running are not shown, and a status the spec does not list is neither
 * success nor failure: it is pending, with the raw value kept for display.
 */
export async function statusOfJob(job: BJob, raw: unknown, readContent: () => Promise<BContent>): Promise<ProviderStatus> {
  switch (job.status) {
    case "completed": {
      const content = await readContent();
      // spec B Errors: content before completion answers 409, which is not an error; read again later.
      if (content.kind === "not_ready") return { kind: "pending", providerStatus: "completed (content not ready)", raw };
      const media = mediaOf(job);
      const metadata: Record<string, unknown> = {};
      if (media?.mediaType) metadata.mediaType = media.mediaType;
      if (media?.contentType) metadata.contentType = media.contentType;
      const output: OutputRef = { url: content.url, ...(Object.keys(metadata).length > 0 ? { metadata } : {}) };
      return { kind: "succeeded", providerStatus: job.status, outputs: [output], ...(job.usage !== undefined ? { usage: job.usage } : {}), raw };
    }
    case "failed": {
      const error = jobErrorOf(job);
      return {
        kind: "failed",
        providerStatus: job.status,
        code: error?.code ?? FAILED_WITHOUT_CODE,
        message: error ? error.message || error.code : "B reported the job failed without an error code",
        raw,
      };
    }
    case "queued":
    case "running":
      return { kind: "pending", providerStatus: job.status, raw };
    default:
      // Not listed by the spec: polled on, marked unrecognised (the engine bounds how long).
      return { kind: "pending", providerStatus: job.status, unrecognised: { said: `B answered status "${job.status.slice(0, 80)}" for job ${job.id}`, taskUnknown: false }, raw };
  }
}

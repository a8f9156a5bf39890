import { isTerminal, type Job, type JobEvent, type JobOutput } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";
import { displayUrl, redactDeep } from "../core/redact.js";
import { shownNotifyUrl } from "./notify-urls.js";
import { NO_TIMING, type JobTiming } from "./eta.js";

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

/**
 * Text about a job as a remote caller sees it: the server's output folder
 * (and so every saved file's path, and the folder named in a save's error)
 * is named, not shown. A folder is the server's own business: it tells
 * another team nothing it may act on and tells an attacker the layout of the
 * disk. The CLI's `--json` and `show` keep paths: their user owns that disk.
 */
export function serverPathsHidden(job: Pick<Job, "outDir">): (text: string) => string {
  const folder = job.outDir.replace(/\/+$/, "");
  if (folder.length === 0) return (text) => text;
  return (text) => text.split(folder).join(OUTPUT_FOLDER);
}

/** What a remote view says in place of the server's output folder. */
export const OUTPUT_FOLDER = "<output folder>";

/** The job as a remote caller sees it: its reason and error without the server's paths. */
export function remoteJob(job: Job): Job {
  const hide = serverPathsHidden(job);
  return {
    ...job,
    reason: job.reason === null ? null : hide(job.reason),
    error: job.error === null ? null : { ...job.error, message: hide(job.error.message), ...(job.error.detail !== undefined ? { detail: redactDeep(job.error.detail, hide) } : {}) },
  };
}

/** A job's events as a remote caller sees them: no saved file's path (an output is named by its index), no server folder in any text. */
export function remoteEvents(job: Pick<Job, "outDir">, events: readonly JobEvent[]): JobEvent[] {
  const hide = serverPathsHidden(job);
  return events.map((event) => ({ ...event, reason: hide(event.reason), detail: redactDeep(withoutPathKeys(event.detail), hide) }));
}

/** A capture event's detail lists what it saved (`outputs: [{path, bytes, sha256}]`): the paths go, the rest stays. */
function withoutPathKeys(detail: unknown): unknown {
  if (Array.isArray(detail)) return detail.map(withoutPathKeys);
  if (detail !== null && typeof detail === "object" && Object.getPrototypeOf(detail) === Object.prototype) {
    return Object.fromEntries(Object.entries(detail).filter(([key]) => key !== "path").map(([key, value]) => [key, withoutPathKeys(value)]));
  }
  return detail;
}

/** A remote view's output: where to fetch it on the API (absolute under MEDIAGATE_PUBLIC_URL), never where it lies on the server. */
export type ApiOutput = Omit<JobJson["outputs"][number], "path"> & { href: string };

/** A job as the API answers it: the CLI's `--json` shape without server paths, and what a remote client needs besides. */
export interface ApiJob extends Omit<JobJson, "outputs"> {
  batch_id: string | null;
  reason: string | null;
  warnings: string[];
  notify_url: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  /** When it stops being wanted (`cancel_after_s`, `Cancel-After`): not sent by then, it is cancelled; null, never. */
  deadline_at: string | null;
  /** Sent before its deadline and still running after it, or ended after it (a provider with no cancel): it is tracked to its end and saved. */
  deadline_missed: boolean;
  /** 1-based among the jobs waiting for the same provider (fair share counted); null when not waiting. */
  queue_position: number | null;
  /** When it is (or was) expected to be sent, from the engine's line and learned pace; null while unknown. */
  expected_start_at: string | null;
  /** When its results are expected to be saved; null while unknown (and once it has ended). */
  expected_finish_at: string | null;
  outputs: ApiOutput[];
}

/** A time as the API gives times (RFC 3339, UTC), or null. */
export function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** An output's address on the API: absolute when MEDIAGATE_PUBLIC_URL says where the API is reachable, else a path on it. */
export function outputHref(job: Pick<Job, "id">, output: Pick<JobOutput, "index">, publicUrl: string | null): string {
  const path = `/v1/jobs/${encodeURIComponent(job.id)}/outputs/${output.index}`;
  return publicUrl === null ? path : `${publicUrl.replace(/\/+$/, "")}${path}`;
}

export function apiJob(stored: Job, outputs: JobOutput[], publicUrl: string | null, timing: JobTiming = NO_TIMING): ApiJob {
  const job = remoteJob(stored);
  const { outputs: shown, ...json } = jobJson(job, outputs);
  return {
    ...json,
    outputs: shown.map(({ path: _path, ...output }, index) => ({ ...output, href: outputHref(job, outputs[index]!, publicUrl) })),
    batch_id: job.batchId,
    reason: job.reason,
    warnings: job.warnings,
    // Its token, if it carries one, is not shown: scheme and host only.
    notify_url: shownNotifyUrl(job),
    created_at: new Date(job.createdAt).toISOString(),
    updated_at: new Date(job.updatedAt).toISOString(),
    finished_at: isoOrNull(job.finishedAt),
    deadline_at: isoOrNull(job.deadlineAt),
    deadline_missed: deadlineMissed(job, Date.now()),
    queue_position: timing.queuePosition,
    expected_start_at: isoOrNull(timing.expectedStartAt),
    expected_finish_at: isoOrNull(timing.expectedFinishAt),
  };
}

/**
 * Whether a job sent before its deadline ran past it: still unfinished after
 * it, or finished after it (a provider with no cancel runs it to its end; it
 * is paid and its result kept). One cancelled for its deadline did not miss it.
 */
export function deadlineMissed(job: Pick<Job, "deadlineAt" | "submittedAt" | "finishedAt" | "error">, now: number): boolean {
  if (job.deadlineAt === null || job.submittedAt === null || job.error?.code === "deadline") return false;
  return (job.finishedAt ?? now) > job.deadlineAt;
}

export function apiEvent(event: JobEvent) {
  return { at: new Date(event.at).toISOString(), from: event.fromState, to: event.toState, reason: event.reason, detail: event.detail ?? null };
}

/**
 * What to say of a job whose charge is not recorded, on every face: unpriced
 * is not free, and an ended job's charge that was never learned is not "none
 * yet".
 */
export function chargeUnknownWords(job: Pick<Job, "state" | "estimateMicroUsd" | "submittedAt">): string {
  if (job.estimateMicroUsd === null) return "unpriced (the provider publishes no price for it)";
  if (!isTerminal(job.state)) return "none yet";
  if (job.submittedAt === null && job.state !== "unknown_submission") return "none (never sent)";
  return "unknown (not recorded)";
}

import { AISDKError } from "@ai-sdk/provider";
import { isTerminal, type Job } from "../core/job.js";
import { targetOf } from "./target.js";

const JOB_ERROR_MARKER = "mediagate.ai-sdk.error.MediagateJobError";
const JOB_ERROR_SYMBOL = Symbol.for(JOB_ERROR_MARKER);

/** How a job of a call is named in messages: its id, ref and target. */
export function describeJob(job: Job): string {
  return `mediagate job ${job.id} (ref ${job.ref}, ${targetOf(job)})`;
}

/**
 * A job of an AI SDK call did not end with files: it ended failed,
 * cancelled, expired or unknown_submission, or it cannot move on by itself
 * (its provider halted, past its budget, its output folder not writable).
 * `code` is the job's stable error code (`provider_failed`,
 * `insufficient_credits`, `over_budget`, …).
 *
 * Never retryable from the AI SDK's side (`isRetryable` false): the engine has
 * already retried what can be retried, and a retry of the call would queue
 * and pay for a new job. Every job of the call stays in the store, the ones
 * that succeeded with their files saved.
 */
export class MediagateJobError extends AISDKError {
  private readonly [JOB_ERROR_SYMBOL] = true;
  readonly isRetryable = false;
  readonly code: string;
  /** The first job of the call that did not succeed. */
  readonly job: Job;
  /** Every job of the call, in the order of the outputs asked for. */
  readonly jobs: readonly Job[];

  /** `problem` names what is wrong with a job that succeeded (no file of the kind asked for, a file changed since it was saved). */
  constructor(job: Job, jobs: readonly Job[], problem?: { code: string; reason: string }) {
    const finished = isTerminal(job.state);
    const code = problem?.code ?? job.error?.code ?? job.blockedCode ?? (finished ? job.state : "provider_halted");
    const why = problem?.reason ?? job.error?.message ?? job.reason ?? "no reason recorded";
    const others = jobs.filter((each) => each.id !== job.id && each.state === "succeeded").length;
    const story = problem
      ? `succeeded, but ${code}: ${why}`
      : finished
        ? `ended ${job.state}: ${code}: ${why}`
        : `is ${job.state} and cannot move on by itself: ${code}: ${why}; it stays in the store and goes on once that changes`;
    const succeeded = others > 0 ? ` (${others} other job${others > 1 ? "s" : ""} of this call succeeded; their files are saved)` : "";
    super({ name: "AI_MediagateJobError", message: `${describeJob(job)} ${story}${succeeded}` });
    this.code = code;
    this.job = job;
    this.jobs = jobs;
  }

  static override isInstance(error: unknown): error is MediagateJobError {
    return AISDKError.hasMarker(error, JOB_ERROR_MARKER);
  }
}

/**
 * The call's abort signal fired while its jobs were queued or rendering.
 * Named `AbortError`, as the AI SDK and callers recognise an abort; unlike a
 * plain abort it says which jobs go on: aborting stops the waiting, not the
 * jobs, which were queued (and may be paid for) before. They stay in the
 * store and the engine carries on with them; the same call with the same
 * `providerOptions.mediagate.ref` takes them up again instead of paying twice.
 */
export class MediagateWaitAbortedError extends Error {
  override readonly name = "AbortError";
  readonly jobs: readonly Job[];

  constructor(jobs: readonly Job[], reason: unknown) {
    super(`aborted while waiting for ${jobs.map(describeJob).join(", ")}; nothing was cancelled: the job${jobs.length > 1 ? "s stay" : " stays"} in the store and go${jobs.length > 1 ? "" : "es"} on`, { cause: reason });
    this.jobs = jobs;
  }
}

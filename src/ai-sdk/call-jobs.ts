import { createHash } from "node:crypto";
import { InvalidArgumentError, type JSONObject, type SharedV3Warning } from "@ai-sdk/provider";
import { isTerminal, type Job, type JobOutput } from "../core/job.js";
import { readOutput } from "../outputs/by-location.js";
import { OutputReadError } from "../outputs/read-error.js";
import type { CommonSubmitRequest, Mediagate } from "../app/mediagate.js";
import { MediagateJobError, MediagateWaitAbortedError } from "./errors.js";
import { targetOf } from "./target.js";

/** One file a call made: its job, the output as stored, and its bytes as read from the saved file. */
export interface CallOutput {
  job: Job;
  output: JobOutput;
  bytes: Uint8Array;
}

export interface CallJobsResult {
  jobs: Job[];
  outputs: CallOutput[];
  warnings: SharedV3Warning[];
  /** Every target that made an output (usually one: the model's, or the one the route ended on). */
  targets: string[];
}

export interface CallJobsRequest {
  gate: Mediagate;
  request: CommonSubmitRequest;
  /** How many outputs the call asks for: one job each. */
  count: number;
  ref: string | undefined;
  outDir: string | undefined;
  /** `providerOptions.mediagate.cancel_after_s`, checked by `submit`. */
  cancelAfterS?: number | undefined;
  signal: AbortSignal | undefined;
  /** The media type family the call returns (`image/`, `video/`); outputs of another kind stay saved and listed, not returned. */
  mediaPrefix: "image/" | "video/";
}

/** The refs of a call's jobs: the ref as given for one output, `<ref>#1` … for several, none given: the library names each job. */
function refsOf(ref: string | undefined, count: number): Array<string | undefined> {
  if (count === 1) return [ref];
  return Array.from({ length: count }, (_, index) => (ref === undefined ? undefined : `${ref}#${index + 1}`));
}

/** "7 and 8", "7, 8 and 9", "7 to 106": the seeds of a call's jobs. */
function seedList(first: number, count: number): string {
  if (count > 4) return `${first} to ${first + count - 1}`;
  const seeds = Array.from({ length: count }, (_, index) => String(first + index));
  return `${seeds.slice(0, -1).join(", ")} and ${seeds.at(-1)}`;
}

/**
 * Each job's request. With a seed and several outputs, the jobs take seed,
 * seed + 1, …: one seed for all would make the same picture `count` times,
 * and each would be paid for. A warning says so. The seeds follow the jobs'
 * refs (`<ref>#1` has the seed), so the same call again names the same jobs.
 */
function requestsOf(call: CallJobsRequest): { requests: CommonSubmitRequest[]; warnings: SharedV3Warning[] } {
  const seed = call.request.seed;
  // A seed that is not a whole number is refused by the submit, naming it.
  if (seed === undefined || call.count === 1 || !Number.isSafeInteger(seed)) return { requests: Array<CommonSubmitRequest>(call.count).fill(call.request), warnings: [] };
  // Compared before adding: past 2^53 a sum is rounded, and could look exact.
  const largestFirst = Number.MAX_SAFE_INTEGER - (call.count - 1);
  if (seed > largestFirst) {
    throw new InvalidArgumentError({
      argument: "seed",
      message: `seed ${seed} with n ${call.count} would give the outputs seeds past ${Number.MAX_SAFE_INTEGER}, the largest sent exactly; give a seed of at most ${largestFirst}`,
    });
  }
  const kind = call.mediaPrefix.slice(0, -1);
  return {
    requests: Array.from({ length: call.count }, (_, index) => ({ ...call.request, seed: seed + index })),
    warnings: [{ type: "other", message: `n ${call.count} with seed ${seed}: each ${kind} has its own seed (${seedList(seed, call.count)}), since one seed would make the same ${kind} ${call.count} times, each paid for` }],
  };
}

/**
 * Queues one durable job per output asked for, waits for them, and reads
 * their saved files. Every job goes through the library's `submit` (every
 * target judged before anything is sent, the budget checked, the job stored
 * before it is sent) and its engine (limits, retries, the ledger).
 *
 * One job per output, never `n` in one request: D makes one image per
 * request, and E and F do not show how many one request makes, so `n` would
 * make most targets ineligible; one-image jobs go to every target, each with
 * its own ref, state and charge.
 */
export async function runCallJobs(call: CallJobsRequest): Promise<CallJobsResult> {
  // The AI SDK checks nothing of n.
  if (!(Number.isSafeInteger(call.count) && call.count >= 1)) throw new InvalidArgumentError({ argument: "n", message: `n must be a whole number from 1, got ${JSON.stringify(call.count)}` });
  // Aborted before anything is stored: nothing to go on, so a plain abort.
  call.signal?.throwIfAborted();
  const { requests, warnings: seedWarnings } = requestsOf(call);
  const jobs: Job[] = [];
  for (const [index, ref] of refsOf(call.ref, call.count).entries()) {
    // Aborted between two submits: the jobs queued so far go on; no more are queued.
    if (call.signal?.aborted) throw new MediagateWaitAbortedError(jobs, call.signal.reason);
    jobs.push(await call.gate.submit(requests[index]!, { ...(ref !== undefined ? { ref } : {}), ...(call.outDir !== undefined ? { outDir: call.outDir } : {}), ...(call.cancelAfterS !== undefined ? { cancelAfterS: call.cancelAfterS } : {}) }));
  }
  const waited = await Promise.all(jobs.map((job) => call.gate.wait(job.id, call.signal ? { signal: call.signal } : {})));
  const unfinished = waited.filter((job) => !isTerminal(job.state));
  if (call.signal?.aborted && unfinished.length > 0) throw new MediagateWaitAbortedError(unfinished, call.signal.reason);
  const notSucceeded = waited.find((job) => job.state !== "succeeded");
  if (notSucceeded) throw new MediagateJobError(notSucceeded, waited);

  const outputs: CallOutput[] = [];
  for (const job of waited) {
    const saved = (await call.gate.outputs(job.id)).filter((output) => output.contentType.startsWith(call.mediaPrefix));
    if (saved.length === 0) throw new MediagateJobError(job, waited, { code: "no_output", reason: `it saved no ${call.mediaPrefix.slice(0, -1)} file` });
    for (const output of saved) outputs.push({ job, output, bytes: await savedBytes(job, waited, output) });
  }
  const warnings = [...seedWarnings, ...[...new Set(waited.flatMap((job) => job.warnings))].map((message): SharedV3Warning => ({ type: "other", message }))];
  return { jobs: waited, outputs, warnings, targets: [...new Set(waited.map(targetOf))] };
}

/** The file as saved, checked against the sha256 recorded when it was saved: bytes changed since are not handed back as the job's. */
async function savedBytes(job: Job, jobs: readonly Job[], output: JobOutput): Promise<Uint8Array> {
  let bytes: Buffer;
  try {
    bytes = await readOutput(output.path);
  } catch (error) {
    const why = error instanceof OutputReadError ? error.errno : ((error as NodeJS.ErrnoException).code ?? String(error));
    throw new MediagateJobError(job, jobs, { code: "output_unreadable", reason: `its file ${output.path} cannot be read (${why})` });
  }
  if (createHash("sha256").update(bytes).digest("hex") !== output.sha256) {
    throw new MediagateJobError(job, jobs, { code: "output_changed", reason: `its file ${output.path} no longer has the sha256 recorded when it was saved` });
  }
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * What the AI SDK caller learns of one output (`providerMetadata.mediagate.images[i]`
 * or `.videos[i]`): its job, where it went and what it cost, the route's
 * attempts in order (the last being the one that made it), and the saved file.
 */
export function outputMetadata({ job, output }: CallOutput): JSONObject {
  const attempts = [
    ...(job.route?.tried ?? []).map((attempt) => ({ target: attempt.name, provider: attempt.provider, model: attempt.model, providerJobId: attempt.providerJobId, outcome: attempt.reason })),
    { target: targetOf(job), provider: job.provider, model: job.model, providerJobId: job.providerJobId, outcome: job.state },
  ];
  return {
    jobId: job.id,
    ref: job.ref,
    target: targetOf(job),
    provider: job.provider,
    model: job.model,
    providerJobId: job.providerJobId,
    estimateMicroUsd: job.estimateMicroUsd,
    chargeMicroUsd: job.chargeMicroUsd,
    chargeState: job.chargeState,
    attempts,
    warnings: job.warnings,
    path: output.path,
    contentType: output.contentType,
    bytes: output.bytes,
    sha256: output.sha256,
    // Stored as JSON, so JSON as read.
    metadata: output.metadata as JSONObject,
    // What the saved bytes say: width and height, a video's duration_s.
    media: output.media as JSONObject,
  };
}

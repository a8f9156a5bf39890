import { randomBytes } from "node:crypto";
import { parseSize, type CommonRequest, type CommonTask, type ImageInput } from "../core/common-request.js";
import { InputError, MediagateError } from "../core/errors.js";
import { isTerminal, type Job, type JobOutput } from "../core/job.js";
import { parseTarget, type RouteBy, type RoutedRequest, type RouteTarget } from "../engine/route.js";
import { waitForJobs } from "../engine/wait.js";
import { readOutput } from "../outputs/by-location.js";
import type { Caller } from "./caller.js";
import { cancelJob, type CancelOutcome } from "./cancel.js";
import { remoteJob } from "./job-view.js";
import { NotFoundError } from "./errors.js";
import { submitBatch, submitJob, type IdempotencyRequest } from "./intake.js";
import { listJobs, visibleJob } from "./queries.js";
import type { Runtime } from "./runtime.js";
import { commonTargets } from "./targets.js";

/**
 * The OpenAI API's images and videos (issue 38) as operations of the
 * application: its fields mapped onto a common request, `n` images as `n`
 * jobs admitted together, a video as one job. The server's `openai/` face
 * parses and words them; budgets, tenancy, the queue and the outputs are
 * the ones every face has, since every job is admitted by intake.
 */

/** The models that route a common request over every listed target of its task, and how they order them. */
export const ROUTE_MODELS: Readonly<Record<string, RouteBy>> = { "route:price": "price", "route:time": "time" };

/** Refs of the jobs made here: a video is a job whose ref starts with OPENAI_VIDEO_REF_PREFIX (how `GET /v1/videos` finds them). */
export const OPENAI_IMAGE_REF_PREFIX = "openai-image-";
export const OPENAI_VIDEO_REF_PREFIX = "openai-video-";

/**
 * How long a call for images holds at most: under the official SDKs' own
 * ten-minute timeout, after which they would send the call again (and make,
 * and pay for, the images twice); answered first, the timeout says not to.
 */
export const IMAGES_HOLD_MS = 9.5 * 60_000;

/** Most images one call may ask for (OpenAI's own bound on `n`). */
export const MAX_IMAGES = 10;

/** The model asked for is no target of a configured provider (OpenAI's `model_not_found`). */
export class ModelNotFoundError extends MediagateError {
  constructor(readonly model: string) {
    super("model_not_found", `The model \`${model.slice(0, 120)}\` does not exist or you do not have access to it; GET /v1/models lists them`);
  }
}

/** The jobs of a call for images did not all end in time, or did not all succeed. */
export class ImagesNotMadeError extends MediagateError {
  constructor(
    code: "timeout" | "generation_failed" | "blocked",
    message: string,
    readonly jobs: readonly Job[],
  ) {
    super(code, message);
  }
}

/** A model as `GET /v1/models` lists it. */
export interface OpenAiModel {
  id: string;
  task: CommonTask;
  ownedBy: string;
}

/** The targets of a route model: every listed target of the task whose provider is configured. */
function listedTargets(runtime: Runtime, task: CommonTask): string[] {
  return commonTargets(runtime)
    .filter((row) => row.listed && row.configured && row.task === task)
    .map((row) => row.target);
}

/**
 * The models a caller may name: each configured provider's listed targets,
 * and the route models of each task that has listed targets. Providers
 * without a published list (A, B, F) are taken by name (`f/img-v2`) but
 * cannot be listed.
 */
export function openAiModels(runtime: Runtime): OpenAiModel[] {
  const rows = commonTargets(runtime).filter((row) => row.listed && row.configured);
  const models: OpenAiModel[] = rows.map((row) => ({ id: row.target, task: row.task, ownedBy: row.provider }));
  for (const task of ["image", "video"] as const) {
    if (!rows.some((row) => row.task === task)) continue;
    for (const name of Object.keys(ROUTE_MODELS)) if (!models.some((model) => model.id === name)) models.push({ id: name, task, ownedBy: "mediagate" });
  }
  return models;
}

/** Where a request naming `model` may go: one target, or a route model's every listed target of the task. */
export function targetsOfModel(runtime: Runtime, model: unknown, task: CommonTask): { targets: RouteTarget[]; routeBy: RouteBy } {
  if (model === undefined || model === null) throw new InputError("model", "is required: a target (d/gen-2-pro) or a route (route:price, route:time)", "a model of GET /v1/models");
  if (typeof model !== "string") throw new InputError("model", "must be a string", "a model of GET /v1/models");
  const routeBy = ROUTE_MODELS[model];
  if (routeBy !== undefined) {
    const names = listedTargets(runtime, task);
    if (names.length === 0) throw new ModelNotFoundError(model);
    return { targets: names.map((name) => parseTarget(name, "model")), routeBy };
  }
  let target: RouteTarget;
  try {
    target = parseTarget(model, "model");
  } catch (error) {
    if (error instanceof InputError) throw new ModelNotFoundError(model);
    throw error;
  }
  const entry = runtime.providers.get(target.provider);
  if (!entry?.adapter || entry.missing.length > 0) throw new ModelNotFoundError(model);
  const listed = entry.adapter.models();
  if (listed.length > 0 && !listed.includes(target.model)) throw new ModelNotFoundError(model);
  const capabilities = entry.adapter.commonCapabilities?.(target.model);
  if (capabilities && capabilities.task !== task) throw new InputError("model", `${model} makes ${capabilities.task}s, not ${task}s`, `a model of GET /v1/models for ${task}s`);
  return { targets: [target], routeBy: "order" };
}

/** What a call for images asks, read from OpenAI's fields by the face. */
export interface ImagesAsked {
  model: unknown;
  prompt: unknown;
  size?: string;
  /** Reference images (`/v1/images/edits`). */
  images?: ImageInput[];
  /** Native fields given to every target's provider (`output_format`), judged by each target's own validation. */
  native?: Record<string, unknown>;
}

/** The common request of one image of a call (every one of its `n` is the same request). */
export function imageRequestOf(runtime: Runtime, asked: ImagesAsked): RoutedRequest {
  const { targets, routeBy } = targetsOfModel(runtime, asked.model, "image");
  if (typeof asked.prompt !== "string" || asked.prompt.length === 0) throw new InputError("prompt", "is required: what the image should show");
  const common: CommonRequest = {
    task: "image",
    prompt: asked.prompt,
    ...(asked.size !== undefined ? { size: asked.size } : {}),
    ...(asked.images !== undefined ? { images: asked.images } : {}),
    ...(asked.native !== undefined ? { provider_options: Object.fromEntries(targets.map((target) => [target.provider, asked.native!])) } : {}),
  };
  return { common, targets, routeBy, fallbackOnFailure: false };
}

/** A ref of a job made here: the prefix, then what is asked that the job's native body does not say in common words, then a nonce. */
function refOf(prefix: string, middle = ""): string {
  return `${prefix}${middle}${randomBytes(9).toString("base64url")}`;
}

/** What a call for images made: each job and its first saved output, in the order asked. */
export interface ImagesMade {
  createdAt: number;
  images: Array<{ job: Job; output: JobOutput; bytes: Buffer | null }>;
}

/**
 * `n` images of one request as `n` jobs, admitted together (all or none:
 * their estimates reserved in the caller's budget in one transaction), then
 * held until every one ends, at most `holdMs`, or until `signal` aborts (a
 * client gone: the jobs stay and run). `withBytes` reads each saved image.
 */
export async function makeImages(
  runtime: Runtime,
  caller: Caller,
  request: RoutedRequest,
  n: number,
  options: { withBytes: boolean; signal?: AbortSignal; holdMs?: number; idempotency?: IdempotencyRequest | null },
): Promise<ImagesMade> {
  const lines = Array.from({ length: n }, () => ({ ref: refOf(OPENAI_IMAGE_REF_PREFIX) }));
  // The same Idempotency-Key and call again (a retry) is answered with the jobs the first one made.
  const batch = await submitBatch(runtime, caller, lines, () => request, options.idempotency ?? null);
  const ids = batch.jobs.map((job) => job.id);
  const held = AbortSignal.timeout(options.holdMs ?? IMAGES_HOLD_MS);
  const signal = options.signal ? AbortSignal.any([held, options.signal]) : held;
  const store = await runtime.store();
  await waitForJobs(await runtime.engine(), store, ids, { signal });
  const byId = new Map((await store.listJobs({ ids })).map((job) => [job.id, job]));
  const jobs = ids.map((id) => byId.get(id)!);
  const open = jobs.filter((job) => !isTerminal(job.state));
  const names = (some: readonly Job[]) => some.map((job) => job.id).join(", ");
  if (open.length > 0) {
    if (options.signal?.aborted && !held.aborted) throw new ImagesNotMadeError("timeout", `the caller went away before the images were made; their jobs go on (${names(open)}: GET /v1/jobs/{id})`, jobs);
    if (held.aborted) throw new ImagesNotMadeError("timeout", `the images were not made within ${Math.round((options.holdMs ?? IMAGES_HOLD_MS) / 1_000)} s; their jobs go on (${names(open)}: GET /v1/jobs/{id})`, jobs);
    const first = remoteJob(open[0]!);
    throw new ImagesNotMadeError("blocked", `jobs ${names(open)} cannot go on now: ${first.reason ?? first.blockedCode ?? "blocked"}; they stay queued (GET /v1/jobs/{id})`, jobs);
  }
  const failed = jobs.filter((job) => job.state !== "succeeded");
  if (failed.length > 0) {
    // As a remote caller sees it: no path of the server's output folder.
    const first = remoteJob(failed[0]!);
    throw new ImagesNotMadeError("generation_failed", `job ${first.id} ${first.state}${first.error ? ` (${first.error.code}: ${first.error.message})` : ""}${failed.length > 1 ? `; ${failed.length - 1} more did not succeed (${names(failed.slice(1))})` : ""}`, jobs);
  }
  const outputs = await store.outputsOfJobs(ids);
  const images = await Promise.all(
    jobs.map(async (job) => {
      const output = (outputs.get(job.id) ?? [])[0]!;
      return { job, output, bytes: options.withBytes ? await readOutput(output.path) : null };
    }),
  );
  return { createdAt: Math.min(...jobs.map((job) => job.createdAt)), images };
}

/** What a call for a video asks, read from OpenAI's fields by the face. */
export interface VideoAsked {
  model: unknown;
  prompt: unknown;
  /** Whole seconds as OpenAI writes them ("4"). */
  seconds?: string;
  size?: string;
  /** `input_reference`: the clip's first frame. */
  firstFrame?: ImageInput;
}

const SECONDS = /^[1-9]\d{0,2}$/;

/** A video's ref: its asked seconds and size are kept in it (`openai-video-4s-1280x720-…`), since the native body of each provider says them its own way. */
const VIDEO_REF = /^openai-video-(\d*)s-(\d+x\d+)?-/;

/** One video as one job, admitted as `POST /v1/jobs` admits one (the caller's budget, tenancy and queue). */
export async function makeVideo(runtime: Runtime, caller: Caller, asked: VideoAsked, idempotency: IdempotencyRequest | null = null): Promise<Job> {
  const { targets, routeBy } = targetsOfModel(runtime, asked.model, "video");
  if (typeof asked.prompt !== "string" || asked.prompt.length === 0) throw new InputError("prompt", "is required: what the video should show");
  if (asked.seconds !== undefined && !SECONDS.test(asked.seconds)) throw new InputError("seconds", `"${asked.seconds.slice(0, 20)}" is not a whole number of seconds`, 'whole seconds as a string, e.g. "4"');
  if (asked.size !== undefined && parseSize(asked.size) === null) throw new InputError("size", `"${asked.size.slice(0, 20)}" is not WxH`, '"WxH", e.g. "1280x720"');
  const common: CommonRequest = {
    task: "video",
    prompt: asked.prompt,
    ...(asked.seconds !== undefined ? { duration_s: Number(asked.seconds) } : {}),
    ...(asked.size !== undefined ? { size: asked.size } : {}),
    ...(asked.firstFrame !== undefined ? { first_frame: asked.firstFrame } : {}),
  };
  const ref = refOf(OPENAI_VIDEO_REF_PREFIX, `${asked.seconds ?? ""}s-${asked.size ?? ""}-`);
  const created = await submitJob(runtime, caller, { ref, request: { common, targets, routeBy, fallbackOnFailure: false }, notifyUrl: null }, idempotency);
  return created.job;
}

/** A video of the caller's by id: a job made by `makeVideo`; anything else is not found. */
export async function visibleVideo(runtime: Runtime, caller: Caller, id: string): Promise<Job> {
  const job = await visibleJob(runtime, caller, id);
  if (!job.ref.startsWith(OPENAI_VIDEO_REF_PREFIX)) throw new NotFoundError(`no video ${id}`);
  return job;
}

/** The caller's videos newest first, a page of `limit` after the video `after` (a cursor, as OpenAI's lists take it). */
export async function listVideos(runtime: Runtime, caller: Caller, after: string | undefined, limit: number): Promise<{ jobs: Job[]; hasMore: boolean }> {
  const olderThan = after === undefined ? {} : { olderThan: await visibleVideo(runtime, caller, after).then((job) => ({ createdAt: job.createdAt, id: job.id })) };
  const page = await listJobs(runtime, caller, { refPrefix: OPENAI_VIDEO_REF_PREFIX, ...olderThan }, limit);
  return { jobs: page.jobs, hasMore: page.next !== null };
}

/** `DELETE /v1/videos/{id}`: an unfinished video is cancelled as `POST /v1/jobs/{id}/cancel` cancels; an ended one is kept (its spend and outputs are records). */
export async function deleteVideo(runtime: Runtime, caller: Caller, id: string): Promise<{ job: Job; outcome: CancelOutcome }> {
  const job = await visibleVideo(runtime, caller, id);
  return { job, outcome: await cancelJob(runtime, job) };
}

/** OpenAI's video status of a job. */
export type VideoStatus = "queued" | "in_progress" | "completed" | "failed";

export function videoStatusOf(job: Pick<Job, "state">): VideoStatus {
  if (job.state === "queued") return "queued";
  if (job.state === "succeeded") return "completed";
  return isTerminal(job.state) ? "failed" : "in_progress";
}

/**
 * How far a video is, 0 to 100: 0 queued, 1 sent, then as far along as its
 * model's learned times from submit to saved results say (`shareDoneAt`, of
 * which its expected finish is made too; at most 99: done is said by the
 * status), 99 while its result is saved, 100 completed. It never falls as
 * the job ages. With no pace learned yet (`share` null: the model's first
 * job) a running job stays at 1 until it is saved. An ended job that did not
 * succeed is 0.
 */
export function videoProgress(job: Pick<Job, "state">, share: number | null): number {
  if (job.state === "succeeded") return 100;
  if (job.state === "queued" || isTerminal(job.state)) return 0;
  if (job.state === "capturing") return 99;
  if (job.state !== "running" || share === null) return 1;
  return Math.min(99, Math.max(1, Math.floor(99 * share)));
}

/** The seconds and size a video was asked with, kept in its ref; null where not asked (its saved output says them once made). */
export function videoAskedOf(job: Pick<Job, "ref">): { seconds: string | null; size: string | null } {
  const match = VIDEO_REF.exec(job.ref);
  return { seconds: match?.[1] ? match[1] : null, size: match?.[2] ?? null };
}

import { jobJson, type JobJson } from "../../cli/job-json.js";
import { checkOutputFolder, newJobOf, PreparedInputError, prepareJob, requireConfigured, routeJson, sameRequest, type PreparedJob } from "../../cli/prepare.js";
import type { Runtime } from "../../cli/runtime.js";
import { resolveOutputLocation } from "../../outputs/location.js";
import type { ImageInput } from "../../core/common-request.js";
import { InputError, UnsafeUrlError } from "../../core/errors.js";
import { imageTypeOf, IMAGE_TYPES_ALLOWED } from "../../core/image-type.js";
import { newId } from "../../core/ids.js";
import { JOB_STATES, type Job, type JobEvent, type JobOutput, type JobState } from "../../core/job.js";
import { redactUrl } from "../../core/redact.js";
import { validateRef, validateRefPrefix } from "../../core/ref.js";
import { assertSafeUrl } from "../../core/url-safety.js";
import { checkBudget } from "../../engine/budget.js";
import { routedRequestFrom, type RoutedRequest } from "../../engine/route.js";
import { PROVIDER_IDS, type JobRequest, type ProviderId } from "../../providers/adapter.js";
import type { JobFilter } from "../../store/store.js";
import { defaultOutputs } from "../../outputs/by-location.js";
import { rememberingFolderChecks } from "../../outputs/local-folder.js";
import { shownNotifyUrl } from "../notify-urls.js";
import { canSee, type Caller } from "./caller.js";
import { ApiError } from "./errors.js";

/**
 * The output folder proved writable before a job is accepted, remembered for
 * a second as the engine does: a probe file made and removed for each of
 * hundreds of submits a second queued behind one another in the file system.
 */
export const apiFolderChecks = rememberingFolderChecks(defaultOutputs, () => Date.now());

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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const DATA_URL = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]+)$/i;

/**
 * An image in an API request: an http(s) URL as given, or the bytes of a
 * `data:image/…;base64,` URL. A bare string is never a path: the API reads
 * no file of the machine it runs on.
 */
export function apiImage(text: string, field: string): ImageInput {
  if (/^https?:\/\//i.test(text)) return text;
  const data = DATA_URL.exec(text);
  if (!data) throw new InputError(field, "must be an http(s) URL or a data:image/…;base64 URL (the API reads no file of its server)", "https://… or data:image/png;base64,…");
  const bytes = Buffer.from(data[2]!, "base64");
  if (imageTypeOf(bytes) === null) throw new InputError(field, `carries data that is not ${IMAGE_TYPES_ALLOWED} (judged by its first bytes)`, `${IMAGE_TYPES_ALLOWED} data`);
  return { fileName: `${field.replace(/[^a-z0-9_]/gi, "_")}.${data[1]!.split("/")[1]!.replace("jpeg", "jpg")}`, bytes };
}

const NATIVE_KEYS = new Set(["provider", "model", "operation", "input", "images"]);

/** A job request from an API body (a batch line's shape without `ref` and `notify_url`): native or common. */
export function requestOfBody(body: Record<string, unknown>, skip: readonly string[]): JobRequest | RoutedRequest {
  if (body.task !== undefined) return routedRequestFrom(body, apiImage, skip);
  for (const key of Object.keys(body)) {
    if (!NATIVE_KEYS.has(key) && !skip.includes(key)) throw new InputError(key, "is not a field of a native request (one with task is a common request)", [...NATIVE_KEYS].join(", "));
  }
  if (typeof body.provider !== "string" || !(PROVIDER_IDS as readonly string[]).includes(body.provider)) {
    throw new InputError("provider", `must be one of ${PROVIDER_IDS.join(", ")} (or give task, for a common request)`, PROVIDER_IDS.join(", "));
  }
  if (typeof body.model !== "string" || body.model.length === 0) throw new InputError("model", "is required: the provider's model or endpoint");
  if (body.operation !== undefined && (typeof body.operation !== "string" || body.operation.length === 0)) throw new InputError("operation", "must be a non-empty string");
  if (!isRecord(body.input)) throw new InputError("input", "must be an object of the provider's native fields");
  let images: ImageInput[] | undefined;
  if (body.images !== undefined) {
    if (!Array.isArray(body.images)) throw new InputError("images", "must be a list of image URLs");
    images = body.images.map((image, index) => {
      if (typeof image !== "string") throw new InputError(`images[${index}]`, "must be an image URL");
      return apiImage(image, `images[${index}]`);
    });
  }
  return {
    provider: body.provider as ProviderId,
    model: body.model,
    ...(typeof body.operation === "string" ? { operation: body.operation } : {}),
    input: body.input,
    ...(images?.length ? { images } : {}),
  };
}

/** The `notify_url` of a request, held to the rule for provider URLs (https, no private, loopback or metadata host). */
export async function checkNotifyUrl(runtime: Runtime, value: unknown): Promise<string | null> {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new InputError("notify_url", "must be a URL string");
  try {
    await assertSafeUrl(value, { allowHttp: runtime.config.allowPrivateUrls, allowPrivate: runtime.config.allowPrivateUrls });
  } catch (error) {
    // The refusal quotes the URL: only as redactUrl shows it (its path or query may be the receiver's token).
    if (error instanceof UnsafeUrlError) throw new InputError("notify_url", `refused URL ${redactUrl(value)}: ${error.reason}`, "a public https URL");
    throw error;
  }
  return value;
}

/** Validates, estimates and judges a request as the CLI does; its errors name the request's own fields. */
export async function prepareForApi(runtime: Runtime, ref: string, request: JobRequest | RoutedRequest, origin = "request"): Promise<PreparedJob> {
  try {
    return await prepareJob(runtime, origin, ref, request);
  } catch (error) {
    if (error instanceof PreparedInputError) throw error.inner;
    throw error;
  }
}

/** The answer of `POST /v1/quote` (and the dashboard's quote): what one request would cost and where it would go. */
export interface ApiQuote {
  provider: ProviderId;
  model: string;
  estimate_micro_usd: number | null;
  source: string;
  warnings: string[];
  target?: string;
  route?: Array<{ target: string; estimate_micro_usd: number | null }>;
  ineligible?: Array<{ target: string; reasons: string[] }>;
}

/** Quotes one request (native or common: its chosen target's), with warnings; nothing is stored or sent. */
export async function quoteOf(runtime: Runtime, body: unknown): Promise<ApiQuote> {
  if (!isRecord(body)) throw new InputError("body", "must be a JSON object: one request");
  const prepared = await prepareForApi(runtime, "quote", requestOfBody(body, ["ref", "notify_url"]));
  return {
    provider: prepared.validated.provider,
    model: prepared.validated.model,
    estimate_micro_usd: prepared.estimate.microUsd,
    source: prepared.estimate.source,
    warnings: prepared.validated.warnings,
    ...routeJson(prepared.route),
  };
}

/** What the caller's token may still commit, checked before anything is stored (the engine holds it again at each send). */
export async function checkTokenBudget(runtime: Runtime, caller: Caller, items: readonly PreparedJob[]): Promise<string | null> {
  const budgetId = caller.token?.budgetId ?? null;
  if (budgetId === null) return null;
  const budget = await (await runtime.store()).budget(budgetId);
  if (!budget) return null;
  checkBudget(
    items.map((item) => ({ label: item.ref, estimateMicroUsd: item.estimate.microUsd })),
    budget.ceilingMicroUsd,
    false,
    budget.committedMicroUsd,
  );
  return budgetId;
}

/**
 * `POST /v1/jobs`: one job, native or common, with an optional `ref` (the
 * same ref and request answer the stored job, 200; another request under it,
 * 409) and `notify_url`. Everything is checked before it is stored.
 */
export async function createJob(runtime: Runtime, caller: Caller, body: unknown): Promise<{ status: 200 | 201; job: Job }> {
  if (!isRecord(body)) throw new InputError("body", "must be a JSON object: a native request (provider, model, input) or a common one (task, …)");
  const ref = body.ref === undefined ? newId("api") : validateRef(body.ref as string, "ref");
  const notifyUrl = await checkNotifyUrl(runtime, body.notify_url);
  const request = requestOfBody(body, ["ref", "notify_url"]);
  const prepared = await prepareForApi(runtime, ref, request);
  const store = await runtime.store();
  const [stored] = await store.jobsByRefs([ref]);
  if (stored) return { status: 200, job: sameJobOrConflict(caller, stored, prepared) };
  // A provider without its key would keep the job queued for ever: refused now, as the CLI refuses it.
  requireConfigured(runtime, [prepared]);
  const budgetId = await checkTokenBudget(runtime, caller, [prepared]);
  const outDir = resolveOutputLocation(runtime.config.outputDir);
  await checkOutputFolder(outDir, null, apiFolderChecks);
  const now = Date.now();
  const [result] = await store.insertJobs(
    [newJobOf(prepared, { now, batchId: null, outDir, budgetId, tokenId: caller.token?.id ?? null, notifyUrl })],
    now,
  );
  // Stored by another request between the look and the insert: answered as if it had been there.
  if (!result!.created) return { status: 200, job: sameJobOrConflict(caller, result!.job, prepared) };
  (await runtime.engine()).wake();
  return { status: 201, job: result!.job };
}

/** A ref already stored: its job when it is this caller's and this request, else a conflict that reveals nothing of another's job. */
export function sameJobOrConflict(caller: Caller, job: Job, prepared: Pick<PreparedJob, "validated" | "route">): Job {
  if (!canSee(caller, job)) throw new ApiError("ref_conflict", `ref "${job.ref}" is taken; refs are unique in a store`, { field: "ref" });
  if (!sameRequest(job, prepared)) {
    throw new ApiError("ref_conflict", `ref "${job.ref}" is already used by job ${job.id} with a different request`, { field: "ref" });
  }
  return job;
}

const LIST_LIMIT_DEFAULT = 50;
const LIST_LIMIT_MAX = 200;

/** A time given in a query: ISO 8601 or milliseconds since the epoch. */
export function timeOf(value: string, field: string): number {
  const at = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(at)) throw new InputError(field, `"${value}" is not a time`, "an ISO 8601 time (2026-11-27T10:00:00Z) or milliseconds since the epoch");
  return at;
}

/** A page position: the last job of the previous page, opaque to clients. */
export function encodeCursor(job: Pick<Job, "createdAt" | "id">): string {
  return Buffer.from(JSON.stringify([job.createdAt, job.id])).toString("base64url");
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [unknown, unknown];
    if (typeof createdAt === "number" && typeof id === "string") return { createdAt, id };
  } catch {
    // refused below
  }
  throw new InputError("cursor", "is not a cursor this API gave", "the next_cursor of a previous page");
}

/**
 * `GET /v1/jobs`: newest first, filtered by state (comma-separated),
 * provider, ref (exact) or the start of a ref (`ref_prefix`), batch and
 * creation time, a page of `limit` at a time. The
 * cursor is the last job of the page: jobs created meanwhile are newer, so
 * a page never repeats or skips one.
 */
export async function listJobs(runtime: Runtime, caller: Caller, query: Record<string, string | undefined>): Promise<{ jobs: Job[]; nextCursor: string | null }> {
  const filter: JobFilter = { newestFirst: true };
  if (query.state !== undefined) {
    const states = query.state.split(",").map((state) => state.trim());
    for (const state of states) if (!(JOB_STATES as readonly string[]).includes(state)) throw new InputError("state", `"${state}" is not a job state`, JOB_STATES.join(", "));
    filter.states = states as JobState[];
  }
  if (query.provider !== undefined) {
    if (!(PROVIDER_IDS as readonly string[]).includes(query.provider)) throw new InputError("provider", `"${query.provider}" is not a provider`, PROVIDER_IDS.join(", "));
    filter.provider = query.provider as ProviderId;
  }
  if (query.ref !== undefined) filter.ref = query.ref;
  if (query.ref_prefix !== undefined) filter.refPrefix = validateRefPrefix(query.ref_prefix, "ref_prefix");
  if (query.batch !== undefined) filter.batchId = query.batch;
  if (query.created_after !== undefined) filter.createdAfter = timeOf(query.created_after, "created_after");
  if (query.created_before !== undefined) filter.createdBefore = timeOf(query.created_before, "created_before");
  if (query.cursor !== undefined) filter.olderThan = decodeCursor(query.cursor);
  let limit = LIST_LIMIT_DEFAULT;
  if (query.limit !== undefined) {
    limit = Number(query.limit);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) throw new InputError("limit", `"${query.limit}" is not a page size`, `1 to ${LIST_LIMIT_MAX}`);
  }
  if (!caller.admin) {
    if (caller.token === null) return { jobs: [], nextCursor: null };
    filter.tokenId = caller.token.id;
  }
  // One more than the page says whether there is a next one.
  const jobs = await (await runtime.store()).listJobs({ ...filter, limit: limit + 1 });
  const page = jobs.slice(0, limit);
  return { jobs: page, nextCursor: jobs.length > limit ? encodeCursor(page.at(-1)!) : null };
}

/** The job by id, when the caller may see it; otherwise not found (whether it exists is not said). */
export async function visibleJob(runtime: Runtime, caller: Caller, id: string): Promise<Job> {
  const job = await (await runtime.store()).getJob(id);
  if (!job || !canSee(caller, job)) throw new ApiError("not_found", `no job ${id}`);
  return job;
}

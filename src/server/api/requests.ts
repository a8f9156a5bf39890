import type { ImageInput } from "../../core/common-request.js";
import { readCancelAfterHeader, readCancelAfterS } from "../../core/deadline.js";
import { InputError } from "../../core/errors.js";
import { imageTypeOf, IMAGE_TYPES_ALLOWED } from "../../core/image-type.js";
import { JOB_STATES, type Job, type JobState } from "../../core/job.js";
import { PROVIDER_IDS, type ProviderId } from "../../core/provider-id.js";
import { validateRefPrefix } from "../../core/ref.js";
import { checkWellFormed } from "../../core/well-formed.js";
import { isUtf8 } from "node:buffer";
import { createHash } from "node:crypto";
import { ApiError } from "./errors.js";
import { type IdempotencyRequest, type JobSubmission, validateIdempotencyKey } from "../../app/intake.js";
import type { JobListFilter } from "../../app/queries.js";
import { routedRequestFrom, type RoutedRequest } from "../../engine/route.js";
import type { JobRequest } from "../../providers/adapter.js";

/** A body's text: JSON is UTF-8 (RFC 8259 §8.1), and bytes that are not would be read as U+FFFD, another text than the one sent. */
export function utf8Body(raw: Buffer): string {
  if (!isUtf8(raw)) throw new ApiError("invalid_json", "the body is not UTF-8 text (JSON is UTF-8, RFC 8259 §8.1)");
  return raw.toString("utf8");
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

export function decodeCursor(cursor: string): { createdAt: number; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [unknown, unknown];
    if (typeof createdAt === "number" && typeof id === "string") return { createdAt, id };
  } catch {
    // refused below
  }
  throw new InputError("cursor", "is not a cursor this API gave", "the next_cursor of a previous page");
}

/**
 * The `Cancel-After` header (`90s`, `5m`, `1h`) in seconds, null when absent:
 * it stands for `cancel_after_s`, so a body (or a batch line) giving that too is refused, naming the header.
 */
export function cancelAfterOfHeader(header: string | string[] | undefined): number | null {
  if (header === undefined) return null;
  return readCancelAfterHeader(Array.isArray(header) ? header.join(",") : header);
}

/** A job body of `POST /v1/jobs` (and the dashboard's form): its ref, where to notify, and the request itself. */
export function submissionOfBody(body: unknown): JobSubmission {
  if (!isRecord(body)) throw new InputError("body", "must be a JSON object: a native request (provider, model, input) or a common one (task, …)");
  return {
    ref: body.ref === undefined ? null : body.ref,
    notifyUrl: body.notify_url,
    request: requestOfBody(body, ["ref", "notify_url", "cancel_after_s"]),
    cancelAfterS: readCancelAfterS(body.cancel_after_s, "cancel_after_s"),
  };
}

/** A request to quote: a job body, whose ref and notify_url are accepted and ignored. */
export function quotedRequestOfBody(body: unknown): JobRequest | RoutedRequest {
  if (!isRecord(body)) throw new InputError("body", "must be a JSON object: one request");
  return requestOfBody(body, ["ref", "notify_url", "cancel_after_s"]);
}

/**
 * The filters of a job listing (`GET /v1/jobs`, the dashboard's table):
 * state (comma-separated), provider, ref (exact) or the start of a ref
 * (`ref_prefix`), batch, creation time, a page of `limit` after `cursor`.
 */
export function jobListQuery(query: Record<string, string | undefined>): { filter: JobListFilter; limit: number } {
  const filter: JobListFilter = {};
  if (query.state !== undefined) {
    const states = query.state.split(",").map((state) => state.trim());
    for (const state of states) if (!(JOB_STATES as readonly string[]).includes(state)) throw new InputError("state", `"${state}" is not a job state`, JOB_STATES.join(", "));
    filter.states = states as JobState[];
  }
  if (query.provider !== undefined) {
    if (!(PROVIDER_IDS as readonly string[]).includes(query.provider)) throw new InputError("provider", `"${query.provider}" is not a provider`, PROVIDER_IDS.join(", "));
    filter.provider = query.provider as ProviderId;
  }
  if (query.ref !== undefined) filter.ref = checkWellFormed(query.ref, "ref");
  if (query.ref_prefix !== undefined) filter.refPrefix = validateRefPrefix(query.ref_prefix, "ref_prefix");
  if (query.batch !== undefined) filter.batchId = checkWellFormed(query.batch, "batch");
  if (query.created_after !== undefined) filter.createdAfter = timeOf(query.created_after, "created_after");
  if (query.created_before !== undefined) filter.createdBefore = timeOf(query.created_before, "created_before");
  if (query.cursor !== undefined) filter.olderThan = decodeCursor(query.cursor);
  let limit = LIST_LIMIT_DEFAULT;
  if (query.limit !== undefined) {
    limit = Number(query.limit);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) throw new InputError("limit", `"${query.limit}" is not a page size`, `1 to ${LIST_LIMIT_MAX}`);
  }
  return { filter, limit };
}

/** A JSON value written with every object's keys in order: two bodies that differ only in key order are one request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * The `Idempotency-Key` header of a POST that creates jobs, with the sha256
 * of what the request asked (its parsed body, keys in order): null without
 * the header. The route is part of what was asked: a key sent to
 * `/v1/jobs` and then to `/v1/batches` is two requests.
 */
export function idempotencyOf(header: string | string[] | undefined, route: string, body: unknown): IdempotencyRequest | null {
  if (header === undefined) return null;
  const key = validateIdempotencyKey(Array.isArray(header) ? header.join(",") : header);
  return { key, requestSha256: createHash("sha256").update(route).update("\u0000").update(canonicalJson(body)).digest("hex") };
}

import { createHash } from "node:crypto";
import type { ImageInput } from "../core/common-request.js";
import { imageTypeOf } from "../core/image-type.js";
import type { Job } from "../core/job.js";
import { displayUrl } from "../core/redact.js";
import type { RoutedRequest } from "../engine/route.js";
import type { JobRequest } from "../providers/adapter.js";

/**
 * What produced a job's output (issue 37, part 4): the request it sends,
 * with the files it carries named by name, type, size and sha256 (never
 * their bytes) and links shown without their query (where signatures live).
 * Built from what the job stores: its body, and the names of the local files
 * it was given, kept in its facts when it was prepared.
 */

/** A local file given with a request, as the job keeps it (not its bytes). */
export interface InputFile {
  /** The request's field that carried it (`images[0]`, `first_frame`). */
  field: string;
  name: string;
  type: string | null;
  bytes: number;
  sha256: string;
}

/** The facts key under which a prepared job keeps its input files (every face prepares through the application). */
export const INPUT_FILES_FACT = "inputFiles";

function described(field: string, value: ImageInput, files: InputFile[]): void {
  if (typeof value === "string") return;
  files.push({ field, name: value.fileName, type: imageTypeOf(value.bytes), bytes: value.bytes.length, sha256: createHash("sha256").update(value.bytes).digest("hex") });
}

/** The local files a request carries, in the order of its fields. */
export function inputFilesOf(request: JobRequest | RoutedRequest): InputFile[] {
  const files: InputFile[] = [];
  if ("common" in request) {
    const common = request.common;
    for (const [index, image] of (common.images ?? []).entries()) described(`images[${index}]`, image, files);
    if (common.first_frame !== undefined) described("first_frame", common.first_frame, files);
    if (common.last_frame !== undefined) described("last_frame", common.last_frame, files);
    for (const [index, image] of (common.reference_images ?? []).entries()) described(`reference_images[${index}]`, image, files);
    return files;
  }
  for (const [index, image] of (request.images ?? []).entries()) described(`images[${index}]`, image, files);
  return files;
}

/** The files a job keeps in its facts (none for a job stored before they were kept). */
export function inputFilesOfJob(job: Pick<Job, "facts">): InputFile[] {
  const kept = job.facts[INPUT_FILES_FACT];
  return Array.isArray(kept) ? (kept as InputFile[]) : [];
}

/** How a file carried in a request's body is shown in its place. */
export interface FileMention {
  file: { name: string | null; type: string | null; bytes: number; sha256: string };
}

/** Below this many characters a base64-looking text is taken as text: a word, an id. */
const MIN_BASE64_CHARS = 64;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const DATA_URL = /^data:([^;,]*)(;[^,]*)?;base64,(.*)$/s;

/** The bytes of a file embedded as text (a base64 `data:` URL, or bare base64 of an image), or null for any other text. */
function embedded(text: string): { bytes: Buffer; type: string | null } | null {
  const dataUrl = DATA_URL.exec(text);
  if (dataUrl) {
    const bytes = Buffer.from(dataUrl[3]!, "base64");
    return { bytes, type: imageTypeOf(bytes) ?? (dataUrl[1] || null) };
  }
  if (text.length < MIN_BASE64_CHARS || !BASE64.test(text)) return null;
  const bytes = Buffer.from(text, "base64");
  const type = imageTypeOf(bytes);
  return type === null ? null : { bytes, type };
}

function shownValue(value: unknown, names: ReadonlyMap<string, string>): unknown {
  if (typeof value === "string") {
    if (/^https?:\/\//i.test(value)) return displayUrl(value);
    const file = embedded(value);
    if (!file) return value;
    const sha256 = createHash("sha256").update(file.bytes).digest("hex");
    return { file: { name: names.get(sha256) ?? null, type: file.type, bytes: file.bytes.length, sha256 } } satisfies FileMention;
  }
  if (Array.isArray(value)) return value.map((each) => shownValue(each, names));
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, each]) => [key, shownValue(each, names)]));
  return value;
}

/** A job's request as every face shows it (`show`, the API's `request`, the dashboard's job page). */
export interface RequestView {
  provider: string;
  model: string;
  operation: string | null;
  /** The fields sent (the body), embedded files replaced by a `FileMention`, links without their query. */
  input: Record<string, unknown>;
  /** The local files the request carried (uploaded at submit time by some providers, so not all appear in `input`). */
  files: InputFile[];
  /** A common request's targets: the one it is on, those tried before it and those left. */
  route: { current: string; tried: string[]; next: string[] } | null;
}

export function requestView(job: Pick<Job, "provider" | "model" | "operation" | "body" | "facts" | "route">): RequestView {
  const files = inputFilesOfJob(job);
  const names = new Map(files.map((file) => [file.sha256, file.name]));
  return {
    provider: job.provider,
    model: job.model,
    operation: job.operation,
    input: shownValue(job.body, names) as Record<string, unknown>,
    files,
    route: job.route ? { current: job.route.current, tried: job.route.tried.map((attempt) => attempt.name), next: job.route.next.map((step) => step.name) } : null,
  };
}

/** The request as lines of text (`show`): one field a line, a file by its name, type, size and sha256. */
export function requestLines(view: RequestView): string[] {
  const lines = [`  target ${view.provider}/${view.model}${view.operation ? `/${view.operation}` : ""}`];
  for (const [field, value] of Object.entries(view.input)) lines.push(`  ${field}: ${JSON.stringify(value)}`);
  for (const file of view.files) lines.push(`  file ${file.field}: ${file.name} (${file.type ?? "type not recognised"}, ${file.bytes} bytes, sha256 ${file.sha256})`);
  if (view.route) lines.push(`  route: ${[...view.route.tried, `[${view.route.current}]`, ...view.route.next].join(" → ")}`);
  return lines;
}

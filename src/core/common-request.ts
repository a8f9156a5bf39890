import { InputError } from "./errors.js";

/**
 * One request shape for every provider (issue 11), in the words the AI SDK and
 * OpenRouter use: a task, a prompt and what the picture or clip should be.
 * Each provider's adapter maps it onto its native body (`fromCommon`) or says
 * which field it cannot honour; nothing is dropped silently.
 *
 * Field names are the wire names (snake_case), the same in batch lines, the
 * library and messages, so an error names the field the user wrote.
 */
export type CommonTask = "image" | "video";
export const COMMON_TASKS: readonly CommonTask[] = ["image", "video"];

/** A reference image: an http(s) URL, or a local file already read (and checked to be an image). */
export type ImageInput = string | { fileName: string; bytes: Buffer };

export type VideoResolution = "480p" | "720p" | "1080p";
export const VIDEO_RESOLUTIONS: readonly VideoResolution[] = ["480p", "720p", "1080p"];
/** The frame height each resolution names (the short side for portrait clips too). */
export const RESOLUTION_LINES: Readonly<Record<VideoResolution, number>> = { "480p": 480, "720p": 720, "1080p": 1080 };

export interface Dimensions {
  width: number;
  height: number;
}

export interface CommonRequest {
  task: CommonTask;
  prompt?: string;
  /** "WxH" as given; `dimensions` is its parsed value. */
  size?: string;
  /** "W:H", or (video) "adaptive": the provider picks the ratio from the first frame. */
  aspect_ratio?: string;
  seed?: number;
  /** Image: how many variations from one request. */
  n?: number;
  /** Image: reference images (editing, style, subject). */
  images?: ImageInput[];
  /** Video: length in seconds. */
  duration_s?: number;
  resolution?: VideoResolution;
  generate_audio?: boolean;
  first_frame?: ImageInput;
  last_frame?: ImageInput;
  /** Video: images the clip should draw its subjects or style from (not frames). */
  reference_images?: ImageInput[];
  /** Native fields per provider (`{"d": {"output_format": "png"}}`), merged over the mapped body last. */
  provider_options?: Record<string, Record<string, unknown>>;
}

/** A common field a target cannot honour, and why: the target is then not eligible for the request. */
export interface Unhonoured {
  field: string;
  reason: string;
}

/**
 * What an adapter made of a common request for one of its models: the native
 * request (validated next by the adapter's own `validate`, like any native
 * request) and warnings naming each value it had to change (D's multiples of
 * 16); or the fields it cannot honour.
 */
export type CommonMapping<Request> = { ok: true; request: Request; warnings: string[] } | { ok: false; unhonoured: Unhonoured[] };

const SIZE_PATTERN = /^([1-9]\d{0,5})x([1-9]\d{0,5})$/;
const RATIO_PATTERN = /^([1-9]\d{0,3}):([1-9]\d{0,3})$/;
export const SIZE_ALLOWED = '"WxH" in pixels, e.g. "1024x768"';
export const RATIO_ALLOWED = '"W:H", e.g. "16:9"';

/** "1024x768" → {width: 1024, height: 768}; null when it is not that form. */
export function parseSize(size: string): Dimensions | null {
  const match = SIZE_PATTERN.exec(size);
  return match ? { width: Number(match[1]), height: Number(match[2]) } : null;
}

/** "16:9" → {width: 16, height: 9}; null when it is not that form ("adaptive" included). */
export function parseRatio(ratio: string): Dimensions | null {
  const match = RATIO_PATTERN.exec(ratio);
  return match ? { width: Number(match[1]), height: Number(match[2]) } : null;
}

function greatestCommonDivisor(left: number, right: number): number {
  return right === 0 ? left : greatestCommonDivisor(right, left % right);
}

/** The ratio of a size in lowest terms ("1920x1080" → "16:9"). */
export function ratioOfSize(size: Dimensions): string {
  const divisor = greatestCommonDivisor(size.width, size.height);
  return `${size.width / divisor}:${size.height / divisor}`;
}

/** Whether two ratios are the same within 1% (1344x768 is 7:4, which a provider that takes 16:9 would render at 1.75 vs 1.78). */
export function sameRatio(left: Dimensions, right: Dimensions, tolerance = 0.01): boolean {
  const a = left.width / left.height;
  const b = right.width / right.height;
  return Math.abs(a - b) / b <= tolerance;
}

/** Reference images as a label and value for messages: a URL as given, a file by its name. */
export function describeImage(image: ImageInput): string {
  return typeof image === "string" ? image : image.fileName;
}

/** The common fields a request sets, in a stable order (for mapping tables and messages). */
export const COMMON_FIELDS = [
  "prompt",
  "size",
  "aspect_ratio",
  "seed",
  "n",
  "images",
  "duration_s",
  "resolution",
  "generate_audio",
  "first_frame",
  "last_frame",
  "reference_images",
] as const satisfies ReadonlyArray<keyof CommonRequest>;
export type CommonField = (typeof COMMON_FIELDS)[number];

const IMAGE_FIELDS: ReadonlySet<CommonField> = new Set(["prompt", "size", "aspect_ratio", "seed", "n", "images"]);
const VIDEO_FIELDS: ReadonlySet<CommonField> = new Set([
  "prompt",
  "size",
  "aspect_ratio",
  "seed",
  "duration_s",
  "resolution",
  "generate_audio",
  "first_frame",
  "last_frame",
  "reference_images",
]);

/** The fields of `request` that are set (not undefined). */
export function fieldsSet(request: CommonRequest): CommonField[] {
  return COMMON_FIELDS.filter((field) => request[field] !== undefined);
}

/**
 * Checks a common request's own shape, the same for every target: each field
 * belongs to the task and holds a value of its form. What a given model can
 * honour is its adapter's question (`fromCommon`). Throws InputError naming
 * the first bad field.
 */
export function checkCommonRequest(request: CommonRequest): void {
  if (!COMMON_TASKS.includes(request.task)) throw new InputError("task", `must be image or video, got ${JSON.stringify(request.task)}`, "image, video");
  const fields = request.task === "image" ? IMAGE_FIELDS : VIDEO_FIELDS;
  for (const field of fieldsSet(request)) {
    if (!fields.has(field)) throw new InputError(field, `is not a field of a ${request.task} request`, [...fields].join(", "));
  }
  if (request.prompt !== undefined && (typeof request.prompt !== "string" || request.prompt.trim().length === 0)) {
    throw new InputError("prompt", "must be a non-empty string");
  }
  if (request.size !== undefined && (typeof request.size !== "string" || parseSize(request.size) === null)) {
    throw new InputError("size", `must be width x height in pixels, got ${JSON.stringify(request.size)}`, SIZE_ALLOWED);
  }
  if (request.aspect_ratio !== undefined) {
    const adaptive = request.task === "video" && request.aspect_ratio === "adaptive";
    if (!adaptive && (typeof request.aspect_ratio !== "string" || parseRatio(request.aspect_ratio) === null)) {
      const allowed = request.task === "video" ? `${RATIO_ALLOWED}, or "adaptive" (the ratio of the first frame)` : RATIO_ALLOWED;
      throw new InputError("aspect_ratio", `must be a ratio of whole numbers, got ${JSON.stringify(request.aspect_ratio)}`, allowed);
    }
  }
  if (request.size !== undefined && request.aspect_ratio !== undefined) {
    const ratio = parseRatio(request.aspect_ratio);
    if (ratio === null || !sameRatio(parseSize(request.size)!, ratio)) {
      throw new InputError("aspect_ratio", `${request.aspect_ratio} disagrees with size ${request.size}`, "size alone, aspect_ratio alone, or both describing the same shape");
    }
  }
  if (request.seed !== undefined && !(typeof request.seed === "number" && Number.isSafeInteger(request.seed) && request.seed >= 0)) {
    throw new InputError("seed", `must be a whole number from 0, got ${JSON.stringify(request.seed)}`);
  }
  if (request.n !== undefined && !(typeof request.n === "number" && Number.isSafeInteger(request.n) && request.n >= 1)) {
    throw new InputError("n", `must be a whole number of images from 1, got ${JSON.stringify(request.n)}`);
  }
  if (request.duration_s !== undefined && !(typeof request.duration_s === "number" && Number.isFinite(request.duration_s) && request.duration_s > 0)) {
    throw new InputError("duration_s", `must be a positive number of seconds, got ${JSON.stringify(request.duration_s)}`);
  }
  if (request.resolution !== undefined && !VIDEO_RESOLUTIONS.includes(request.resolution)) {
    throw new InputError("resolution", `must be one of ${VIDEO_RESOLUTIONS.join(", ")}, got ${JSON.stringify(request.resolution)}`, VIDEO_RESOLUTIONS.join(", "));
  }
  if (request.resolution !== undefined && request.size !== undefined) {
    throw new InputError("resolution", "and size both set the frame size", "one of resolution or size");
  }
  if (request.generate_audio !== undefined && typeof request.generate_audio !== "boolean") {
    throw new InputError("generate_audio", `must be true or false, got ${JSON.stringify(request.generate_audio)}`);
  }
  if (request.last_frame !== undefined && request.first_frame === undefined) {
    throw new InputError("last_frame", "needs first_frame: a clip is made between the two", "first_frame with last_frame, or first_frame alone");
  }
  if (request.aspect_ratio === "adaptive" && request.first_frame === undefined) {
    throw new InputError("aspect_ratio", '"adaptive" takes the ratio of the first frame, and no first_frame is given', `${RATIO_ALLOWED}, or "adaptive" with first_frame`);
  }
  if (request.prompt === undefined && request.first_frame === undefined) {
    throw new InputError("prompt", "is required (a video may instead start from first_frame)");
  }
}

/**
 * What a target does with a common request, for `mediagate models`: its task,
 * what it makes of each common field it honours (values, rounding, limits),
 * the fields it refuses, and how its price is formed. Written beside each
 * provider's `fromCommon`, which it describes.
 */
export interface CommonCapabilities {
  task: CommonTask;
  /** Each honoured field, with the values it takes and how they are sent. */
  honours: Partial<Record<CommonField, string>>;
  /** Fields this target never honours, with why (a request setting one is not sent here). */
  refuses: Partial<Record<CommonField, string>>;
  priceBasis: string;
}

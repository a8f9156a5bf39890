import { validationError } from "./errors.js";
import type { EOperationSpec } from "./operations.js";
import type { EUploadRecord, EUploads } from "./uploads.js";

/** spec E submit request: values seen for contentClass. */
export type EContentClass = "art" | "photo";

export interface EImageSize {
  width: number;
  height: number;
}

/** A submit body after validation. Fields the spec leaves unnamed are the sandbox's choices (README.md). */
export interface EJobRequest {
  prompt?: string;
  contentClass?: EContentClass;
  numVariations: number;
  /** One per output; drawn when not given. */
  seeds: number[];
  size: EImageSize;
  customModelId?: string;
  source?: EUploadRecord;
  mask?: EUploadRecord;
}

/** Sandbox choices where the spec is silent (no prompt length limit is shown, so any length a client sends is accepted). */
const MAX_VARIATIONS = 4;
const MAX_SEED = 2_147_483_647;
const MIN_SIDE = 64;
const MAX_SIDE = 4096;
export const E_DEFAULT_SIZE: EImageSize = { width: 1024, height: 1024 };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isInteger(value: unknown, min: number, max: number): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;
}

function parseSize(value: unknown): EImageSize {
  if (!isObject(value)) throw validationError("size", "must be an object { width, height }");
  for (const side of ["width", "height"] as const) {
    if (!isInteger(value[side], MIN_SIDE, MAX_SIDE)) {
      throw validationError(`size.${side}`, `must be an integer from ${MIN_SIDE} to ${MAX_SIDE}`);
    }
  }
  return { width: value.width as number, height: value.height as number };
}

function clampSize(size: EImageSize): EImageSize {
  const clamp = (side: number) => Math.min(MAX_SIDE, Math.max(MIN_SIDE, side));
  return { width: clamp(size.width), height: clamp(size.height) };
}

/** `{ "source": { "uploadId": "…" } }`, the sandbox's shape for an image input (its real name is not shown). */
function uploadReference(body: Record<string, unknown>, field: "image" | "mask"): string {
  const reference = body[field];
  if (reference === undefined) throw validationError(`${field}.source.uploadId`, "is required for this operation");
  const source = isObject(reference) ? reference.source : undefined;
  if (!isObject(source)) throw validationError(`${field}.source`, "must be an object { uploadId }");
  if (source.uploadId === undefined && source.url !== undefined) {
    throw validationError(`${field}.source.url`, "the sandbox takes only uploadId references (POST /v2/storage/image)");
  }
  if (typeof source.uploadId !== "string" || source.uploadId === "") {
    throw validationError(`${field}.source.uploadId`, "must be a non-empty string");
  }
  return source.uploadId;
}

export interface ParseContext {
  clientId: string;
  uploads: EUploads;
  random: () => number;
}

/** Validates a submit body for one operation. Fields the sandbox does not know (style, structure, ...) are accepted and ignored. */
export function parseSubmitRequest(body: unknown, operation: EOperationSpec, context: ParseContext): EJobRequest {
  if (!isObject(body)) throw validationError("body", "must be a JSON object");

  let prompt: string | undefined;
  if (body.prompt !== undefined) {
    if (typeof body.prompt !== "string" || body.prompt.trim() === "") throw validationError("prompt", "must be a non-empty string");
    prompt = body.prompt;
  } else if (operation.promptRequired) {
    throw validationError("prompt", "is required");
  }

  if (body.contentClass !== undefined && body.contentClass !== "art" && body.contentClass !== "photo") {
    throw validationError("contentClass", 'must be "art" or "photo"');
  }
  const contentClass = body.contentClass as EContentClass | undefined;

  let seeds: number[] | undefined;
  if (body.seeds !== undefined) {
    const given = body.seeds;
    if (!Array.isArray(given) || given.length < 1 || given.length > MAX_VARIATIONS) {
      throw validationError("seeds", `must be an array of 1 to ${MAX_VARIATIONS} integers`);
    }
    given.forEach((seed, index) => {
      if (!isInteger(seed, 0, MAX_SEED)) throw validationError(`seeds[${index}]`, `must be an integer from 0 to ${MAX_SEED}`);
    });
    seeds = given as number[];
  }
  let numVariations = seeds?.length ?? 1;
  if (body.numVariations !== undefined) {
    if (!isInteger(body.numVariations, 1, MAX_VARIATIONS)) {
      throw validationError("numVariations", `must be an integer from 1 to ${MAX_VARIATIONS}`);
    }
    if (seeds && seeds.length !== body.numVariations) throw validationError("seeds", "must have numVariations entries");
    numVariations = body.numVariations;
  }
  seeds ??= Array.from({ length: numVariations }, () => Math.floor(context.random() * 1_000_000));

  let customModelId: string | undefined;
  if (operation.customModel && body.customModelId !== undefined) {
    if (typeof body.customModelId !== "string" || body.customModelId === "") {
      throw validationError("customModelId", "must be a non-empty string");
    }
    customModelId = body.customModelId;
  }

  const source = operation.sourceImage
    ? context.uploads.resolve(context.clientId, uploadReference(body, "image"), "image.source.uploadId")
    : undefined;
  const mask = operation.mask
    ? context.uploads.resolve(context.clientId, uploadReference(body, "mask"), "mask.source.uploadId")
    : undefined;

  // Output size: as asked; else the source image's (when it is a PNG the sandbox can read); else 1024x1024.
  const size = body.size !== undefined ? parseSize(body.size) : clampSize(source?.size ?? E_DEFAULT_SIZE);

  return {
    ...(prompt !== undefined ? { prompt } : {}),
    ...(contentClass !== undefined ? { contentClass } : {}),
    numVariations,
    seeds,
    size,
    ...(customModelId !== undefined ? { customModelId } : {}),
    ...(source ? { source } : {}),
    ...(mask ? { mask } : {}),
  };
}

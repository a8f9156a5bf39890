import { createHash } from "node:crypto";
import { InputError } from "../../core/errors.js";
import { imageTypeOf } from "../../core/image-type.js";
import { longPromptWarnings } from "../../core/prompt-length.js";
import type { JobRequest, ValidatedRequest } from "../adapter.js";
import { SOURCE_IMAGE_FORMAT, type EFacts, type EPendingUpload, type EUploadMediaType } from "./facts.js";
import {
  E_DEFAULT_OPERATION,
  E_MODELS,
  E_OPERATION_INFO,
  isEModel,
  OPERATION_VALUES,
  operationOf,
  type EModel,
  type EOperation,
} from "./operations.js";

/** spec E submit request: contentClass "values seen: art, photo" — seen, not a closed list. */
const CONTENT_CLASSES_SEEN = ["art", "photo"];

/** The request fields the spec shows; every other field is passed through unchecked. */
const CHECKED_FIELDS = new Set(["prompt", "contentClass"]);

/** Where each operation's submit goes; fill, composite and similar paths may be overridden (they are not shown). */
export type EPathFor = (operation: EOperation, model: EModel) => string;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function modelOf(model: unknown): EModel {
  const allowed = `${E_MODELS.join(", ")} (the generate endpoint's version)`;
  if (typeof model !== "string" || model.trim().length === 0) throw new InputError("model", "is required", allowed);
  if (!isEModel(model)) throw new InputError("model", `"${model}" is not an E model`, allowed);
  return model;
}

function operationFrom(request: JobRequest, model: EModel): EOperation {
  if (request.operation === undefined) return E_DEFAULT_OPERATION;
  const operation = operationOf(request.operation);
  if (!operation) throw new InputError("operation", `"${request.operation}" is not an E operation`, OPERATION_VALUES);
  if (!E_OPERATION_INFO[operation].paths[model]) {
    // spec E Versioning: /v4/ is only the newer model's generate endpoint.
    throw new InputError("model", `${operation} has no ${model} endpoint: only generate-image has v4`, "v3");
  }
  return operation;
}

function checkPrompt(input: Record<string, unknown>, operation: EOperation): void {
  const prompt = input.prompt;
  if (prompt === undefined) {
    if (E_OPERATION_INFO[operation].promptRequired) throw new InputError("prompt", "is required: at least a text prompt");
    return;
  }
  if (typeof prompt !== "string" || prompt.trim().length === 0) throw new InputError("prompt", "must be a non-empty string");
}

function contentClassWarnings(input: Record<string, unknown>): string[] {
  const value = input.contentClass;
  if (value === undefined) return [];
  if (typeof value !== "string" || value.length === 0) throw new InputError("contentClass", "must be a non-empty string", CONTENT_CLASSES_SEEN.join(", "));
  if (CONTENT_CLASSES_SEEN.includes(value)) return [];
  return [`contentClass "${value}" is not one of the values E's spec has seen (${CONTENT_CLASSES_SEEN.join(", ")}); sent unchanged`];
}

/** The media type of the bytes by their signature, or null when mediagate does not recognise them. */
export function mediaTypeOf(bytes: Buffer): EUploadMediaType | null {
  return imageTypeOf(bytes);
}

/** The job's `images` as uploads for the operation's image fields. Pure: the bytes are hashed, not sent. */
function pendingUploads(request: JobRequest, operation: EOperation): EPendingUpload[] {
  const images = request.images ?? [];
  const fields = E_OPERATION_INFO[operation].imageFields;
  if (images.length === 0) return [];
  if (fields.length === 0) {
    throw new InputError("images", `${operation} takes no source image that E's spec shows`, "expand-image, fill-image, generate-object-composite, generate-similar-images");
  }
  if (images.length > fields.length) {
    throw new InputError(`images[${fields.length}]`, `${operation} takes at most ${fields.length} image${fields.length === 1 ? "" : "s"} (${fields.join(", ")}), got ${images.length}`);
  }
  return images.map((image, index) => {
    const label = `images[${index}]`;
    const field = fields[index]!;
    if (typeof image === "string") {
      // spec E Endpoints: a source image for image-to-image is uploaded to /v2/storage/image; no URL form is shown.
      throw new InputError(label, "E's spec shows source images only as uploads; a URL source is not shown", `a local file, or a native ${field} field in input (sent unchecked)`);
    }
    if (!Buffer.isBuffer(image.bytes) || image.bytes.length === 0) throw new InputError(label, `file ${image.fileName} is empty or was not read`, "a non-empty image file");
    if (request.input[field] !== undefined) throw new InputError(label, `${field} is also given in input: give it once`);
    const mediaType = mediaTypeOf(image.bytes);
    if (!mediaType) throw new InputError(`${label} (${image.fileName})`, "is not a PNG, JPEG or WebP image (the upload types E accepts are not shown)", "PNG, JPEG or WebP");
    return {
      field,
      fileName: image.fileName,
      mediaType,
      sha256: createHash("sha256").update(image.bytes).digest("hex"),
      byteLength: image.bytes.length,
      base64: image.bytes.toString("base64"),
    };
  });
}

/** Checks a job for E and builds the body sent as is (plus the upload references added at submit). Pure: no I/O. */
export function validateERequest(request: JobRequest, pathFor: EPathFor): ValidatedRequest {
  if (!isRecord(request.input)) throw new InputError("input", "must be an object");
  const model = modelOf(request.model);
  const operation = operationFrom(request, model);
  const info = E_OPERATION_INFO[operation];
  checkPrompt(request.input, operation);
  const warnings = contentClassWarnings(request.input);
  if (typeof request.input.prompt === "string") warnings.push(...longPromptWarnings("prompt", request.input.prompt, "E publishes no prompt length limit"));
  const uploads = pendingUploads(request, operation);
  const [sourceField] = info.imageFields;
  if (sourceField && uploads.length === 0 && request.input[sourceField] === undefined) {
    throw new InputError("images", `${operation} needs a source image`, `a local file (uploaded to E), or a native ${sourceField} field in input`);
  }

  // spec E submit request: the other options' names are not shown, so they are sent unchanged and the user is told.
  const unchecked = Object.keys(request.input).filter((field) => !CHECKED_FIELDS.has(field));
  warnings.push(...unchecked.map((field) => `${field} is not a field E's spec shows; sent unchanged and unchecked`));
  const path = pathFor(operation, model);
  if (!info.pathShown) warnings.push(`E's spec does not show the path of ${operation}; mediagate sends it to ${path}`);

  const facts: EFacts = {
    operation,
    model,
    path,
    pathShown: info.pathShown,
    uploads,
    sourceImageFormat: uploads.length > 0 ? SOURCE_IMAGE_FORMAT : null,
  };
  return { provider: "e", model, operation, body: { ...request.input }, warnings, facts: { ...facts } };
}

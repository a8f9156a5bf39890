import { InputError } from "../../core/errors.js";
import { imageTypeOf, IMAGE_TYPES_ALLOWED } from "../../core/image-type.js";
import type { JobRequest } from "../adapter.js";
import type { DReferenceFact } from "./facts.js";
import { imageSizeOf, imageSizeOfText, type ImageSize } from "../../core/image-size.js";

/** A reference image ready to send: its field, its value, and what was measured. */
export interface DReference {
  /** Where the user gave it, for messages: the field itself, or `images[2]`. */
  label: string;
  value: string;
  fact: DReferenceFact;
}

const REFERENCE_PREFIX = "input_image";
const FIELD_NAMES = "input_image, input_image_2, input_image_3, …";

/** spec D submit request: the first reference is `input_image`, the n-th `input_image_n` (n ≥ 2). */
export function referenceField(position: number): string {
  return position === 1 ? REFERENCE_PREFIX : `${REFERENCE_PREFIX}_${position}`;
}

/** The position a field names, or null when it is not one of the spec's names (`input_image_1`, `input_image_02`, `input_images`). */
function positionOf(field: string): number | null {
  if (field === REFERENCE_PREFIX) return 1;
  const match = /^input_image_([1-9]\d*)$/.exec(field);
  const position = match ? Number(match[1]) : NaN;
  return position >= 2 ? position : null;
}

export function isReferenceField(field: string): boolean {
  return field.startsWith(REFERENCE_PREFIX);
}

function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\//i.test(value)) return false;
  return URL.canParse(value);
}

function fact(field: string, from: DReferenceFact["from"], kind: DReferenceFact["kind"], size: ImageSize | null): DReferenceFact {
  return { field, from, kind, width: size?.width ?? null, height: size?.height ?? null, pixels: size ? size.width * size.height : null };
}

/**
 * Below this many decoded bytes a base64-looking value may as well be some
 * other token (D's value format is not shown), so it is sent as given with a
 * warning; no PNG, JPEG or WebP file is this small.
 */
const MIN_BASE64_DATA_BYTES = 16;

/** The bytes a value carries when it is image data by mediagate's format (bare base64, or a base64 `data:` URL), else null. */
function base64Data(value: string): Buffer | null {
  if (value.startsWith("data:")) {
    const comma = value.indexOf(",");
    if (comma < 0 || !value.slice(0, comma).endsWith(";base64")) return null;
    return Buffer.from(value.slice(comma + 1), "base64");
  }
  const compact = value.replace(/\s+/g, "");
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) return null;
  const bytes = Buffer.from(compact, "base64");
  return bytes.length >= MIN_BASE64_DATA_BYTES ? bytes : null;
}

/**
 * A native `input_image…` value, sent unchanged: an http(s) URL, or base64
 * data that must be an image (a `data:` URL always counts as data); any other
 * string is sent as given with a warning, since D's value format is not shown.
 */
function nativeReference(field: string, value: unknown): DReference {
  if (typeof value !== "string" || value.trim().length === 0) {
    throw new InputError(field, "must be a non-empty string", "an http(s) URL or base64 image data");
  }
  if (isHttpUrl(value)) return { label: field, value, fact: fact(field, "input", "url", null) };
  const data = value.startsWith("data:") ? (base64Data(value) ?? Buffer.alloc(0)) : base64Data(value);
  if (data === null) return { label: field, value, fact: fact(field, "input", "other", null) };
  if (imageTypeOf(data) === null) {
    throw new InputError(field, `carries data (base64 or a data: URL) that is not ${IMAGE_TYPES_ALLOWED}, judged by its first bytes`, `an http(s) URL, or base64 of ${IMAGE_TYPES_ALLOWED}`);
  }
  return { label: field, value, fact: fact(field, "input", "base64", imageSizeOfText(value)) };
}

/** References given natively in `input`, in field order; the numbering must start at `input_image` and have no gap. */
function referencesFromInput(input: Record<string, unknown>): DReference[] {
  const byPosition = new Map<number, string>();
  for (const field of Object.keys(input)) {
    if (!isReferenceField(field)) continue;
    const position = positionOf(field);
    if (position === null) throw new InputError(field, "is not a reference field name", FIELD_NAMES);
    byPosition.set(position, field);
  }
  const references: DReference[] = [];
  for (let position = 1; position <= byPosition.size; position++) {
    const field = byPosition.get(position);
    if (field === undefined) {
      const later = Math.min(...[...byPosition.keys()].filter((taken) => taken > position));
      // A reference D would not read must not be sent and billed silently.
      throw new InputError(referenceField(later), `given without ${referenceField(position)}: reference numbering has a gap`, FIELD_NAMES);
    }
    references.push(nativeReference(field, input[field]));
  }
  return references;
}

/** References given as the job's `images`: URLs as given, local files as bare base64 (see REFERENCE_VALUE_FORMAT). */
function referencesFromImages(images: NonNullable<JobRequest["images"]>): DReference[] {
  return images.map((image, index) => {
    const label = `images[${index}]`;
    const field = referenceField(index + 1);
    if (typeof image === "string") {
      if (!isHttpUrl(image)) throw new InputError(label, "must be an http(s) URL or a local file", "an http(s) URL or { fileName, bytes }");
      return { label, value: image, fact: fact(field, "images", "url", null) };
    }
    if (!Buffer.isBuffer(image.bytes) || image.bytes.length === 0) {
      throw new InputError(label, `file ${image.fileName} is empty or was not read`, "a non-empty image file");
    }
    if (imageTypeOf(image.bytes) === null) {
      throw new InputError(label, `file ${image.fileName} is not ${IMAGE_TYPES_ALLOWED} (judged by its first bytes; D does not publish the types it reads)`, `${IMAGE_TYPES_ALLOWED} file, or an http(s) URL`);
    }
    return { label: `${label} (${image.fileName})`, value: image.bytes.toString("base64"), fact: fact(field, "images", "base64", imageSizeOf(image.bytes)) };
  });
}

/** spec D: "one field per reference image", given natively in `input` or through `images`, never both. */
export function collectReferences(request: JobRequest): DReference[] {
  const native = referencesFromInput(request.input);
  const images = request.images ?? [];
  if (native.length > 0 && images.length > 0) {
    throw new InputError("images", "give reference images either as input_image fields in input or as images, not both", FIELD_NAMES);
  }
  return native.length > 0 ? native : referencesFromImages(images);
}

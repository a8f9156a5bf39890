import { pngSize } from "../media/png.js";
import { invalidField } from "./errors.js";
import type { ImageSize } from "./megapixels.js";

/** One reference image of an editing request. */
export interface DReference {
  /** `input_image`, `input_image_2`, … */
  field: string;
  /** Its size, when the sandbox can read it from the value (a base64 PNG); otherwise unknown. */
  size?: ImageSize;
}

const REFERENCE_FIELD = /^input_image(?:_(\d+))?$/;

/** spec D submit request: the first reference is `input_image`, the n-th `input_image_n` (n ≥ 2). */
export function referenceFieldName(position: number): string {
  return position === 1 ? "input_image" : `input_image_${position}`;
}

/** The position a field name stands for, or undefined when it is not a well-formed reference name. */
function positionOf(field: string): number | undefined {
  const match = REFERENCE_FIELD.exec(field);
  if (!match) return undefined;
  if (match[1] === undefined) return 1;
  const position = Number(match[1]);
  // `input_image_1` and `input_image_02` are not names the spec shows: the first one is `input_image`.
  return referenceFieldName(position) === field && position >= 2 ? position : undefined;
}

/**
 * The value format is not shown (URL or base64). The sandbox reads the size of
 * a base64 PNG (bare or as a `data:` URL), which billing and the pro budget
 * need for a single reference; anything else has an unknown size.
 */
function sizeOf(value: string): ImageSize | undefined {
  const base64 = value.startsWith("data:") ? value.slice(value.indexOf(",") + 1) : value;
  if (!/^[A-Za-z0-9+/=\s]+$/.test(base64)) return undefined;
  return pngSize(Buffer.from(base64, "base64")) ?? undefined;
}

/**
 * spec D submit request: one field per reference image, `input_image`,
 * `input_image_2` and onward. A field whose value is null counts as absent. A
 * gap in the numbering is refused (a reference the service would not read
 * must not be silently dropped), as is a misnamed field such as
 * `input_image_1`.
 */
export function parseReferences(body: Record<string, unknown>, referenceLimit: number): DReference[] {
  const positions = new Map<number, string>();
  for (const [field, value] of Object.entries(body)) {
    if (!field.startsWith("input_image") || value === null || value === undefined) continue;
    const position = positionOf(field);
    if (position === undefined) throw invalidField(field, "reference fields are named input_image, input_image_2, input_image_3, …");
    if (typeof value !== "string" || value.trim().length === 0) {
      throw invalidField(field, "must be a non-empty string (a URL or base64 image)");
    }
    positions.set(position, value);
  }

  const references: DReference[] = [];
  for (let position = 1; position <= positions.size; position++) {
    const value = positions.get(position);
    if (value === undefined) {
      const after = Math.min(...[...positions.keys()].filter((taken) => taken > position));
      throw invalidField(referenceFieldName(after), `given without ${referenceFieldName(position)}: reference numbering has a gap`);
    }
    const size = sizeOf(value);
    references.push({ field: referenceFieldName(position), ...(size ? { size } : {}) });
  }

  if (references.length > referenceLimit) {
    throw invalidField(referenceFieldName(referenceLimit + 1), `this endpoint takes at most ${referenceLimit} reference images`);
  }
  return references;
}

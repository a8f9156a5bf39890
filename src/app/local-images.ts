import { existsSync, readFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import type { ImageInput } from "../core/common-request.js";
import { InputError } from "../core/errors.js";
import { imageTypeOf, IMAGE_TYPES_ALLOWED } from "../core/image-type.js";
import type { JobRequest } from "../providers/adapter.js";

/**
 * `--image` values: http(s) URLs are passed as given; anything else is a
 * local file, read now, that must be an image by its first bytes: a file that
 * is not (a text file, a key) would be encoded, sent and paid for.
 */
export function readImages(values: readonly string[]): JobRequest["images"] {
  return values.map((value) => {
    if (/^https?:\/\//i.test(value)) return value;
    const path = resolve(value);
    if (!existsSync(path)) throw new InputError("--image", `file ${value} does not exist`, "a local file path or an http(s) URL");
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (error) {
      throw new InputError("--image", `cannot read ${value}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, `a readable file holding ${IMAGE_TYPES_ALLOWED}`);
    }
    if (imageTypeOf(bytes) === null) {
      throw new InputError("--image", `file ${value} is not ${IMAGE_TYPES_ALLOWED} (judged by its first bytes, not its name)`, `${IMAGE_TYPES_ALLOWED} file, or an http(s) URL`);
    }
    return { fileName: basename(path), bytes };
  });
}

/** One image given as text (a URL, or a local file read now and checked to be an image), its problems named as `field`. */
export function readImageAs(text: string, field: string): ImageInput {
  try {
    return readImages([text])![0]!;
  } catch (error) {
    if (error instanceof InputError) throw new InputError(field, error.reason, error.allowed);
    throw error;
  }
}

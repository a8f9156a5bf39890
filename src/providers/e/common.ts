import { describeImage, type CommonCapabilities, type CommonMapping, type CommonRequest, type ImageInput, type Unhonoured } from "../../core/common-request.js";
import type { CommonTarget, JobRequest } from "../adapter.js";
import { E_DEFAULT_OPERATION, E_OPERATION_INFO, operationOf, type EOperation } from "./operations.js";

/**
 * spec E: fill's fields are not shown; mediagate sends its second file as
 * `mask` (SOURCE_IMAGE_FORMAT). A common request's images are references,
 * never a mask, so fill cannot be asked for in common words.
 */
const MASKED_OPERATIONS: ReadonlySet<EOperation> = new Set(["fill-image"]);

/**
 * Why the common `images` cannot go to `operation`, or null when they can.
 * They go where a native job's `images` go (uploaded at submit time into the
 * operation's source field), so they mean exactly what the native request means.
 */
function imagesUnhonoured(images: readonly ImageInput[], operation: EOperation): string | null {
  const sourceFields = E_OPERATION_INFO[operation].imageFields;
  if (sourceFields.length === 0) {
    return images.length === 0 ? null : `E's ${operation} takes no reference image that its spec shows`;
  }
  if (MASKED_OPERATIONS.has(operation)) return `E's ${operation} fills the area a mask marks, and a common request has no mask (its images are references)`;
  if (images.length === 0) return `E's ${operation} needs a source image`;
  if (images.length > 1) return `E's ${operation} takes one source image, not ${images.length}`;
  const link = images.find((image) => typeof image === "string");
  // spec E Endpoints: a source image is uploaded to /v2/storage/image; no URL form is shown (the native path refuses one too).
  if (link !== undefined) return `E takes source images only as uploaded files, and a URL source is not shown (${describeImage(link)})`;
  return null;
}

/**
 * A common request for an E target: `prompt` to `prompt`; the target's
 * operation (generate-image when it names none); `images` to the operation's
 * source image, uploaded at submit time like a native job's local files.
 *
 * E's spec shows only `prompt` and `contentClass` on a request ("other
 * options … their names: not shown"), so nothing else is invented:
 *
 * - `size`, `aspect_ratio`: no size field is shown (only the size a result
 *   reports): not honoured.
 * - `seed`: no seed field is shown (only the seed each output reports): not
 *   honoured.
 * - `n`: no number-of-images field is shown, and results are a list whose
 *   length for one request is not shown, so not even one image can be
 *   promised: any `n` is not honoured (leave it out to take E's default).
 * - `images`: generate-image takes none; expand, composite and similar take
 *   exactly one local file (a URL source is not shown); fill needs a mask,
 *   which the common request has no word for.
 * - no `prompt`: generate-image requires one ("at least a text prompt is
 *   required"); the image operations do not.
 * - video: E makes images.
 *
 * The target itself (model, operation, v4 only for generate-image) is
 * checked by `validate`, as for a native job.
 */
export function eFromCommon(request: CommonRequest, target: CommonTarget): CommonMapping<JobRequest> {
  if (request.task !== "image") return { ok: false, unhonoured: [{ field: "task", reason: "E makes images, not videos" }] };
  const unhonoured: Unhonoured[] = [];
  const named = target.operation ?? E_DEFAULT_OPERATION;
  // An operation E does not have is a wrong target, not a field of the request: it is sent on for validate to refuse.
  const operation = operationOf(named);
  const input: Record<string, unknown> = {};

  if (request.prompt !== undefined) input.prompt = request.prompt;
  else if (operation !== null && E_OPERATION_INFO[operation].promptRequired) unhonoured.push({ field: "prompt", reason: `E's ${operation} needs a prompt` });
  if (request.size !== undefined) unhonoured.push({ field: "size", reason: "E's spec shows no size field on a request (only the size a result reports)" });
  if (request.aspect_ratio !== undefined) {
    unhonoured.push({ field: "aspect_ratio", reason: "E's spec shows no size or aspect-ratio field on a request (only the size a result reports)" });
  }
  if (request.seed !== undefined) unhonoured.push({ field: "seed", reason: "E's spec shows no seed field on a request (only the seed each output reports)" });
  if (request.n !== undefined) {
    unhonoured.push({ field: "n", reason: `E's spec shows no number-of-images field, nor how many images one request makes, so n ${request.n} cannot be promised` });
  }
  const images = request.images ?? [];
  const imagesReason = operation !== null ? imagesUnhonoured(images, operation) : null;
  if (imagesReason !== null) unhonoured.push({ field: "images", reason: imagesReason });

  if (unhonoured.length > 0) return { ok: false, unhonoured };
  return {
    ok: true,
    request: { provider: "e", model: target.model, operation: operation ?? named, input, ...(images.length > 0 ? { images } : {}) },
    warnings: [],
  };
}

/** What `eFromCommon` honours (`mediagate models`): generate-image by default; another operation as e/<model>/<operation>. */
export const E_COMMON_CAPABILITIES: CommonCapabilities = {
  task: "image",
  honours: {
    prompt: "required for generate-image (the default operation); optional for the image operations",
    images: "expand-image, composite, similar (target e/<model>/<operation>): exactly one local file, uploaded at submit",
  },
  refuses: {
    size: "E's spec shows no size field on a request",
    aspect_ratio: "E's spec shows no size or aspect-ratio field on a request",
    seed: "E's spec shows no seed field on a request",
    n: "E's spec shows no number-of-images field, nor how many images one request makes",
  },
  priceBasis: "unpriced: E reports no charge and its prices are not in the spec",
};

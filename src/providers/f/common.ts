import { parseRatio, sameRatio, type CommonCapabilities, type CommonMapping, type CommonRequest, type Unhonoured } from "../../core/common-request.js";
import type { CommonTarget, JobRequest } from "../adapter.js";

/** spec F request: resolution is "width x height form", "one example shape: 1024x1024": the one size F is known to take. */
const SHOWN_RESOLUTION = "1024x1024";
const SHOWN_SHAPE = { width: 1, height: 1 };

/**
 * A common request for an F model: `prompt` to `text_prompt`, `size` to
 * `resolution` as given (the common "WxH" is F's "width x height form"; F
 * publishes no bounds or list, so a size is neither rounded nor refused here,
 * as for a native job).
 *
 * - `aspect_ratio` alone: F takes a resolution, not a ratio, and shows one
 *   size, 1024x1024. A square ratio is sent as that size with a warning; any
 *   other ratio would need a size the spec does not show F taking, so it is
 *   not honoured (give `size`).
 * - neither: no resolution is sent and F's default applies (not shown), as for
 *   a native job; the field is optional and F's per-image billing does not
 *   depend on it.
 * - `seed`: no seed field is shown (only the seed each image reports): not
 *   honoured.
 * - `n`: no number-of-images field is shown, and one request may make several
 *   images ("when every image of the request is ready"), so not even one can
 *   be promised: any `n` is not honoured (leave it out to take F's default).
 * - `images`: F shows no reference-image field: not honoured.
 * - no `prompt`: F needs text_prompt or json_prompt (json_prompt has no
 *   common word; it is a provider option).
 * - video: F makes images.
 *
 * The target (model slug; F's one operation, generate) is checked by
 * `validate`, as for a native job.
 */
export function fFromCommon(request: CommonRequest, target: CommonTarget): CommonMapping<JobRequest> {
  if (request.task !== "image") return { ok: false, unhonoured: [{ field: "task", reason: "F makes images, not videos" }] };
  const unhonoured: Unhonoured[] = [];
  const warnings: string[] = [];
  const input: Record<string, unknown> = {};

  if (request.prompt !== undefined) input.text_prompt = request.prompt;
  else unhonoured.push({ field: "prompt", reason: "F needs a prompt" });

  if (request.size !== undefined) {
    input.resolution = request.size;
  } else if (request.aspect_ratio !== undefined) {
    const ratio = parseRatio(request.aspect_ratio);
    if (ratio !== null && sameRatio(ratio, SHOWN_SHAPE)) {
      input.resolution = SHOWN_RESOLUTION;
      warnings.push(`aspect_ratio ${request.aspect_ratio} sent as resolution ${SHOWN_RESOLUTION} (F takes a size, and 1024x1024 is the one its spec shows)`);
    } else {
      unhonoured.push({ field: "aspect_ratio", reason: `F takes a resolution, not a ratio, and which size it takes for ${request.aspect_ratio} is not shown (give size)` });
    }
  }
  if (request.seed !== undefined) unhonoured.push({ field: "seed", reason: "F's spec shows no seed field on a request (only the seed each image reports)" });
  if (request.n !== undefined) {
    unhonoured.push({ field: "n", reason: `F's spec shows no number-of-images field, nor how many images one request makes, so n ${request.n} cannot be promised` });
  }
  if (request.images !== undefined && request.images.length > 0) unhonoured.push({ field: "images", reason: "F's spec shows no reference-image field" });

  if (unhonoured.length > 0) return { ok: false, unhonoured };
  return { ok: true, request: { provider: "f", model: target.model, ...(target.operation !== undefined ? { operation: target.operation } : {}), input }, warnings };
}

/** What `fFromCommon` honours (`mediagate models`). */
export const F_COMMON_CAPABILITIES: CommonCapabilities = {
  task: "image",
  honours: {
    prompt: "required, sent as text_prompt",
    size: "sent as resolution as given (F publishes no bounds); left out, F's default applies",
    aspect_ratio: `square only, sent as ${SHOWN_RESOLUTION} (the one size F's spec shows); give size for another shape`,
  },
  refuses: {
    seed: "F shows no seed field on a request",
    n: "F shows no count field, and one request may make several images",
    images: "F shows no reference-image field",
  },
  priceBasis: "per image generated; F publishes no price (unpriced)",
};

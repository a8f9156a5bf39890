import { parseRatio, parseSize, ratioOfSize, RESOLUTION_LINES, sameRatio, type CommonCapabilities, type CommonMapping, type CommonRequest, type Unhonoured } from "../../core/common-request.js";
import type { JobRequest } from "../adapter.js";

/**
 * spec C submit request, "Values seen": the only values known to be taken.
 * "Complete sets of allowed values … not shown", so a common request, which
 * is routed without the user choosing C, is mapped onto these alone; another
 * value can still be sent knowingly as a native field (`provider_options.c`),
 * where `validate` warns that it is not the value the spec shows.
 */
const SEEN_ASPECT_RATIO = "16:9";
const SEEN_DURATION_SECONDS = 5;
const SEEN_QUALITY = "720p";
/** Rounding to whole seconds changes a clip by at most half a second, which keeps what was asked. */
const DURATION_TOLERANCE_SECONDS = 0.5;
/** A size is sent as quality 720p when its short side is within 10% of 720 lines (768x1366 is, 1024x576 is not). */
const LINES_TOLERANCE = 0.1;

const SEEN_RATIO = parseRatio(SEEN_ASPECT_RATIO)!;
const SEEN_LINES = RESOLUTION_LINES[SEEN_QUALITY];
/** spec C: the image-to-video route is not shown; mediagate sends C a text prompt only. */
const NO_IMAGE_ROUTE = "C's image-to-video route is not published; C takes a text prompt only";

/**
 * A common video request for C's text-to-video submit: `prompt` and `seed`
 * as they are (a seed's range is not shown for C; it takes integers from 0
 * natively). `aspect_ratio` 16:9 and `resolution` 720p map to `aspect_ratio`
 * and `quality` as they are; `duration_s` 5 to `duration`.
 *
 * Changed with a warning naming what is sent: `size`, which C takes only as
 * an aspect ratio and a quality (a 16:9 size whose short side is within 10%
 * of 720 lines is sent as 16:9 at 720p; C's pixel size is not shown);
 * `duration_s` within half a second of 5, sent as 5.
 *
 * Not honoured: any other ratio, size, duration or resolution (C's complete
 * sets are not shown, so C is not chosen for a value it may refuse or
 * replace); "adaptive" and every image field (C's image-to-video route is
 * not shown); `generate_audio` either way (C has no audio field and whether
 * its clips have sound is not shown); no prompt (C makes video from text and
 * `validate` requires one); images.
 *
 * Omitted fields are left out, as in a native request: C's defaults are not
 * shown, but its native request requires none of them and C's jobs are
 * unpriced, so no price depends on them. `operation` is the target's, if
 * any: `validate` refuses any but text_to_video, so it is never dropped.
 */
export function cFromCommon(request: CommonRequest, model: string, operation?: string): CommonMapping<JobRequest> {
  if (request.task !== "video") return { ok: false, unhonoured: [{ field: "task", reason: "C makes videos, not images" }] };
  const unhonoured: Unhonoured[] = [];
  const warnings: string[] = [];
  const input: Record<string, unknown> = {};
  if (request.prompt === undefined) unhonoured.push({ field: "prompt", reason: "C makes video from a text prompt and needs one" });
  else input.prompt = request.prompt;

  if (request.size !== undefined) {
    const size = parseSize(request.size)!;
    const lines = Math.min(size.width, size.height);
    if (!sameRatio(size, SEEN_RATIO)) {
      unhonoured.push({ field: "size", reason: `size ${request.size} is ${ratioOfSize(size)}; C's only published aspect ratio is ${SEEN_ASPECT_RATIO}` });
    } else if (Math.abs(lines - SEEN_LINES) / SEEN_LINES > LINES_TOLERANCE) {
      unhonoured.push({ field: "size", reason: `size ${request.size} has ${lines} lines, not within 10% of C's only published quality, ${SEEN_QUALITY}` });
    } else {
      input.aspect_ratio = SEEN_ASPECT_RATIO;
      input.quality = SEEN_QUALITY;
      warnings.push(`size ${request.size} sent as aspect_ratio ${SEEN_ASPECT_RATIO}, quality ${SEEN_QUALITY} (C takes a ratio and a quality, not pixels)`);
    }
  }

  if (request.aspect_ratio === "adaptive") {
    unhonoured.push({ field: "aspect_ratio", reason: `"adaptive" takes the first frame's ratio; ${NO_IMAGE_ROUTE}` });
  } else if (request.aspect_ratio !== undefined) {
    if (!sameRatio(parseRatio(request.aspect_ratio)!, SEEN_RATIO)) {
      unhonoured.push({ field: "aspect_ratio", reason: `C's only published aspect ratio is ${SEEN_ASPECT_RATIO}, not ${request.aspect_ratio}` });
    } else {
      input.aspect_ratio = SEEN_ASPECT_RATIO;
    }
  }

  if (request.seed !== undefined) input.seed = request.seed;
  // The common check refuses these on a video request; named here too so that an unchecked request loses nothing silently.
  if (request.n !== undefined) unhonoured.push({ field: "n", reason: "is a field of image requests; C makes one video per submit" });
  if (request.images !== undefined) unhonoured.push({ field: "images", reason: `are an image request's references; ${NO_IMAGE_ROUTE}` });

  if (request.duration_s !== undefined) {
    if (Math.abs(request.duration_s - SEEN_DURATION_SECONDS) > DURATION_TOLERANCE_SECONDS) {
      unhonoured.push({ field: "duration_s", reason: `C's only published duration is ${SEEN_DURATION_SECONDS} seconds, not ${request.duration_s}` });
    } else {
      if (request.duration_s !== SEEN_DURATION_SECONDS) warnings.push(`duration_s ${request.duration_s} sent as duration ${SEEN_DURATION_SECONDS} (C takes whole seconds, and ${SEEN_DURATION_SECONDS} is the only value published)`);
      input.duration = SEEN_DURATION_SECONDS;
    }
  }

  if (request.resolution !== undefined) {
    if (request.resolution !== SEEN_QUALITY) unhonoured.push({ field: "resolution", reason: `C's only published quality is ${SEEN_QUALITY}, not ${request.resolution}` });
    else input.quality = SEEN_QUALITY;
  }
  if (request.generate_audio !== undefined) {
    unhonoured.push({ field: "generate_audio", reason: "C has no audio field, and whether its clips have sound is not published" });
  }
  for (const field of ["first_frame", "last_frame", "reference_images"] as const) {
    if (request[field] !== undefined) unhonoured.push({ field, reason: NO_IMAGE_ROUTE });
  }

  if (unhonoured.length > 0) return { ok: false, unhonoured };
  return { ok: true, request: { provider: "c", model, ...(operation !== undefined ? { operation } : {}), input }, warnings };
}

/** What `cFromCommon` honours (`mediagate models`): only the values C's spec shows. */
export const C_COMMON_CAPABILITIES: CommonCapabilities = {
  task: "video",
  honours: {
    prompt: "required (C makes video from text)",
    seed: "any whole number from 0",
    aspect_ratio: `${SEEN_ASPECT_RATIO} only (the one value C's spec shows)`,
    resolution: `${SEEN_QUALITY} only, sent as quality`,
    duration_s: `${SEEN_DURATION_SECONDS} s only (within half a second, with a warning)`,
    size: `a ${SEEN_ASPECT_RATIO} size within 10% of ${SEEN_LINES} lines, sent as ${SEEN_ASPECT_RATIO} at ${SEEN_QUALITY} (with a warning)`,
  },
  refuses: {
    generate_audio: "C has no audio field and whether its clips have sound is not shown",
    first_frame: NO_IMAGE_ROUTE,
    last_frame: NO_IMAGE_ROUTE,
    reference_images: NO_IMAGE_ROUTE,
  },
  priceBasis: "unpriced: C bills in credits and its prices are not in the spec (a moderation failure is refunded)",
};

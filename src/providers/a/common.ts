import {
  describeImage,
  type CommonCapabilities,
  parseRatio,
  parseSize,
  ratioOfSize,
  RESOLUTION_LINES,
  sameRatio,
  VIDEO_RESOLUTIONS,
  type CommonMapping,
  type CommonRequest,
  type Dimensions,
  type ImageInput,
  type Unhonoured,
  type VideoResolution,
} from "../../core/common-request.js";
import type { JobRequest } from "../adapter.js";
import { A_RATIOS } from "./prompt-flags.js";

/** spec A: output length 4 to 30 seconds (-1 is video editing, which no common request makes). */
const MIN_DURATION_SECONDS = 4;
const MAX_DURATION_SECONDS = 30;
/** A takes whole seconds: rounding to the nearest one changes a clip by at most half a second, which keeps what was asked. */
const DURATION_TOLERANCE_SECONDS = 0.5;
/**
 * A size is sent as A's resolution whose frame height is within 10% of its
 * short side (768x768 as 720p); further off, the clip would be visibly
 * another size than asked (1024x576 is 20% from both 480p and 720p).
 */
const LINES_TOLERANCE = 0.1;

/** spec A ratio: the fixed values; "adaptive" is for tasks that start from a frame. */
const FIXED_RATIOS = A_RATIOS.filter((ratio) => ratio !== "adaptive");
const FIXED_RATIOS_TEXT = FIXED_RATIOS.join(", ");

/** A's fixed ratio the same as `ratio` (within core's 1%), or null. A's ratios are far apart, so at most one matches. */
function aRatioFor(ratio: Dimensions): string | null {
  return FIXED_RATIOS.find((each) => sameRatio(ratio, parseRatio(each)!)) ?? null;
}

/** A's resolution whose frame height is within the tolerance of the size's short side, or null. */
function aResolutionFor(size: Dimensions): VideoResolution | null {
  const lines = Math.min(size.width, size.height);
  return VIDEO_RESOLUTIONS.find((resolution) => Math.abs(lines - RESOLUTION_LINES[resolution]) / RESOLUTION_LINES[resolution] <= LINES_TOLERANCE) ?? null;
}

/** The files among `images`: A takes media only as links. */
function localFiles(images: readonly ImageInput[]): string[] {
  return images.filter((image) => typeof image !== "string").map(describeImage);
}

function imageItem(url: string, role: "first_frame" | "last_frame" | "reference_image"): Record<string, unknown> {
  return { type: "image_url", image_url: { url }, role };
}

/**
 * A common video request for an A model. The native form follows from the
 * fields set, as spec A's task kinds say: `first_frame` (with `last_frame`)
 * makes a first-frame task, `reference_images` a reference-to-video task,
 * neither a text-to-video task. The prompt becomes the text item; frames and
 * references become `image_url` content items with their role. Mapped as is:
 * `seed`, `resolution`, `generate_audio`, `aspect_ratio` of one of A's ratios
 * (another writing of the same ratio, 7:3 for 21:9, is sent as A's) and
 * "adaptive", which A has and a first-frame task requires.
 *
 * Changed with a warning naming what is sent: `size`, which A takes only as a
 * ratio and a resolution (the size's ratio must be one of A's, its short side
 * within 10% of 480, 720 or 1080 lines; A's exact pixel size per ratio and
 * resolution is not shown); `duration_s` off a whole second, sent as the
 * nearest whole second from 4 to 30 when that is at most half a second away.
 *
 * Not honoured: images; a ratio or size A has no ratio for; a fixed ratio or
 * a size with a first frame (A takes that clip's ratio from the frame:
 * "ratio must be adaptive"); a duration further than half a second from 4 to
 * 30; local files (A takes media as links, as for a native request's images);
 * reference images with frames (A's task kind would be ambiguous).
 *
 * Omitted fields are left to A's defaults, which are not shown: A's native
 * request requires none of them, and A bills in tokens counted afterwards,
 * so no price depends on them. The item limits per model generation are
 * `validate`'s to check, as for a native request. `operation` is the
 * target's declared task kind, if any: `validate` refuses one the content
 * contradicts, so it is never dropped silently.
 */
export function aFromCommon(request: CommonRequest, model: string, operation?: string): CommonMapping<JobRequest> {
  if (request.task !== "video") return { ok: false, unhonoured: [{ field: "task", reason: "A makes videos, not images" }] };
  const unhonoured: Unhonoured[] = [];
  const warnings: string[] = [];
  const input: Record<string, unknown> = {};
  const content: Array<Record<string, unknown>> = [];
  const startsFromFrame = request.first_frame !== undefined;
  if (request.prompt !== undefined) input.prompt = request.prompt;

  if (request.size !== undefined) {
    const size = parseSize(request.size)!;
    const ratio = aRatioFor(size);
    const resolution = aResolutionFor(size);
    if (startsFromFrame) {
      unhonoured.push({ field: "size", reason: `A takes a first-frame clip's ratio from the frame (adaptive), so size ${request.size} cannot be sent` });
    } else if (ratio === null) {
      unhonoured.push({ field: "size", reason: `size ${request.size} is ${ratioOfSize(size)}, not one of A's ratios (${FIXED_RATIOS_TEXT})` });
    } else if (resolution === null) {
      unhonoured.push({ field: "size", reason: `size ${request.size} has ${Math.min(size.width, size.height)} lines, not within 10% of A's 480p, 720p or 1080p` });
    } else {
      input.ratio = ratio;
      input.resolution = resolution;
      warnings.push(`size ${request.size} sent as ratio ${ratio}, resolution ${resolution} (A takes a ratio and a resolution, not pixels)`);
    }
  }

  if (request.aspect_ratio === "adaptive") {
    input.ratio = "adaptive";
  } else if (request.aspect_ratio !== undefined) {
    const asked = parseRatio(request.aspect_ratio)!;
    const ratio = aRatioFor(asked);
    if (startsFromFrame) {
      unhonoured.push({ field: "aspect_ratio", reason: `A takes a first-frame clip's ratio from the frame (adaptive), not ${request.aspect_ratio}` });
    } else if (ratio === null) {
      unhonoured.push({ field: "aspect_ratio", reason: `A's ratios are ${FIXED_RATIOS_TEXT} (or adaptive with a first frame), not ${request.aspect_ratio}` });
    } else {
      input.ratio = ratio;
    }
  }

  if (request.seed !== undefined) input.seed = request.seed;
  // The common check refuses these on a video request; named here too so that an unchecked request loses nothing silently.
  if (request.n !== undefined) unhonoured.push({ field: "n", reason: "is a field of image requests; A makes one video per task" });
  if (request.images !== undefined) unhonoured.push({ field: "images", reason: "are an image request's references; a video takes first_frame, last_frame or reference_images" });

  if (request.duration_s !== undefined) {
    const asked = request.duration_s;
    const seconds = Math.min(MAX_DURATION_SECONDS, Math.max(MIN_DURATION_SECONDS, Math.round(asked)));
    if (Math.abs(seconds - asked) > DURATION_TOLERANCE_SECONDS) {
      unhonoured.push({ field: "duration_s", reason: `A makes clips of ${MIN_DURATION_SECONDS} to ${MAX_DURATION_SECONDS} seconds, not ${asked}` });
    } else {
      if (seconds !== asked) warnings.push(`duration_s ${asked} sent as duration ${seconds} (A takes whole seconds from ${MIN_DURATION_SECONDS} to ${MAX_DURATION_SECONDS})`);
      input.duration = seconds;
    }
  }

  if (request.resolution !== undefined) input.resolution = request.resolution;
  if (request.generate_audio !== undefined) input.generate_audio = request.generate_audio;

  const frames: Array<[field: "first_frame" | "last_frame", image: ImageInput | undefined]> = [
    ["first_frame", request.first_frame],
    ["last_frame", request.last_frame],
  ];
  for (const [field, image] of frames) {
    if (image === undefined) continue;
    if (typeof image !== "string") unhonoured.push({ field, reason: `A takes media as links; the local file ${image.fileName} cannot be sent` });
    else content.push(imageItem(image, field));
  }

  const references = request.reference_images ?? [];
  if (references.length > 0) {
    const files = localFiles(references);
    if (startsFromFrame) {
      // spec A: frames make a first-frame task, references a reference-to-video task; one task cannot be both.
      unhonoured.push({ field: "reference_images", reason: "A cannot mix reference images with first_frame or last_frame in one task" });
    } else if (files.length > 0) {
      unhonoured.push({ field: "reference_images", reason: `A takes media as links; the local file${files.length > 1 ? "s" : ""} ${files.join(", ")} cannot be sent` });
    } else {
      for (const url of references) if (typeof url === "string") content.push(imageItem(url, "reference_image"));
    }
  }

  if (unhonoured.length > 0) return { ok: false, unhonoured };
  if (content.length > 0) input.content = content;
  return { ok: true, request: { provider: "a", model, ...(operation !== undefined ? { operation } : {}), input }, warnings };
}

/** What `aFromCommon` honours for an A model (`mediagate models`); the item limits per generation are A's validation's. */
export const A_COMMON_CAPABILITIES: CommonCapabilities = {
  task: "video",
  honours: {
    prompt: "the text item; may be left out when first_frame is given",
    size: `sent as ratio and resolution (a warning names them): its ratio one of ${FIXED_RATIOS_TEXT}, its short side within 10% of 480, 720 or 1080 lines`,
    aspect_ratio: `${FIXED_RATIOS_TEXT}, or adaptive (the first frame's; required with a first frame)`,
    seed: "any whole number",
    duration_s: `${MIN_DURATION_SECONDS} to ${MAX_DURATION_SECONDS} whole seconds (within half a second rounded, with a warning)`,
    resolution: "480p, 720p or 1080p",
    generate_audio: "true or false",
    first_frame: "an image URL (A takes media as links)",
    last_frame: "an image URL, with first_frame",
    reference_images: "image URLs, not with frames",
  },
  refuses: {},
  priceBasis: "tokens A counts after the job, at MEDIAGATE_A_USD_PER_MILLION_TOKENS (unpriced without it); no estimate before",
};

import type { AContentItem, AMediaItem } from "./content.js";
import { invalidParameter } from "./errors.js";
import type { AModel } from "./models.js";

/**
 * spec A "Task kinds and the extra rules they impose". How editing intent and
 * extension intent are expressed is not shown; the sandbox reads them from
 * `omni_reference_task_type`, whose allowed values (also not shown) are the
 * kind names below. The field is optional for the kinds the content already
 * identifies, and a declared kind that the content contradicts is rejected on
 * `omni_reference_task_type` ("a type error surfaces before generation").
 */
export const A_TASK_KINDS = [
  "text_to_video",
  "first_frame",
  "reference_to_video",
  "video_editing",
  "video_extension",
] as const;
export type ATaskKind = (typeof A_TASK_KINDS)[number];

/** spec A Limits, content items. Text items are not counted: 30 + 10 + 10 = 50 leaves no room for the prompt otherwise. */
const NEWEST_LIMITS = { media: 50, images: 30, videos: 10, audio: 10 };
const OLDER_LIMITS = { media: 15, images: 15, videos: 15, audio: 15 };

function checkItemLimits(media: AMediaItem[], model: AModel): void {
  const limits = model.newestGeneration ? NEWEST_LIMITS : OLDER_LIMITS;
  const images = media.filter((item) => item.type === "image_url").length;
  const videos = media.filter((item) => item.type === "video_url").length;
  const audio = media.filter((item) => item.type === "audio_url").length;
  const generation = `model generation ${model.generation}`;
  if (media.length > limits.media) throw invalidParameter("content", `at most ${limits.media} media items on ${generation}`);
  if (images > limits.images) throw invalidParameter("content", `at most ${limits.images} images on ${generation}`);
  if (videos > limits.videos) throw invalidParameter("content", `at most ${limits.videos} videos on ${generation}`);
  if (audio > limits.audio) throw invalidParameter("content", `at most ${limits.audio} audio items on ${generation}`);
  // spec A Limits: audio-only content is allowed on the newest generation; older series need an image or a video with it.
  if (audio > 0 && images + videos === 0 && !model.newestGeneration) {
    throw invalidParameter("content", `audio needs an image or a video with it on ${generation}`);
  }
}

function inferKind(items: AContentItem[], media: AMediaItem[]): ATaskKind {
  const firstFrames = media.filter((item) => item.role === "first_frame").length;
  const lastFrames = media.filter((item) => item.role === "last_frame").length;
  const references = media.filter((item) => item.role.startsWith("reference_")).length;
  if (firstFrames + lastFrames > 0) {
    if (references > 0) throw invalidParameter("content", "first_frame/last_frame items cannot be combined with reference items");
    if (firstFrames > 1 || lastFrames > 1) throw invalidParameter("content", "at most one first_frame and one last_frame");
    if (firstFrames === 0) throw invalidParameter("content", "a last_frame needs a first_frame");
    return "first_frame";
  }
  if (references > 0) return "reference_to_video";
  if (!items.some((item) => item.type === "text")) throw invalidParameter("content", "a text-to-video task needs a text item");
  return "text_to_video";
}

export function classifyTask(items: AContentItem[], declared: unknown, model: AModel): ATaskKind {
  if (declared !== undefined && !(A_TASK_KINDS as readonly unknown[]).includes(declared)) {
    throw invalidParameter("omni_reference_task_type", `must be one of ${A_TASK_KINDS.join(", ")}`);
  }
  const media = items.filter((item): item is AMediaItem => item.type !== "text");
  checkItemLimits(media, model);
  if (declared === "video_editing" || declared === "video_extension") {
    // spec A: editing and extension take one reference_video.
    if (media.filter((item) => item.role === "reference_video").length !== 1) {
      throw invalidParameter("content", `${declared} needs exactly one reference_video item`);
    }
    if (media.some((item) => item.role === "first_frame" || item.role === "last_frame")) {
      throw invalidParameter("content", `${declared} cannot take first_frame/last_frame items`);
    }
    return declared;
  }
  const inferred = inferKind(items, media);
  if (declared !== undefined && declared !== inferred) {
    throw invalidParameter("omni_reference_task_type", `declared ${String(declared)} but the content makes a ${inferred} task`);
  }
  return inferred;
}

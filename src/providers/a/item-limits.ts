import { InputError } from "../../core/errors.js";
import type { AContentItem, AMediaKind } from "./content.js";
import type { ALimitsClass } from "./models.js";

/**
 * spec A Limits, content items: the newest generation takes at most 50 (30
 * images, 10 videos, 10 audio), the older series at most 15. Counted over
 * media items: 30 + 10 + 10 = 50 leaves no room for the prompt otherwise.
 */
export interface AItemLimits {
  media: number;
  perKind: Record<AMediaKind, number>;
  /** spec A: audio-only content is allowed on the newest generation; older series need an image or a video with it. */
  audioOnly: boolean;
}

export const A_ITEM_LIMITS: Record<ALimitsClass, AItemLimits> = {
  newest: { media: 50, perKind: { image: 30, video: 10, audio: 10 }, audioOnly: true },
  older: { media: 15, perKind: { image: 15, video: 15, audio: 15 }, audioOnly: false },
  conservative: { media: 15, perKind: { image: 15, video: 15, audio: 15 }, audioOnly: false },
};

const KIND_NAMES: Record<AMediaKind, string> = { image: "images", video: "videos", audio: "audio items" };

export function countMedia(items: readonly AContentItem[]): Record<AMediaKind, number> {
  const counts: Record<AMediaKind, number> = { image: 0, video: 0, audio: 0 };
  for (const item of items) if (item.kind !== "text") counts[item.kind]++;
  return counts;
}

export function checkItemLimits(items: readonly AContentItem[], limitsClass: ALimitsClass, model: string): void {
  const limits = A_ITEM_LIMITS[limitsClass];
  const counts = countMedia(items);
  const which = limitsClass === "newest" ? "the newest generation" : limitsClass === "older" ? "the older series" : "a model of unknown generation";
  const total = counts.image + counts.video + counts.audio;
  if (total > limits.media) throw new InputError("content", `${total} media items; ${model} (${which}) takes at most ${limits.media}`);
  for (const kind of Object.keys(counts) as AMediaKind[]) {
    if (counts[kind] > limits.perKind[kind]) {
      throw new InputError("content", `${counts[kind]} ${KIND_NAMES[kind]}; ${model} (${which}) takes at most ${limits.perKind[kind]}`);
    }
  }
  if (counts.audio > 0 && counts.image + counts.video === 0 && !limits.audioOnly) {
    throw new InputError("content", `audio-only content is allowed only on the newest generation; ${model} (${which}) needs an image or a video with the audio`);
  }
}

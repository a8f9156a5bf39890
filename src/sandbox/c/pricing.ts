import type { CSubmitRequest } from "./request.js";

/**
 * C's prices are not in the spec. The sandbox charges credits per task at
 * submit: 20 / 30 / 40 / 80 credits for a 5-second 360p / 540p / 720p /
 * 1080p video (40 for a quality it has no price for), doubled for 8 s or
 * longer, doubled again for motion_mode "fast". The charge is refunded when
 * the task ends in moderation failure (7) and only then (spec C: "credits
 * are refunded" is stated for 7 alone).
 */
const CREDITS_FOR_FIVE_SECONDS: Record<string, number> = { "360p": 20, "540p": 30, "720p": 40, "1080p": 80 };
const UNPRICED_QUALITY_CREDITS = 40;

export function taskCostCredits(request: CSubmitRequest): number {
  const base = CREDITS_FOR_FIVE_SECONDS[request.quality] ?? UNPRICED_QUALITY_CREDITS;
  const lengthFactor = request.duration >= 8 ? 2 : 1;
  const motionFactor = request.motionMode === "fast" ? 2 : 1;
  return base * lengthFactor * motionFactor;
}

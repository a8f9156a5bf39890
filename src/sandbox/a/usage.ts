import type { VideoRatio } from "../media/video.js";
import type { AResolution } from "./request.js";

/**
 * spec A: "Usage is billed in tokens"; the formula is not shown. The sandbox
 * counts tokens = floor(width × height × 24 fps × seconds / 1024) of the
 * nominal output (720p 16:9 is 1280×720), so longer and sharper videos cost
 * more in proportion. Video editing (duration -1) counts the reference
 * video's length when known, else 5 s.
 */
const SHORT_SIDE: Record<AResolution, number> = { "480p": 480, "720p": 720, "1080p": 1080 };
const FRAMES_PER_SECOND = 24;

export function nominalSize(resolution: AResolution, ratio: VideoRatio): { width: number; height: number } {
  const [across, down] = ratio.split(":").map(Number) as [number, number];
  const shortSide = SHORT_SIDE[resolution];
  const longSide = Math.round((shortSide * Math.max(across, down)) / Math.min(across, down) / 2) * 2;
  return across >= down ? { width: longSide, height: shortSide } : { width: shortSide, height: longSide };
}

export function completionTokens(resolution: AResolution, ratio: VideoRatio, seconds: number): number {
  const { width, height } = nominalSize(resolution, ratio);
  return Math.floor((width * height * FRAMES_PER_SECOND * seconds) / 1024);
}

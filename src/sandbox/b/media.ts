import { isVideoRatio, taggedVideo, videoContentType, type VideoRatio } from "../media/video.js";
import type { BJobRecord } from "./jobs.js";
import { speechSeconds } from "./operation.js";
import { renderWav } from "./wav.js";

export interface BMediaFile {
  fileName: string;
  contentType: string;
  bytes: Buffer;
}

/** The result file's name in its address (`/b/files/{job id}/{name}`). */
export function mediaFileName(job: BJobRecord): string {
  return job.operation.outputMediaType === "audio" ? "output.wav" : "output.mp4";
}

/**
 * What a completed job serves. Video: the shared one-second H.264 MP4
 * fixture of the body's `aspect_ratio` (16:9 when the operation has none),
 * tagged with the job id so each job's file is its own,
 * whatever the requested duration and resolution. Audio: a one-second WAV
 * sine tone, its pitch drawn from the job's seed.
 */
export function mediaFile(job: BJobRecord): BMediaFile {
  if (job.operation.outputMediaType === "audio") {
    return { fileName: mediaFileName(job), contentType: "audio/wav", bytes: renderWav({ seconds: 1, frequencyHz: 220 + (job.seed % 660) }) };
  }
  const ratio: VideoRatio = isVideoRatio(job.body.aspect_ratio) ? job.body.aspect_ratio : "16:9";
  return { fileName: mediaFileName(job), contentType: videoContentType("mp4"), bytes: taggedVideo(ratio, "mp4", `B job ${job.id}`) };
}

const FRAME_SIZES: Readonly<Record<string, readonly [number, number]>> = {
  "480p": [854, 480],
  "540p": [960, 540],
  "720p": [1280, 720],
  "1080p": [1920, 1080],
};

/** Seconds of output the job produces (5 for operations without a duration). */
function outputSeconds(job: BJobRecord): number {
  if (typeof job.body.duration_s === "number") return job.body.duration_s;
  if (typeof job.body.text === "string") return speechSeconds(job.body.text);
  return 5;
}

/**
 * spec B Job object `usage`: upstream metering units that "may not reproduce
 * the charge". Video: `video_output_tokens` = width × height × 24 frames a
 * second × seconds / 1,024 (720p when no resolution is given). Audio:
 * `audio_output_seconds`. Empty until the job completes.
 */
export function usageOf(job: BJobRecord): Record<string, number> {
  const seconds = outputSeconds(job);
  if (job.operation.outputMediaType === "audio") return { audio_output_seconds: seconds };
  const resolution = typeof job.body.resolution === "string" ? job.body.resolution : "720p";
  const [width, height] = FRAME_SIZES[resolution] ?? [1280, 720];
  return { video_output_tokens: Math.ceil((width * height * 24 * seconds) / 1024) };
}

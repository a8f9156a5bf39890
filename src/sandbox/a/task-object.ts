import { statusAt, type ATaskRecord } from "./tasks.js";

/**
 * spec A task object: id, model, status, content.video_url, usage,
 * created_at, duration, resolution, ratio, seed, output_format, draft. Types
 * and sub-fields beyond id, status and content.video_url are not shown; the
 * sandbox's choices:
 * - `content` is present only on success, as `{ "video_url": "…" }`;
 * - `usage` is `{ completion_tokens, total_tokens }` (equal), only on success;
 * - `created_at` is Unix seconds (virtual clock);
 * - `duration` is the requested seconds (-1 for editing), `ratio` the ratio
 *   actually produced ("adaptive" resolved), `output_format` "mp4" or "mov";
 * - a failed or expired task also carries `error: { code, message }`.
 */
export interface ATaskObject {
  id: string;
  model: string;
  status: string;
  content?: { video_url: string };
  usage?: { completion_tokens: number; total_tokens: number };
  created_at: number;
  duration: number;
  resolution: string;
  ratio: string;
  seed: number;
  output_format: string;
  draft: boolean;
  error?: { code: string; message: string };
}

const FAILURE_DETAIL = {
  failed: { code: "GenerationFailed", message: "the video could not be generated" },
  expired: { code: "TaskExpired", message: "the task expired before it could run" },
};

export function taskObject(task: ATaskRecord, now: number, resultUrl: (task: ATaskRecord) => string): ATaskObject {
  const status = statusAt(task, now);
  const { request } = task;
  return {
    id: task.id,
    model: request.model.id,
    status,
    ...(status === "succeeded" ? { content: { video_url: resultUrl(task) } } : {}),
    ...(status === "succeeded"
      ? { usage: { completion_tokens: task.completionTokens, total_tokens: task.completionTokens } }
      : {}),
    created_at: Math.floor(task.createdAt / 1000),
    duration: request.duration,
    resolution: request.resolution,
    ratio: request.videoRatio,
    seed: request.seed,
    output_format: request.outputFormat,
    draft: request.draft,
    ...(status === "failed" || status === "expired" ? { error: FAILURE_DETAIL[status] } : {}),
  };
}

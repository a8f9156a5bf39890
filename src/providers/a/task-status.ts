import { z } from "zod";
import type { OutputRef, ProviderStatus } from "../adapter.js";
import type { HttpResponse, ProviderHttp } from "../http.js";
import { readUsage } from "./usage.js";

/**
 * spec A task object. Only id, status and content.video_url have known
 * types; every other field is kept as given in `raw`, and copied into the
 * output's metadata only when it has a plain JSON scalar value.
 */
const TaskObject = z.looseObject({
  id: z.string(),
  status: z.string(),
  content: z.looseObject({ video_url: z.string().min(1).optional() }).nullish(),
  usage: z.unknown().optional(),
  error: z.unknown().optional(),
});
type TaskObject = z.infer<typeof TaskObject>;

const ErrorDetail = z.object({ code: z.string().optional(), message: z.string().optional() });
const METADATA_FIELDS = ["model", "created_at", "duration", "resolution", "ratio", "seed", "output_format", "draft"] as const;

function metadataOf(task: TaskObject): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  for (const field of METADATA_FIELDS) {
    const value = task[field];
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") metadata[field] = value;
  }
  return metadata;
}

function failureMessage(task: TaskObject): string {
  const detail = ErrorDetail.safeParse(task.error);
  if (detail.success && (detail.data.code || detail.data.message)) {
    return `A reported the task failed: ${[detail.data.code, detail.data.message].filter(Boolean).join(": ")}`;
  }
  return "A reported the task failed (no detail given)";
}

/** The normalised status of a task read with HTTP 2xx. Throws ProviderError(`invalid_response`) on an answer that is not a task object of this id. */
export function taskStatusFrom(http: ProviderHttp, response: HttpResponse, taskId: string): ProviderStatus {
  let raw: unknown;
  try {
    raw = response.json();
  } catch {
    raw = undefined;
  }
  const parsed = TaskObject.safeParse(raw);
  if (!parsed.success) {
    throw http.errorFrom(response, "invalid_response", `A answered the read of ${taskId} with something that is not a task object`, { retryable: true });
  }
  const task = parsed.data;
  if (task.id !== taskId) {
    throw http.errorFrom(response, "invalid_response", `A answered the read of ${taskId} with task ${task.id}`, { retryable: true });
  }
  switch (task.status) {
    // spec A: a poll loop treats queued and running as in progress.
    case "queued":
    case "running":
      return { kind: "pending", providerStatus: task.status, raw };
    case "succeeded": {
      // spec A: a succeeded task carries content.video_url (valid 24 hours: captured at once).
      const url = task.content?.video_url;
      if (!url) throw http.errorFrom(response, "invalid_response", `A reported ${taskId} succeeded without content.video_url`, { retryable: true });
      const output: OutputRef = { url, metadata: metadataOf(task) };
      return { kind: "succeeded", providerStatus: task.status, outputs: [output], usage: readUsage(task.usage), raw };
    }
    case "failed":
      return { kind: "failed", providerStatus: task.status, code: "generation_failed", message: failureMessage(task), raw };
    case "expired":
      // The meaning of expired is not shown: a terminal state of its own.
      return { kind: "expired", providerStatus: task.status, raw };
    case "cancelled":
      return { kind: "cancelled", providerStatus: task.status, raw };
    default:
      // spec A: the poll loop "stops on any other value"; an unpublished one cannot be read as success.
      return {
        kind: "failed",
        providerStatus: task.status,
        code: "unknown_task_status",
        message: `A reported status "${task.status}", which is none of queued, running, succeeded, failed, expired, cancelled`,
        raw,
      };
  }
}

import type { MediagateConfig } from "../core/config.js";
import type { Job, JobOutput } from "../core/job.js";
import type { NotifierOptions } from "../engine/notify.js";
import type { NotificationPolicy } from "../store/store.js";
import { apiJob } from "./job-view.js";

/**
 * The job as a notification carries it (its `data`): the job as
 * `GET /v1/jobs/{id}` answers it, but for the outputs' local paths, which
 * describe the server's disk and mean nothing to a receiver elsewhere (each
 * output keeps its `href` on the API, its URL, type, size and sha256).
 */
export function notificationJob(job: Job, outputs: JobOutput[]) {
  const json = apiJob(job, outputs);
  return { ...json, outputs: json.outputs.map(({ path: _path, ...output }) => output) };
}

/** How an engine delivers notifications, from the configuration (MEDIAGATE_NOTIFY_SECRET, MEDIAGATE_NOTIFY_URL). */
export function notifierOf(config: MediagateConfig): NotifierOptions {
  return { secret: config.notifySecret, defaultUrl: config.notifyUrl, describe: notificationJob };
}

/** Which changes owe a notification, from the configuration (MEDIAGATE_NOTIFY_URL, MEDIAGATE_NOTIFY_EVENTS). */
export function notificationPolicyOf(config: MediagateConfig): NotificationPolicy {
  return { defaultUrl: config.notifyUrl, events: config.notifyEvents };
}

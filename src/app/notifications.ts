import type { MediagateConfig } from "../core/config.js";
import type { Job, JobOutput } from "../core/job.js";
import type { NotifierOptions } from "../engine/notify.js";
import type { NotificationPolicy } from "../store/store.js";
import { apiBatch } from "./batch-view.js";
import { apiJob, type ApiJob } from "./job-view.js";

/**
 * The job as a notification carries it (its `data`): the job as
 * `GET /v1/jobs/{id}` answers it, each output's `href` absolute when
 * MEDIAGATE_PUBLIC_URL is set (the receiver is elsewhere).
 */
export function notificationJobOf(config: Pick<MediagateConfig, "publicUrl">): (job: Job, outputs: JobOutput[]) => ApiJob {
  return (job, outputs) => apiJob(job, outputs, config.publicUrl);
}

/** How an engine delivers notifications (a job's, and a batch's `batch.completed`), from the configuration (MEDIAGATE_NOTIFY_SECRET, MEDIAGATE_NOTIFY_URL, MEDIAGATE_PUBLIC_URL). */
export function notifierOf(config: MediagateConfig): NotifierOptions {
  return {
    secret: config.notifySecret,
    defaultUrl: config.notifyUrl,
    describe: notificationJobOf(config),
    // batch.completed carries the batch as GET /v1/batches/{id} answers it, its href absolute under MEDIAGATE_PUBLIC_URL.
    describeBatch: (batchId, summary) => apiBatch(batchId, summary, config.publicUrl),
  };
}

/** Which changes owe a notification, from the configuration (MEDIAGATE_NOTIFY_URL, MEDIAGATE_NOTIFY_EVENTS). */
export function notificationPolicyOf(config: MediagateConfig): NotificationPolicy {
  return { defaultUrl: config.notifyUrl, events: config.notifyEvents };
}

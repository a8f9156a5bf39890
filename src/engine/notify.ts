import { lookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { Webhook } from "standardwebhooks";
import { fullJitterBackoffMs } from "../core/backoff.js";
import type { Clock } from "../core/clock.js";
import { UnsafeUrlError } from "../core/errors.js";
import type { Job, JobOutput } from "../core/job.js";
import { traceparentOf } from "../core/trace-context.js";
import { assertSafeUrl } from "../core/url-safety.js";
import { redactUrl } from "../core/redact.js";
import type { BatchSummary, Notification, NotificationAttempt, Store } from "../store/store.js";
import { BATCH_COMPLETED } from "../store/notifications.js";
import type { EngineLogger } from "./logger.js";

/**
 * Notifications out (issue 12): a job's change POSTed to its `notify_url`
 * (or MEDIAGATE_NOTIFY_URL), signed with the Standard Webhooks scheme. The
 * notification is owed in the store by the change itself; this is one
 * attempt at delivering it, taken by `claimDueNotifications` (so no other
 * engine sends the same attempt meanwhile) and ended by one record of how it
 * went, which is also an event in the job's log.
 */

export interface NotifierOptions {
  /** MEDIAGATE_NOTIFY_SECRET. Without it nothing is sent unsigned: each notification is given up, saying why. */
  secret: string | null;
  /**
   * The job as a notification's `data` carries it. Given by the entry point
   * (the API's job JSON): the engine knows no API shape.
   */
  describe(job: Job, outputs: JobOutput[]): unknown;
  /**
   * The batch as a `batch.completed` notification's `data` carries it, from
   * its jobs counted by state with their estimates and charges. Without it,
   * the counts as the store gives them, under `batch_id`.
   */
  describeBatch?(batchId: string, summary: BatchSummary): unknown;
  /** MEDIAGATE_NOTIFY_URL, only to warn at start when it is set without a secret. */
  defaultUrl?: string | null;
  /** How long a receiver has to answer (default 15 s). */
  timeoutMs?: number;
}

/** A receiver that does not answer within this long is tried again later (Standard Webhooks senders allow 15 s or so). */
export const NOTIFY_TIMEOUT_MS = 15_000;
/**
 * A claimed attempt is due again this long after its claim: well past its
 * timeout and its record, so it is never sent twice at once; and soon enough
 * that one whose engine died is retried within a minute.
 */
export const NOTIFY_LEASE_MS = 60_000;
/** Retries go on until an attempt fails this long after the change (the issue: at least 24 hours), then stop. */
export const NOTIFY_RETRY_HORIZON_MS = 24 * 3_600_000;
/** The first retry waits 15–30 s; each wait doubles up to 30–60 minutes. */
const RETRY_BASE_MS = 30_000;
const RETRY_CAP_MS = 3_600_000;

/**
 * The wait after failed attempt `attempt` (1 for the first): exponential,
 * capped at an hour, with jitter over its upper half (full jitter could
 * retry at once, and would need twice the tries to cover the horizon).
 */
export function notificationRetryDelayMs(attempt: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1);
  const half = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** exponent) / 2;
  return half + fullJitterBackoffMs(exponent, { baseMs: RETRY_BASE_MS / 2, capMs: RETRY_CAP_MS / 2, random });
}

/** What an attempt needs of its engine. */
export interface NotifyContext {
  store: Store;
  clock: Clock;
  log: EngineLogger;
  notifier: NotifierOptions;
  /** MEDIAGATE_ALLOW_PRIVATE_URLS: as for `notify_url` at the API, http and private addresses are refused without it. */
  allowPrivateUrls: boolean;
  /** Aborted when the engine stops: the attempt ends, and the notification is due again at once. */
  signal: AbortSignal;
}

/** What the receiver answered, or why it did not. */
type Answer = { status: number } | { error: string };

/** The body a notification sends: its type and time, and the job (`data`), as Standard Webhooks payloads are shaped. */
export function notificationBody(notification: Pick<Notification, "type" | "createdAt">, data: unknown): string {
  return JSON.stringify({ type: notification.type, timestamp: new Date(notification.createdAt).toISOString(), data });
}

/** What a notification tells (its `data`): the job, or for `batch.completed` its batch, counted among its tenant's jobs. */
async function notificationData(store: Store, notifier: NotifierOptions, notification: Notification, job: Job): Promise<unknown> {
  if (notification.type !== BATCH_COMPLETED || notification.batchId === null) return notifier.describe(job, await store.outputs(job.id));
  const summary = await store.batchSummary(notification.batchId, job.tenant);
  return notifier.describeBatch ? notifier.describeBatch(notification.batchId, summary) : { batch_id: notification.batchId, ...summary };
}

/** One attempt at a claimed notification (its `attempts` counts this one), recorded whatever happens. */
export async function deliverNotification(context: NotifyContext, notification: Notification): Promise<void> {
  const { store, clock, notifier } = context;
  const attempt = notification.attempts;
  // The URL as the job's log shows it: scheme and host, since a receiver's token rides in its path or query.
  const shownUrl = redactUrl(notification.url);
  const label = `notification ${notification.type} (${notification.id})`;
  const record = async (outcome: NotificationAttempt["outcome"], answer: Answer | null, reason: string, durationMs: number | null) => {
    const at = clock.now();
    const status = answer && "status" in answer ? answer.status : null;
    const error = answer && "error" in answer ? answer.error : status !== null && (status < 200 || status > 299) ? `http_${status}` : null;
    const detail = {
      notification: notification.id,
      type: notification.type,
      url: shownUrl,
      attempt,
      status,
      error,
      durationMs,
      outcome: outcome.kind,
      ...(outcome.kind === "retry" ? { nextAttemptAt: new Date(outcome.nextAttemptAt).toISOString() } : {}),
    };
    const recorded = await store.recordNotificationAttempt({ id: notification.id, attempt, at, status, error, outcome, event: { reason, detail } });
    const line = { jobId: notification.jobId, notification: notification.id, attempt, status, error, url: shownUrl };
    if (outcome.kind === "given_up") context.log.warn(line, reason);
    else if (outcome.kind === "retry") context.log.info(line, reason);
    if (!recorded) context.log.warn(line, `${label}: attempt ${attempt} ended after its claim lapsed; another engine has it`);
  };
  const giveUp = (answer: Answer, why: string) => record({ kind: "given_up" }, answer, `${label} not sent: ${why}`, null);

  if (!notifier.secret) {
    await giveUp({ error: "no_secret" }, "MEDIAGATE_NOTIFY_SECRET is not set, and notifications are only sent signed");
    return;
  }
  let body = notification.body;
  // A retry reads the job too, for its trace: the header is not part of the body kept.
  const job = await store.getJob(notification.jobId);
  if (body === null) {
    if (!job) {
      await giveUp({ error: "job_not_found" }, `job ${notification.jobId} is not in the store`);
      return;
    }
    // Made once, at the first attempt, and kept: every retry sends the same bytes under the same webhook-id.
    body = await store.keepNotificationBody(notification.id, notificationBody(notification, await notificationData(store, notifier, notification, job)));
  }

  // Checked at every attempt, not only when the job was created: what a name resolves to can change.
  let resolveFailed = false;
  const resolve = async (host: string) => {
    try {
      return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
    } catch (error) {
      resolveFailed = true;
      throw error;
    }
  };
  let target: URL;
  try {
    target = await assertSafeUrl(notification.url, { allowHttp: context.allowPrivateUrls, allowPrivate: context.allowPrivateUrls }, resolve);
  } catch (error) {
    if (!(error instanceof UnsafeUrlError)) throw error;
    const why = `refused URL ${shownUrl}: ${error.reason}`;
    // A name that does not resolve now may tomorrow; an address refused by the rule is refused for good.
    if (!resolveFailed) {
      await giveUp({ error: "unsafe_url" }, `${why} (the rule for provider URLs; MEDIAGATE_ALLOW_PRIVATE_URLS=1 allows private addresses and http)`);
      return;
    }
    await failed({ error: "host_not_found" }, why, null);
    return;
  }

  const sentAt = clock.now();
  // Standard Webhooks: the signature is over `id.timestamp.body` with the secret's key; the library signs.
  const signature = new Webhook(notifier.secret).sign(notification.id, new Date(sentAt), body);
  const started = performance.now();
  const answer = await post(
    target,
    {
      "content-type": "application/json",
      "user-agent": "mediagate",
      "webhook-id": notification.id,
      "webhook-timestamp": String(Math.floor(sentAt / 1000)),
      "webhook-signature": signature,
      // W3C Trace Context: a traced job's notification names the job's span, so the receiver's spans join its trace.
      ...(job?.trace ? { traceparent: traceparentOf(job.trace) } : {}),
    },
    body,
    context.signal,
    notifier.timeoutMs ?? NOTIFY_TIMEOUT_MS,
  );
  const durationMs = Math.round(performance.now() - started);
  if ("status" in answer && answer.status >= 200 && answer.status <= 299) {
    await record({ kind: "delivered" }, answer, `${label} delivered to ${shownUrl} (attempt ${attempt}: HTTP ${answer.status} in ${durationMs} ms)`, durationMs);
    return;
  }
  if ("status" in answer && answer.status === 410) {
    // 410 Gone: the receiver says this address takes no more notifications; retrying would only be refused again.
    await record({ kind: "given_up" }, answer, `${label} not retried: ${shownUrl} answered 410 Gone (attempt ${attempt})`, durationMs);
    return;
  }
  if (context.signal.aborted) {
    // Interrupted by a stop, not refused by the receiver: due again at once, for the next engine.
    await record({ kind: "retry", nextAttemptAt: clock.now() }, { error: "interrupted" }, `${label} attempt ${attempt} interrupted: the engine stopped; it is due again at once`, durationMs);
    return;
  }
  const timeoutS = Math.round((notifier.timeoutMs ?? NOTIFY_TIMEOUT_MS) / 1000);
  await failed(answer, "status" in answer ? `HTTP ${answer.status}` : answer.error === "timeout" ? `no answer within ${timeoutS} s` : answer.error, durationMs);

  /** A failed attempt: retried after a backoff, or given up once it failed past the horizon. */
  async function failed(failure: Answer, why: string, durationMs: number | null): Promise<void> {
    const now = clock.now();
    if (now - notification.createdAt >= NOTIFY_RETRY_HORIZON_MS) {
      const hours = Math.floor((now - notification.createdAt) / 3_600_000);
      await record({ kind: "given_up" }, failure, `${label} given up after ${attempt} attempts over ${hours} h: the last to ${shownUrl} failed (${why})`, durationMs);
      return;
    }
    const waitMs = notificationRetryDelayMs(attempt);
    await record(
      { kind: "retry", nextAttemptAt: now + waitMs },
      failure,
      `${label} attempt ${attempt} to ${shownUrl} failed (${why}${durationMs === null ? "" : `, ${durationMs} ms`}); next attempt in ${Math.ceil(waitMs / 1000)} s`,
      durationMs,
    );
  }
}

/**
 * POSTs `body` with Node's own client: no redirect is followed (a 3xx is a
 * failed attempt), no connection kept, and the answer's body is not read
 * (its status says it all; a receiver streaming one holds nothing here).
 */
function post(url: URL, headers: Record<string, string>, body: string, stopping: AbortSignal, timeoutMs: number): Promise<Answer> {
  const client = url.protocol === "https:" ? https : http;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([stopping, timeout]);
  return new Promise<Answer>((resolve) => {
    const request = client.request(url, { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) }, agent: false, signal }, (response) => {
      resolve({ status: response.statusCode ?? 0 });
      response.destroy();
    });
    request.on("error", (error: NodeJS.ErrnoException) => {
      resolve({ error: timeout.aborted && !stopping.aborted ? "timeout" : (error.code ?? error.message) });
    });
    request.end(body);
  });
}

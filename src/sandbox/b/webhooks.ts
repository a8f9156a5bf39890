import { randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import type { ScaledClock } from "../../core/clock.js";
import type { ResolvedBOptions } from "./options.js";
import type { VirtualTimers } from "./virtual-timers.js";
import { isLoopbackUrl } from "./webhook-url.js";

/** One try at sending a delivery (times: virtual `at`, real `realAt`). */
export interface BDeliveryAttempt {
  attempt: number;
  at: number;
  realAt: number;
  /** The receiver's HTTP status, or null when it did not answer (refused, timed out). */
  statusCode: number | null;
  error: string | null;
  /** The `webhook-timestamp` header sent (seconds). */
  timestamp: number;
}

export type BDeliveryState =
  /** Waiting for its first attempt (the job is not finished yet, or a delay fault holds it). */
  | "scheduled"
  | "sending"
  /** An attempt was answered 2xx. */
  | "delivered"
  /** The last attempt was not answered 2xx; another is scheduled. */
  | "retrying"
  /** Every attempt of the schedule failed. */
  | "failed"
  /** Lost on purpose (drop fault): never sent. */
  | "dropped"
  /** An accepted address that is not loopback: the sandbox makes no outside requests. */
  | "not_sent";

/** One delivery of one message (a duplicate fault makes two deliveries of the same message). */
export interface BDelivery {
  /** The `webhook-id` header, the same for every attempt and every copy of the message. */
  messageId: string;
  jobId: string;
  url: string;
  state: BDeliveryState;
  /** True for the extra copy a duplicate fault adds. */
  duplicate: boolean;
  /** True when the body is pretty-printed instead of compact (reserialize fault). */
  reserialized: boolean;
  /** Virtual time of the next (or first) attempt; null when none is planned. */
  nextAttemptAt: number | null;
  attempts: BDeliveryAttempt[];
  /** The exact bytes sent (set at the first attempt), the job object with billing null. */
  payload: string | null;
}

interface Message {
  id: string;
  jobId: string;
  payload: string | null;
  reserialized: boolean;
}

export type BWebhookFaultKind = "duplicate" | "drop" | "delay" | "reserialize";

interface PendingFault {
  kind: BWebhookFaultKind;
  remaining: number;
  delayMs: number;
}

export interface BWebhookDependencies {
  clock: ScaledClock;
  timers: VirtualTimers;
  options: () => ResolvedBOptions;
  random: () => number;
  /** The job object as a webhook carries it (billing null), or null when the job is gone. */
  payloadOf: (jobId: string) => Record<string, unknown> | null;
}

/** A copy of a message is sent one virtual second after the original. */
const DUPLICATE_LAG_MS = 1_000;

/**
 * spec B Events: when a submit carried `webhook_url`, the job object (billing
 * null) is POSTed there when the job finishes, completed or failed (a
 * submission refused at once included). Signed with the Standard Webhooks
 * scheme (`webhook-id`, `webhook-timestamp`, `webhook-signature`, signature
 * over the exact body bytes); every attempt is signed afresh under the same
 * `webhook-id`. Not answered 2xx within the timeout → retried on the retry
 * schedule (about 55 hours, in virtual time). The payload is the job object
 * itself, with no event envelope (event kind names are not shown).
 */
export class BWebhooks {
  private readonly deliveries: BDelivery[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly controllers = new Set<AbortController>();
  private readonly pendingFaults: PendingFault[] = [];
  private closed = false;

  constructor(private readonly dependencies: BWebhookDependencies) {}

  all(): readonly BDelivery[] {
    return this.deliveries;
  }

  /** The next `count` messages get this fault, before any drawn by probability. */
  injectFault(kind: BWebhookFaultKind, count: number, delayMs: number): void {
    this.pendingFaults.push({ kind, remaining: count, delayMs });
  }

  /** Plans the message of a job that ends at `finishesAt` (virtual time). */
  schedule(jobId: string, url: string, finishesAt: number): void {
    const faults = this.drawFaults();
    const message: Message = { id: `msg_${randomUUID().replaceAll("-", "")}`, jobId, payload: null, reserialized: faults.reserialize };
    const firstAt = finishesAt + faults.delayMs;
    const copies = faults.duplicate ? [false, true] : [false];
    for (const duplicate of copies) {
      const delivery: BDelivery = {
        messageId: message.id,
        jobId,
        url,
        state: "scheduled",
        duplicate,
        reserialized: message.reserialized,
        nextAttemptAt: firstAt + (duplicate ? DUPLICATE_LAG_MS : 0),
        attempts: [],
        payload: null,
      };
      this.deliveries.push(delivery);
      if (faults.drop) {
        delivery.state = "dropped";
        delivery.nextAttemptAt = null;
      } else if (!isLoopbackUrl(url)) {
        delivery.state = "not_sent";
        delivery.nextAttemptAt = null;
      } else {
        this.plan(delivery, message, delivery.nextAttemptAt!);
      }
    }
  }

  /** Runs every attempt due by now (virtual time) and waits until no attempt is in flight. */
  async flush(): Promise<void> {
    this.dependencies.timers.runDue();
    while (this.inFlight.size > 0) {
      await Promise.allSettled([...this.inFlight]);
      this.dependencies.timers.runDue();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const controller of this.controllers) controller.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  private drawFaults(): { duplicate: boolean; drop: boolean; reserialize: boolean; delayMs: number } {
    const { webhookFaults } = this.dependencies.options();
    const random = this.dependencies.random;
    const drawn = {
      duplicate: webhookFaults.duplicateProbability > 0 && random() < webhookFaults.duplicateProbability,
      drop: webhookFaults.dropProbability > 0 && random() < webhookFaults.dropProbability,
      reserialize: webhookFaults.reserializeProbability > 0 && random() < webhookFaults.reserializeProbability,
      delayMs: webhookFaults.delayMs,
    };
    for (const fault of this.pendingFaults) {
      if (fault.remaining <= 0) continue;
      fault.remaining -= 1;
      if (fault.kind === "delay") drawn.delayMs += fault.delayMs;
      else drawn[fault.kind] = true;
    }
    return drawn;
  }

  private plan(delivery: BDelivery, message: Message, at: number): void {
    delivery.nextAttemptAt = at;
    this.dependencies.timers.at(at, () => {
      const sending = this.attempt(delivery, message).finally(() => this.inFlight.delete(sending));
      this.inFlight.add(sending);
    });
  }

  private renderPayload(message: Message): string | null {
    if (message.payload === null) {
      const job = this.dependencies.payloadOf(message.jobId);
      if (job === null) return null;
      message.payload = message.reserialized ? JSON.stringify(job, null, 2) : JSON.stringify(job);
    }
    return message.payload;
  }

  private async attempt(delivery: BDelivery, message: Message): Promise<void> {
    if (this.closed) return;
    const { clock } = this.dependencies;
    const options = this.dependencies.options();
    const payload = this.renderPayload(message);
    if (payload === null) {
      delivery.state = "failed";
      delivery.nextAttemptAt = null;
      return;
    }
    delivery.payload = payload;
    delivery.state = "sending";
    delivery.nextAttemptAt = null;
    const timestampMs = options.webhookTimestamps === "real" ? Date.now() : clock.now();
    const record: BDeliveryAttempt = {
      attempt: delivery.attempts.length + 1,
      at: clock.now(),
      realAt: Date.now(),
      statusCode: null,
      error: null,
      timestamp: Math.floor(timestampMs / 1000),
    };
    delivery.attempts.push(record);
    const controller = new AbortController();
    this.controllers.add(controller);
    const timeout = setTimeout(() => controller.abort(new Error(`no answer within ${options.webhookTimeoutMs} ms`)), options.webhookTimeoutMs);
    try {
      const response = await fetch(delivery.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "mediagate-sandbox-b-webhooks",
          "webhook-id": message.id,
          "webhook-timestamp": String(record.timestamp),
          "webhook-signature": new Webhook(options.webhookSecret).sign(message.id, new Date(timestampMs), payload),
        },
        body: payload,
        redirect: "manual",
        signal: controller.signal,
      });
      record.statusCode = response.status;
      await response.body?.cancel();
    } catch (error) {
      record.error = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    } finally {
      clearTimeout(timeout);
      this.controllers.delete(controller);
    }
    if (this.closed) return;
    if (record.statusCode !== null && record.statusCode >= 200 && record.statusCode < 300) {
      delivery.state = "delivered";
      return;
    }
    // spec B Events 3: retried over about 55 hours; the attempt after attempt n waits retry delay n.
    const delay = options.webhookRetryDelaysMs[delivery.attempts.length - 1];
    if (delay === undefined) {
      delivery.state = "failed";
      return;
    }
    delivery.state = "retrying";
    this.plan(delivery, message, clock.now() + delay);
  }
}

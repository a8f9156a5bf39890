import type { Clock } from "../../core/clock.js";
import type { FGenerationRecord, FGenerationStore } from "./generations.js";
import { signDelivery } from "./signature.js";
import type { FSigningKeys } from "./signing-keys.js";
import type { FWebhookCheck } from "./webhook-url.js";

/**
 * Faults a delivery can be given (spec F Events 7: "Delivery is not
 * guaranteed ... a dropped delivery is silent"; DESIGN: dropped, delayed,
 * duplicated or re-serialised webhooks).
 */
export type FDeliveryFault =
  /** Never delivered, silently (the generation can still be read). */
  | { kind: "drop" }
  /** After the acknowledged attempt, the same request (headers and bytes) is sent once more. */
  | { kind: "duplicate" }
  /** The first attempt is this many virtual ms after readiness. */
  | { kind: "delay"; ms: number }
  /** The body is re-serialised after signing (indented JSON): the signature no longer matches the bytes. */
  | { kind: "reserialize" }
  /** Signed with a key that is not in the JWKS (Key-Id still names the current key). */
  | { kind: "wrong_key" }
  /** The timestamp is this many seconds in the past (default 3 600), correctly signed. */
  | { kind: "old_timestamp"; ageSeconds?: number };

export type FDeliveryState = "waiting" | "sending" | "acknowledged" | "exhausted" | "dropped" | "refused";

export interface FDeliveryPlan {
  generationId: string;
  url: string;
  fault?: FDeliveryFault;
  state: FDeliveryState;
  /** Attempts made, duplicates not counted. */
  attempts: number;
  /** Virtual ms of the next attempt, while waiting. */
  nextAttemptAt: number;
}

export type FAttemptOutcome = "acknowledged" | "rejected" | "timeout" | "network_error" | "refused";

/** One POST to a webhook (or one refused before sending), with exactly what was sent and what came back. */
export interface FDeliveryAttempt {
  generationId: string;
  url: string;
  /** 1 for the first attempt; a duplicate repeats its attempt's number. */
  attempt: number;
  duplicate: boolean;
  /** Virtual and real ms at sending. */
  at: number;
  realAt: number;
  headers: Record<string, string>;
  /** The exact bytes sent. */
  body: Buffer;
  /** The bytes the signature covers (differ from body only under the reserialize fault). */
  signedBody: Buffer;
  keyId: string;
  outcome: FAttemptOutcome;
  statusCode?: number;
  /** The receiver's answer, truncated to 1 000 characters. */
  responseBody?: string;
  error?: string;
}

export interface FDeliverySettings {
  /** Virtual ms after each failed attempt; its length is the number of retries. */
  retryDelaysMs: readonly number[];
  /** Real ms. */
  deliveryTimeoutMs: number;
  webhookTimestampClock: "virtual" | "real";
}

export interface FDeliveryDependencies {
  clock: Clock;
  keys: FSigningKeys;
  generations: FGenerationStore;
  payloadBytes(generation: FGenerationRecord): Buffer;
  /** X-Img-Webhook-User-Id of the generation's account. */
  userId(generation: FGenerationRecord): string;
  /** The webhook filter, applied again before each attempt (the host may resolve elsewhere by now). */
  checkUrl(url: string): Promise<FWebhookCheck>;
  settings: FDeliverySettings;
}

/** Readiness is computed lazily from the clock, so a real-time sweep notices it, clock.advance() jumps included. */
const SWEEP_INTERVAL_MS = 20;
const DEFAULT_OLD_TIMESTAMP_SECONDS = 3_600;
const RESPONSE_EXCERPT = 1_000;

/**
 * spec F Events: one signed delivery per generation that asked for one,
 * retried on a non-2xx answer or a timeout (count and schedule unpublished:
 * settings), every attempt recorded.
 */
export class FDeliveries {
  private readonly plans: FDeliveryPlan[] = [];
  private readonly attempts: FDeliveryAttempt[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly closing = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly dependencies: FDeliveryDependencies) {}

  track(generation: FGenerationRecord, fault: FDeliveryFault | undefined): void {
    if (generation.webhookUrl === undefined) return;
    const delayMs = fault?.kind === "delay" ? fault.ms : 0;
    this.plans.push({
      generationId: generation.id,
      url: generation.webhookUrl,
      ...(fault ? { fault } : {}),
      state: fault?.kind === "drop" ? "dropped" : "waiting",
      attempts: 0,
      nextAttemptAt: generation.readyAt + delayMs,
    });
    if (fault?.kind !== "drop" && !this.closing.signal.aborted) {
      this.timer ??= setInterval(() => this.sweep(), SWEEP_INTERVAL_MS).unref();
    }
  }

  allPlans(): readonly FDeliveryPlan[] {
    return this.plans;
  }

  allAttempts(): readonly FDeliveryAttempt[] {
    return this.attempts;
  }

  /** Stops the sweep, aborts attempts in flight and waits for them. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.closing.abort(new Error("the sandbox is closing"));
    await Promise.allSettled([...this.inFlight]);
  }

  private sweep(): void {
    const now = this.dependencies.clock.now();
    for (const plan of this.plans) {
      if (plan.state !== "waiting" || now < plan.nextAttemptAt) continue;
      plan.state = "sending";
      const sending = this.deliver(plan).finally(() => this.inFlight.delete(sending));
      this.inFlight.add(sending);
    }
    if (!this.plans.some((plan) => plan.state === "waiting" || plan.state === "sending")) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async deliver(plan: FDeliveryPlan): Promise<void> {
    const { clock, settings } = this.dependencies;
    const generation = this.dependencies.generations.find(plan.generationId);
    if (!generation) return;
    plan.attempts += 1;
    const attempt = await this.send(plan, generation);
    if (this.closing.signal.aborted) return;
    if (attempt.outcome === "refused") {
      plan.state = "refused";
    } else if (attempt.outcome === "acknowledged") {
      plan.state = "acknowledged";
      if (plan.fault?.kind === "duplicate") {
        const { statusCode: _statusCode, responseBody: _responseBody, error: _error, ...request } = attempt;
        await this.post(plan, { ...request, duplicate: true, outcome: "network_error" });
      }
    } else if (plan.attempts <= settings.retryDelaysMs.length) {
      plan.nextAttemptAt = clock.now() + settings.retryDelaysMs[plan.attempts - 1]!;
      plan.state = "waiting";
    } else {
      plan.state = "exhausted";
    }
  }

  /** Builds and signs one attempt (spec F Events 2 and 4), then posts it. */
  private async send(plan: FDeliveryPlan, generation: FGenerationRecord): Promise<FDeliveryAttempt> {
    const { clock, keys, settings } = this.dependencies;
    const base = { generationId: plan.generationId, url: plan.url, attempt: plan.attempts, duplicate: false };
    const check = await this.dependencies.checkUrl(plan.url);
    if (!check.ok) {
      const refused: FDeliveryAttempt = {
        ...base,
        at: clock.now(),
        realAt: Date.now(),
        headers: {},
        body: Buffer.alloc(0),
        signedBody: Buffer.alloc(0),
        keyId: keys.current().kid,
        outcome: "refused",
        error: `webhook_url refused at delivery: ${check.reason}`,
      };
      this.attempts.push(refused);
      return refused;
    }
    const fault = plan.fault;
    const signedBody = this.dependencies.payloadBytes(generation);
    const nowMs = settings.webhookTimestampClock === "real" ? Date.now() : clock.now();
    const ageSeconds = fault?.kind === "old_timestamp" ? (fault.ageSeconds ?? DEFAULT_OLD_TIMESTAMP_SECONDS) : 0;
    const timestamp = String(Math.floor(nowMs / 1000) - ageSeconds);
    const userId = this.dependencies.userId(generation);
    const current = keys.current();
    const signingKey = fault?.kind === "wrong_key" ? keys.stranger() : current;
    const signature = signDelivery({ generationId: generation.id, userId, timestamp, body: signedBody }, signingKey.privateKey);
    const body =
      fault?.kind === "reserialize" ? Buffer.from(JSON.stringify(JSON.parse(signedBody.toString("utf8")), null, 2), "utf8") : signedBody;
    return this.post(plan, {
      ...base,
      at: clock.now(),
      realAt: Date.now(),
      headers: {
        "content-type": "application/json",
        "x-img-webhook-generation-id": generation.id,
        "x-img-webhook-user-id": userId,
        "x-img-webhook-timestamp": timestamp,
        "x-img-webhook-key-id": current.kid,
        "x-img-webhook-signature": signature,
      },
      body,
      signedBody,
      keyId: current.kid,
      outcome: "network_error",
    });
  }

  /** POSTs the attempt's headers and bytes; records and returns it with the answer. */
  private async post(plan: FDeliveryPlan, prepared: FDeliveryAttempt): Promise<FDeliveryAttempt> {
    const attempt: FDeliveryAttempt = { ...prepared, at: this.dependencies.clock.now(), realAt: Date.now() };
    this.attempts.push(attempt);
    const timeout = AbortSignal.timeout(this.dependencies.settings.deliveryTimeoutMs);
    try {
      const response = await fetch(plan.url, {
        method: "POST",
        headers: attempt.headers,
        body: attempt.body,
        redirect: "manual",
        signal: AbortSignal.any([timeout, this.closing.signal]),
      });
      attempt.statusCode = response.status;
      attempt.responseBody = (await response.text()).slice(0, RESPONSE_EXCERPT);
      // spec F Events 6: any 2xx acknowledges; anything else leads to a retry.
      attempt.outcome = response.ok ? "acknowledged" : "rejected";
    } catch (error) {
      attempt.outcome = timeout.aborted ? "timeout" : "network_error";
      attempt.error = error instanceof Error ? error.message : String(error);
    }
    return attempt;
  }
}

/** Virtual milliseconds: a fixed value, or a range each job draws from uniformly (seeded randomness). */
export type BRenderTime = number | { minMs: number; maxMs: number };

/** Deliberate webhook misbehaviour, drawn per message (a message is one job's terminal event). */
export interface BWebhookFaults {
  /** Chance (0..1) that a message is sent twice, under the same `webhook-id`. */
  duplicateProbability?: number;
  /** Chance (0..1) that a message is lost: never sent, recorded as "dropped". */
  dropProbability?: number;
  /** Extra virtual ms before the first attempt of every message. */
  delayMs?: number;
  /** Chance (0..1) that a message's body is sent pretty-printed (still correctly signed over those exact bytes). */
  reserializeProbability?: number;
}

export interface BEmulatorOptions {
  /** Keys of the one account (they share its balance; concurrency and idempotency keys are per key). Default ["sandbox-b-key"]. */
  apiKeys?: string[];
  /** Prepaid balance, micro-USD. Default 100,000,000 (100 USD). */
  balanceMicroUsd?: number;
  /** Virtual ms a job stays `queued` before `running`. Default 1,000. */
  queueTimeMs?: number;
  /** Virtual ms a job stays `running` before it completes or fails. Default 4,000 to 12,000. */
  renderTimeMs?: BRenderTime;
  /** Chance (0..1) that an accepted job fails during generation (`generation_failed`). Default 0. */
  failureProbability?: number;
  /** Virtual ms billing reads answer `pending` after a job finishes. Default 3,000. */
  settlementDelayMs?: number;
  /** Virtual ms billing reads then answer `unavailable` before `settled`. Default 0 (never unavailable). */
  billingUnavailableMs?: number;
  /** Jobs queued or running at once per key; one more submit answers 429. Default 8. */
  concurrencyLimit?: number;
  /** Submits per key in any 60 virtual seconds; one more answers 429. Default null: no rate ceiling. */
  submitsPerMinute?: number | null;
  /** Lifetime of result addresses, virtual ms (job `output` URLs from completion, `/content` URLs from the read). Default one hour. */
  resultUrlTtlMs?: number;
  /** Standard Webhooks signing secret, `whsec_` + base64. Default the sandbox's fixed secret (SANDBOX_B_WEBHOOK_SECRET). */
  webhookSecret?: string;
  /**
   * A deviation from the real service, for local tests: accept `http:` and
   * loopback or private webhook addresses. Default false: https and public
   * addresses only, anything else answers 400.
   */
  allowLocalWebhookUrls?: boolean;
  /** Virtual ms between an attempt that was not answered 2xx and the next. Default WEBHOOK_RETRY_DELAYS_MS (about 55 hours in all). */
  webhookRetryDelaysMs?: number[];
  /** Real ms an attempt waits for the receiver's answer. Default 5,000. */
  webhookTimeoutMs?: number;
  /**
   * Clock of the `webhook-timestamp` header and the signature. Default
   * "real" (wall clock): the receiver is outside the sandbox and checks the
   * Standard Webhooks tolerance (five minutes either way) against its own
   * clock, which a time scale above 1 would leave behind. "virtual" signs
   * with the sandbox's clock, for a receiver that runs on it too.
   */
  webhookTimestamps?: "virtual" | "real";
  webhookFaults?: BWebhookFaults;
  /** HTTP status of a submit answered with a failed job (rejected body, unavailable operation, insufficient balance). Default 200. */
  rejectedSubmitStatus?: number;
}

export interface ResolvedBOptions {
  apiKeys: string[];
  balanceMicroUsd: number;
  queueTimeMs: number;
  renderTimeMs: BRenderTime;
  failureProbability: number;
  settlementDelayMs: number;
  billingUnavailableMs: number;
  concurrencyLimit: number;
  submitsPerMinute: number | null;
  resultUrlTtlMs: number;
  webhookSecret: string;
  allowLocalWebhookUrls: boolean;
  webhookRetryDelaysMs: number[];
  webhookTimeoutMs: number;
  webhookTimestamps: "virtual" | "real";
  webhookFaults: Required<BWebhookFaults>;
  rejectedSubmitStatus: number;
}

export const DEFAULT_B_API_KEY = "sandbox-b-key";
/** The sandbox's own signing secret (not a secret: the sandbox is local). */
export const SANDBOX_B_WEBHOOK_SECRET = `whsec_${Buffer.from("mediagate sandbox b webhook key!").toString("base64")}`;
export const B_CONCURRENCY_LIMIT = 8;

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/**
 * spec B Events 3: deliveries "are retried over about 55 hours". The
 * sandbox's schedule (the Standard Webhooks reference schedule, stretched):
 * 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h four times and 8 h; the last
 * attempt is 55 h 35 min after the first. Eleven attempts in all.
 */
export const WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR, 10 * HOUR, 10 * HOUR, 8 * HOUR];

function probability(value: number | undefined, name: string): number {
  const chance = value ?? 0;
  if (!(chance >= 0 && chance <= 1)) throw new RangeError(`${name} must be between 0 and 1`);
  return chance;
}

export function resolveBOptions(options: BEmulatorOptions): ResolvedBOptions {
  const apiKeys = options.apiKeys ?? [DEFAULT_B_API_KEY];
  if (apiKeys.length === 0) throw new RangeError("the B emulator needs at least one API key");
  const balanceMicroUsd = options.balanceMicroUsd ?? 100_000_000;
  if (!Number.isSafeInteger(balanceMicroUsd)) throw new RangeError("balanceMicroUsd must be an integer");
  const webhookSecret = options.webhookSecret ?? SANDBOX_B_WEBHOOK_SECRET;
  if (!webhookSecret.startsWith("whsec_")) throw new RangeError("webhookSecret must start with whsec_");
  const faults = options.webhookFaults ?? {};
  return {
    apiKeys,
    balanceMicroUsd,
    queueTimeMs: options.queueTimeMs ?? 1_000,
    renderTimeMs: options.renderTimeMs ?? { minMs: 4_000, maxMs: 12_000 },
    failureProbability: probability(options.failureProbability, "failureProbability"),
    settlementDelayMs: options.settlementDelayMs ?? 3_000,
    billingUnavailableMs: options.billingUnavailableMs ?? 0,
    concurrencyLimit: options.concurrencyLimit ?? B_CONCURRENCY_LIMIT,
    submitsPerMinute: options.submitsPerMinute ?? null,
    resultUrlTtlMs: options.resultUrlTtlMs ?? HOUR,
    webhookSecret,
    allowLocalWebhookUrls: options.allowLocalWebhookUrls ?? false,
    webhookRetryDelaysMs: [...(options.webhookRetryDelaysMs ?? WEBHOOK_RETRY_DELAYS_MS)],
    webhookTimeoutMs: options.webhookTimeoutMs ?? 5_000,
    webhookTimestamps: options.webhookTimestamps ?? "real",
    webhookFaults: {
      duplicateProbability: probability(faults.duplicateProbability, "duplicateProbability"),
      dropProbability: probability(faults.dropProbability, "dropProbability"),
      delayMs: faults.delayMs ?? 0,
      reserializeProbability: probability(faults.reserializeProbability, "reserializeProbability"),
    },
    rejectedSubmitStatus: options.rejectedSubmitStatus ?? 200,
  };
}

export function drawRenderTime(renderTime: BRenderTime, random: () => number): number {
  if (typeof renderTime === "number") return renderTime;
  return Math.round(renderTime.minMs + (renderTime.maxMs - renderTime.minMs) * random());
}

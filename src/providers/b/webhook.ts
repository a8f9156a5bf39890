import { timingSafeEqual } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { MediagateError } from "../../core/errors.js";
import { parseJob, type BJob } from "./job-object.js";

/** The Standard Webhooks tolerance: a delivery signed more than five minutes from now (either way) is refused. */
export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;

export type BWebhookErrorCode =
  | "missing_headers"
  | "invalid_timestamp"
  | "timestamp_too_old"
  | "timestamp_too_new"
  | "bad_signature"
  | "invalid_secret"
  | "invalid_payload";

/**
 * The one error a delivery check throws. `invalid_payload` means the
 * signature was good but the body is not JSON: `deliveryId` is then set,
 * since B did send it.
 */
export class BWebhookError extends MediagateError {
  constructor(
    code: BWebhookErrorCode,
    message: string,
    readonly deliveryId: string | null = null,
  ) {
    super(code, message);
  }
}

/** A delivery whose signature was verified. */
export interface BWebhookEvent {
  /** `webhook-id`: the same on every retry of one message (spec B Events 3: de-duplicate by it). */
  deliveryId: string;
  /** `webhook-timestamp`, in ms since the epoch. */
  timestampMs: number;
  /** The body, parsed only after the signature was verified. */
  payload: unknown;
  /** spec B Events 2: the payload is the job object (with `billing` null); null when it is not one. */
  job: BJob | null;
}

export interface VerifyBWebhookOptions {
  /** Now, in ms since the epoch (default the system clock): mediagate's clock is injected. */
  nowMs?: number;
  toleranceMs?: number;
}

type HeaderValue = string | string[] | undefined;

function header(headers: Record<string, HeaderValue>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? value.join(" ") : value;
  }
  return undefined;
}

/** Constant-time comparison of two signatures (unequal lengths differ without comparing bytes). */
function sameSignature(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Verifies a B webhook delivery (spec B Events 3: the Standard Webhooks
 * signature scheme) over the raw bytes, then parses it. Throws
 * BWebhookError. The timestamp is checked here against an injectable now,
 * both ways, because the library's own `verify` reads the system clock; the
 * library's `sign` computes the expected HMAC, and every `v1,` signature of
 * the header is compared in constant time.
 */
export function verifyBWebhook(
  rawBody: Buffer | string,
  headers: Record<string, HeaderValue>,
  secret: string,
  options: VerifyBWebhookOptions = {},
): BWebhookEvent {
  const deliveryId = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!deliveryId || !timestamp || !signatures) {
    throw new BWebhookError("missing_headers", "a B delivery needs webhook-id, webhook-timestamp and webhook-signature headers");
  }
  if (!/^\d{1,15}$/.test(timestamp.trim())) throw new BWebhookError("invalid_timestamp", `webhook-timestamp "${timestamp}" is not whole seconds`);
  const timestampMs = Number(timestamp.trim()) * 1000;
  const nowMs = options.nowMs ?? Date.now();
  const toleranceMs = options.toleranceMs ?? WEBHOOK_TOLERANCE_MS;
  if (nowMs - timestampMs > toleranceMs) throw new BWebhookError("timestamp_too_old", `the delivery was signed ${Math.round((nowMs - timestampMs) / 1000)} s ago`);
  if (timestampMs - nowMs > toleranceMs) throw new BWebhookError("timestamp_too_new", `the delivery is signed ${Math.round((timestampMs - nowMs) / 1000)} s in the future`);

  let signer: Webhook;
  try {
    signer = new Webhook(secret);
  } catch (error) {
    throw new BWebhookError("invalid_secret", `the B webhook secret is not a Standard Webhooks secret (whsec_…): ${(error as Error).message}`);
  }
  const expected = signer.sign(deliveryId, new Date(timestampMs), rawBody).slice("v1,".length);
  const matches = signatures
    .split(" ")
    .some((versioned) => versioned.startsWith("v1,") && sameSignature(versioned.slice("v1,".length), expected));
  if (!matches) throw new BWebhookError("bad_signature", "no webhook-signature matches the body signed with the configured secret");

  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.isBuffer(rawBody) ? rawBody.toString("utf8") : rawBody);
  } catch {
    throw new BWebhookError("invalid_payload", `delivery ${deliveryId} is correctly signed but its body is not JSON`, deliveryId);
  }
  return { deliveryId, timestampMs, payload, job: parseJob(payload) };
}

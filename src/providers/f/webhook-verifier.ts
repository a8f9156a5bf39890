import { MediagateError } from "../../core/errors.js";
import { FKeyCache, type JwksLoader } from "./jwks.js";
import { F_WEBHOOK_HEADERS, fSignedMessage, verifyWithKeys, type FSignedHeaders } from "./signature.js";

/** Why a delivery was refused: a stable value to branch on (the message is for humans). */
export type FWebhookFailure =
  | "missing_header"
  | "malformed_header"
  | "timestamp_too_old"
  | "timestamp_in_future"
  | "signature_invalid"
  | "keys_unavailable"
  | "payload_not_json";

/** The one error a delivery check throws. */
export class FWebhookVerificationError extends MediagateError {
  constructor(
    readonly reason: FWebhookFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("webhook_verification_failed", message, options);
  }
}

/** Headers as Node (IncomingHttpHeaders), the Fetch API (Headers) or mediagate's server give them. */
export type FWebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** A delivery whose signature verified: the signed headers and the raw bytes they cover. */
export interface FSignedDelivery {
  generationId: string;
  userId: string;
  /** Unix seconds. */
  timestamp: number;
  /** The kid of the key that verified (null when that key had none). */
  keyId: string | null;
  rawBody: Buffer;
}

/** A verified delivery with its body parsed as JSON (after the signature check). */
export interface FVerifiedDelivery {
  generationId: string;
  userId: string;
  timestamp: number;
  keyId: string | null;
  /** The parsed body: the generation result (spec F Events 1). Validate it with a schema before use. */
  payload: unknown;
}

/**
 * spec F Events 8: "the timestamp tolerance ... unpublished". Five minutes,
 * the Standard Webhooks default, both ways (too old and too far ahead).
 */
export const DEFAULT_F_WEBHOOK_TOLERANCE_MS = 5 * 60_000;
/** The least time between two refreshes of the key set; see FKeyCache. */
export const DEFAULT_F_JWKS_REFRESH_COOLDOWN_MS = 30_000;

/** Upper bounds on header values, so a hostile request cannot make us hash or log megabytes. */
const MAX_ID_LENGTH = 512;
const TIMESTAMP = /^\d{1,12}$/;
/** spec F Events 2: an Ed25519 signature in lowercase hex (64 bytes); upper case is accepted too, at no cost to safety. */
const SIGNATURE = /^[0-9a-fA-F]{128}$/;

function headerOf(headers: FWebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const found = Object.keys(headers).find((key) => key.toLowerCase() === name);
  const value = found === undefined ? undefined : headers[found];
  if (Array.isArray(value)) {
    if (value.length > 1) throw new FWebhookVerificationError("malformed_header", `${name} is given more than once`);
    return value[0];
  }
  return value;
}

function requiredHeader(headers: FWebhookHeaders, name: string): string {
  const value = headerOf(headers, name);
  if (value === undefined || value.length === 0) throw new FWebhookVerificationError("missing_header", `the delivery has no ${name} header`);
  if (value.length > MAX_ID_LENGTH) throw new FWebhookVerificationError("malformed_header", `${name} is longer than ${MAX_ID_LENGTH} characters`);
  return value;
}

export interface FVerifyOptions {
  toleranceMs: number;
  now: () => number;
}

/** The timestamp in Unix seconds, checked against the tolerance both ways. */
function checkTimestamp(text: string, options: FVerifyOptions): number {
  if (!TIMESTAMP.test(text)) throw new FWebhookVerificationError("malformed_header", `${F_WEBHOOK_HEADERS.timestamp} is not Unix seconds in decimal`);
  const seconds = Number(text);
  const skewMs = options.now() - seconds * 1000;
  if (skewMs > options.toleranceMs) {
    throw new FWebhookVerificationError("timestamp_too_old", `the delivery's timestamp is ${Math.round(skewMs / 1000)} s old, beyond the ${options.toleranceMs / 1000} s tolerance`);
  }
  if (-skewMs > options.toleranceMs) {
    throw new FWebhookVerificationError("timestamp_in_future", `the delivery's timestamp is ${Math.round(-skewMs / 1000)} s ahead, beyond the ${options.toleranceMs / 1000} s tolerance`);
  }
  return seconds;
}

/**
 * Verifies one delivery over its raw bytes, before anything is parsed (spec F
 * Events 3–5): required headers, timestamp within the tolerance, then the
 * Ed25519 signature against the cached key set; when no cached key verifies,
 * the set is refreshed once and tried again. Throws FWebhookVerificationError.
 */
export async function verifyFDelivery(
  rawBody: Uint8Array,
  headers: FWebhookHeaders,
  cache: FKeyCache,
  load: JwksLoader,
  options: FVerifyOptions,
): Promise<FSignedDelivery> {
  const signed: FSignedHeaders = {
    generationId: requiredHeader(headers, F_WEBHOOK_HEADERS.generationId),
    userId: requiredHeader(headers, F_WEBHOOK_HEADERS.userId),
    timestamp: requiredHeader(headers, F_WEBHOOK_HEADERS.timestamp),
  };
  const signatureText = requiredHeader(headers, F_WEBHOOK_HEADERS.signature);
  const keyIdHint = headerOf(headers, F_WEBHOOK_HEADERS.keyId) ?? null;
  const timestamp = checkTimestamp(signed.timestamp, options);
  if (!SIGNATURE.test(signatureText)) {
    throw new FWebhookVerificationError("malformed_header", `${F_WEBHOOK_HEADERS.signature} is not a 64-byte Ed25519 signature in hex`);
  }
  const signature = Buffer.from(signatureText, "hex");
  const message = fSignedMessage(signed, rawBody);

  let cached;
  try {
    cached = await cache.get(load, options.now());
  } catch (error) {
    throw new FWebhookVerificationError("keys_unavailable", `F's key set could not be loaded: ${(error as Error).message}`, { cause: error });
  }
  let verified = verifyWithKeys(message, signature, cached.set.keys, keyIdHint);
  let refreshNote = "";
  if (!verified && !cached.fresh) {
    // spec F Events 3: refresh when a signature fails against the cached copy (a rotated key), once.
    try {
      const refreshed = await cache.refresh(load, options.now());
      if (refreshed) verified = verifyWithKeys(message, signature, refreshed.keys, keyIdHint);
      else refreshNote = " (the key set was loaded too recently to refresh)";
    } catch (error) {
      refreshNote = ` (refreshing F's key set failed: ${(error as Error).message})`;
    }
  }
  if (!verified) {
    throw new FWebhookVerificationError("signature_invalid", `no key of F's key set verifies the delivery's signature${refreshNote}`);
  }
  return { generationId: signed.generationId, userId: signed.userId, timestamp, keyId: verified.kid, rawBody: Buffer.from(rawBody) };
}

export interface FWebhookVerifierOptions {
  /** The key set: the JWKS URL (`{f_base_url}/v1/.well-known/jwks.json`), or a function returning the parsed document. */
  jwks: string | JwksLoader;
  /** Largest accepted distance between the delivery's timestamp and now, both ways. Default 5 minutes. */
  toleranceMs?: number;
  /** Default the system clock. */
  clock?: { now(): number };
  /** Least time between two key set refreshes. Default 30 s. */
  refreshCooldownMs?: number;
  /** Used to fetch a JWKS URL. Default global fetch. */
  fetch?: typeof fetch;
}

/** Per call overrides: the adapter loads keys through its ProviderHttp and reads time from the call's clock. */
export interface FVerifyCall {
  jwks?: JwksLoader;
  now?: () => number;
}

export interface FWebhookVerifier {
  /** Verifies the raw body bytes as received, then parses them. Throws FWebhookVerificationError. */
  verify(rawBody: Uint8Array, headers: FWebhookHeaders): Promise<FVerifiedDelivery>;
  /** Verifies the signature only and returns the exact bytes it covers, unparsed. Throws FWebhookVerificationError. */
  verifySignature(rawBody: Uint8Array, headers: FWebhookHeaders, call?: FVerifyCall): Promise<FSignedDelivery>;
}

/** A JWKS URL as a loader: GET, 2xx, JSON. */
export function jwksUrlLoader(url: string, fetchImpl: typeof fetch = fetch): JwksLoader {
  return async () => {
    const response = await fetchImpl(url, { headers: { accept: "application/json" }, redirect: "error", signal: AbortSignal.timeout(10_000) });
    if (!response.ok) throw new Error(`GET ${url} answered HTTP ${response.status}`);
    return (await response.json()) as unknown;
  };
}

/** Parses a verified body; the signature already covers these exact bytes. */
export function parseVerifiedBody(rawBody: Buffer): unknown {
  try {
    return JSON.parse(rawBody.toString("utf8")) as unknown;
  } catch (error) {
    throw new FWebhookVerificationError("payload_not_json", "the delivery is authentic but its body is not JSON", { cause: error });
  }
}

/**
 * F's delivery verifier for library users (and the adapter's webhooks):
 * raw bytes and headers in, the verified delivery or one typed error out.
 */
export function createFWebhookVerifier(options: FWebhookVerifierOptions): FWebhookVerifier {
  const clock = options.clock ?? { now: () => Date.now() };
  const toleranceMs = options.toleranceMs ?? DEFAULT_F_WEBHOOK_TOLERANCE_MS;
  if (!(toleranceMs > 0)) throw new RangeError(`the timestamp tolerance must be positive, got ${toleranceMs}`);
  const load = typeof options.jwks === "string" ? jwksUrlLoader(options.jwks, options.fetch) : options.jwks;
  const cache = new FKeyCache(options.refreshCooldownMs ?? DEFAULT_F_JWKS_REFRESH_COOLDOWN_MS);
  const verifySignature = (rawBody: Uint8Array, headers: FWebhookHeaders, call: FVerifyCall = {}) =>
    verifyFDelivery(rawBody, headers, cache, call.jwks ?? load, { toleranceMs, now: call.now ?? (() => clock.now()) });
  return {
    verifySignature,
    async verify(rawBody, headers) {
      const { rawBody: bytes, ...signed } = await verifySignature(rawBody, headers);
      return { ...signed, payload: parseVerifiedBody(bytes) };
    },
  };
}

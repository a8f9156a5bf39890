import { createHash, verify } from "node:crypto";
import type { FPublicKey } from "./jwks.js";

/** spec F Events 2: the delivery headers, lower-cased as Node and mediagate's server give them. */
export const F_WEBHOOK_HEADERS = {
  generationId: "x-img-webhook-generation-id",
  userId: "x-img-webhook-user-id",
  timestamp: "x-img-webhook-timestamp",
  keyId: "x-img-webhook-key-id",
  signature: "x-img-webhook-signature",
} as const;

/** The signed header values of one delivery, as received. */
export interface FSignedHeaders {
  generationId: string;
  userId: string;
  /** X-Img-Webhook-Timestamp exactly as received (Unix seconds, decimal). */
  timestamp: string;
}

/**
 * spec F Events 4: generation-id header, user-id header, timestamp header and
 * the lowercase hex SHA-256 of the raw body bytes, joined in this order by a
 * single line feed, encoded as UTF-8. The digest covers the bytes as sent
 * (Events 5), so the body is never parsed or re-serialised first.
 */
export function fSignedMessage(headers: FSignedHeaders, rawBody: Uint8Array): Buffer {
  const digest = createHash("sha256").update(rawBody).digest("hex");
  return Buffer.from([headers.generationId, headers.userId, headers.timestamp, digest].join("\n"), "utf8");
}

/**
 * Tries each key (the Key-Id hint's key first: spec F Events 4, "Key-Id is a
 * hint, not a requirement") and returns the one that verifies, or null.
 * Ed25519 verification compares nothing secret, so there is no timing concern.
 */
export function verifyWithKeys(message: Buffer, signature: Buffer, keys: readonly FPublicKey[], keyIdHint: string | null): FPublicKey | null {
  const ordered = keyIdHint === null ? keys : [...keys.filter((key) => key.kid === keyIdHint), ...keys.filter((key) => key.kid !== keyIdHint)];
  for (const candidate of ordered) {
    if (verify(null, message, candidate.key, signature)) return candidate;
  }
  return null;
}

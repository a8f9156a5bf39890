import { createHash, sign, type KeyObject } from "node:crypto";

export interface FSignedFields {
  /** X-Img-Webhook-Generation-Id. */
  generationId: string;
  /** X-Img-Webhook-User-Id (base64 of the account id). */
  userId: string;
  /** X-Img-Webhook-Timestamp, Unix seconds in decimal. */
  timestamp: string;
  /** The body bytes the signature covers. */
  body: Buffer;
}

/**
 * spec F Events 4: generation-id header, user-id header, timestamp header and
 * the lowercase hex SHA-256 of the raw body bytes, joined by a single
 * line-feed, encoded as UTF-8.
 */
export function signedMessage(fields: FSignedFields): Buffer {
  const digest = createHash("sha256").update(fields.body).digest("hex");
  return Buffer.from([fields.generationId, fields.userId, fields.timestamp, digest].join("\n"), "utf8");
}

/** spec F Events 2: X-Img-Webhook-Signature is the Ed25519 signature of signedMessage, lowercase hex. Pure: bytes and key in. */
export function signDelivery(fields: FSignedFields, privateKey: KeyObject): string {
  return sign(null, signedMessage(fields), privateKey).toString("hex");
}

import { createHash } from "node:crypto";
import { BApiError } from "./errors.js";

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/**
 * What "the same body" means for spec B Idempotency: the same operation and
 * the same JSON value (webhook_url included; key order and whitespace do
 * not matter).
 */
export function requestFingerprint(apiId: string, body: unknown): string {
  return createHash("sha256").update(JSON.stringify(canonical({ apiId, body: body ?? null }))).digest("hex");
}

const MAX_KEY_LENGTH = 255;

/** The Idempotency-Key header: absent, or 1 to 255 characters (the sandbox's limit) — else 400. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return null;
  if (value.trim() === "" || value.length > MAX_KEY_LENGTH) {
    throw new BApiError(400, "invalid_idempotency_key", `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters`);
  }
  return value;
}

/**
 * Idempotency keys, scoped per API key and kept for the life of the sandbox
 * (retention is not shown). spec B Idempotency: 1. same key and same body →
 * the existing job as it is, a failed one included; 2. same key, another
 * body → refused (422 idempotency_key_reused); 3. a failed job is replayed
 * on its key, so only a new key submits again.
 */
export class IdempotencyKeys {
  private readonly jobIds = new Map<string, string>();

  private slot(apiKey: string, idempotencyKey: string): string {
    return `${apiKey}\u0000${idempotencyKey}`;
  }

  find(apiKey: string, idempotencyKey: string): string | undefined {
    return this.jobIds.get(this.slot(apiKey, idempotencyKey));
  }

  remember(apiKey: string, idempotencyKey: string, jobId: string): void {
    this.jobIds.set(this.slot(apiKey, idempotencyKey), jobId);
  }
}

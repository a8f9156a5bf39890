import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../core/clock.js";

/**
 * Expiring signed URLs, as providers hand out for results: the path carries
 * an expiry (virtual time) and an HMAC over path and expiry.
 */
export class SignedUrls {
  private readonly secret = randomBytes(32);

  constructor(private readonly clock: Clock) {}

  /** Returns `base + path?expires=…&sig=…`, valid for `ttlMs` of virtual time. */
  sign(base: string, path: string, ttlMs: number): string {
    const expires = this.clock.now() + ttlMs;
    return `${base}${path}?expires=${expires}&sig=${this.signature(path, expires)}`;
  }

  /** "ok", "expired" or "bad_signature" for a request path and its query. */
  check(path: string, query: { expires?: unknown; sig?: unknown }): "ok" | "expired" | "bad_signature" {
    const expires = Number(query.expires);
    const sig = typeof query.sig === "string" ? query.sig : "";
    if (!Number.isFinite(expires)) return "bad_signature";
    const expected = Buffer.from(this.signature(path, expires));
    const given = Buffer.from(sig);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "bad_signature";
    return this.clock.now() > expires ? "expired" : "ok";
  }

  private signature(path: string, expires: number): string {
    return createHmac("sha256", this.secret).update(`${path}\n${expires}`).digest("hex");
  }
}

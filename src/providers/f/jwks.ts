import { createPublicKey, type KeyObject } from "node:crypto";

/** One verification key from F's key set. */
export interface FPublicKey {
  /** The JWK's `kid`, or null when it has none (Key-Id is only a hint: spec F Events 4). */
  kid: string | null;
  key: KeyObject;
}

/** The parsed key set, with what was skipped and why (shown when nothing verifies). */
export interface FKeySet {
  keys: FPublicKey[];
  skipped: string[];
}

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE, AlgorithmIdentifier 1.3.101.112, BIT STRING of 32 bytes. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const ED25519_PUBLIC_KEY_BYTES = 32;
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

/** spec F Events 3: `x` is base64url without padding; padded before decoding. Null when it is not 32 bytes of base64url. */
export function decodeEd25519X(x: string): Buffer | null {
  if (!BASE64URL.test(x)) return null;
  const unpadded = x.replace(/=+$/, "");
  const padded = unpadded + "=".repeat((4 - (unpadded.length % 4)) % 4);
  const bytes = Buffer.from(padded.replace(/-/g, "+").replace(/_/g, "/"), "base64");
  return bytes.length === ED25519_PUBLIC_KEY_BYTES ? bytes : null;
}

/** A raw 32-byte Ed25519 public key as a node:crypto key, by wrapping it in its SPKI DER form. */
export function ed25519PublicKey(raw: Buffer): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: "der", type: "spki" });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Parses a key set document `{ keys: [...] }`. Keys that are not Ed25519
 * (`kty` OKP, `crv` Ed25519) or whose `x` is not 32 bytes are skipped, not
 * fatal: one usable key is enough. The other JWK members (`use`, `alg`) are
 * not shown by the spec and not required.
 */
export function parseJwks(document: unknown): FKeySet {
  if (!isRecord(document) || !Array.isArray(document.keys)) throw new Error("the key set is not a JSON object with a keys array");
  const keys: FPublicKey[] = [];
  const skipped: string[] = [];
  for (const [index, entry] of document.keys.entries()) {
    const label = isRecord(entry) && typeof entry.kid === "string" ? `key ${entry.kid}` : `key #${index}`;
    if (!isRecord(entry)) {
      skipped.push(`${label}: not an object`);
      continue;
    }
    if (entry.kty !== "OKP" || entry.crv !== "Ed25519") {
      skipped.push(`${label}: not an Ed25519 key (kty ${String(entry.kty)}, crv ${String(entry.crv)})`);
      continue;
    }
    const raw = typeof entry.x === "string" ? decodeEd25519X(entry.x) : null;
    if (!raw) {
      skipped.push(`${label}: x is not a 32-byte base64url public key`);
      continue;
    }
    keys.push({ kid: typeof entry.kid === "string" ? entry.kid : null, key: ed25519PublicKey(raw) });
  }
  return { keys, skipped };
}

/** Loads the key set document (F's JWKS endpoint, or whatever the library user supplies). */
export type JwksLoader = () => Promise<unknown>;

/**
 * The cached key set (spec F Events 3: "Cache the set and refresh when a
 * signature fails against the cached copy"). One load at a time: concurrent
 * callers share it. A refresh is skipped when the set was loaded less than
 * `refreshCooldownMs` ago, so a stream of forged deliveries cannot make us
 * fetch the key set once per request (F publishes no key refresh interval).
 */
export class FKeyCache {
  private current: FKeySet | null = null;
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<FKeySet> | null = null;

  constructor(private readonly refreshCooldownMs: number) {}

  /** The cached set, loading it first when there is none. `fresh` is true when this call loaded it. */
  async get(load: JwksLoader, now: number): Promise<{ set: FKeySet; fresh: boolean }> {
    if (this.current) return { set: this.current, fresh: false };
    return { set: await this.load(load, now), fresh: true };
  }

  /** Loads the set again, or returns null when the last load is too recent to refresh. A failed load keeps the old set. */
  async refresh(load: JwksLoader, now: number): Promise<FKeySet | null> {
    if (this.loading) return this.loading;
    if (now - this.loadedAt < this.refreshCooldownMs) return null;
    return this.load(load, now);
  }

  private load(load: JwksLoader, now: number): Promise<FKeySet> {
    this.loading ??= (async () => {
      try {
        const set = parseJwks(await load());
        this.current = set;
        this.loadedAt = now;
        return set;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }
}

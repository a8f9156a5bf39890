import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import type { Clock } from "../../core/clock.js";

/** One entry of the key set: spec F Events 3, `x` is the 32-byte Ed25519 public key in base64url without padding. */
export interface FJwk {
  kty: "OKP";
  crv: "Ed25519";
  kid: string;
  x: string;
  use: "sig";
  alg: "EdDSA";
}

export interface FSigningKey {
  kid: string;
  jwk: FJwk;
  privateKey: KeyObject;
  /** Virtual ms. */
  createdAt: number;
  /** When a newer key replaced it. */
  retiredAt?: number;
  /** When it leaves the JWKS (retiredAt + the listing period), if retired. */
  unlistedAt?: number;
}

export function newSigningKey(kid: string, createdAt: number): FSigningKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const exported = publicKey.export({ format: "jwk" });
  if (typeof exported.x !== "string") throw new Error("node:crypto exported an Ed25519 key without x");
  // JWK export gives base64url without padding already (RFC 7517/8037).
  return { kid, jwk: { kty: "OKP", crv: "Ed25519", kid, x: exported.x, use: "sig", alg: "EdDSA" }, privateKey, createdAt };
}

/**
 * The key set served at `/.well-known/jwks.json`. One current signing key;
 * after a rotation the previous key stays listed for `listedMs` of virtual
 * time (spec F Events 8: the rotation interval is unpublished), so a receiver
 * holding the old set keeps verifying while it refreshes.
 */
export class FSigningKeys {
  private readonly keys: FSigningKey[] = [];
  private serial = 0;

  constructor(
    private readonly clock: Clock,
    public listedMs: number,
  ) {
    this.keys.push(this.make());
  }

  current(): FSigningKey {
    return this.keys[this.keys.length - 1]!;
  }

  /** A new current key; the previous one stays listed for listedMs (or is dropped at once when keepOldListed is false). */
  rotate(keepOldListed = true): FSigningKey {
    const now = this.clock.now();
    const previous = this.current();
    previous.retiredAt = now;
    previous.unlistedAt = keepOldListed ? now + this.listedMs : now;
    const next = this.make();
    this.keys.push(next);
    return next;
  }

  /** The JWKS document now. */
  jwks(): { keys: FJwk[] } {
    const now = this.clock.now();
    return { keys: this.keys.filter((key) => key.unlistedAt === undefined || now < key.unlistedAt).map((key) => ({ ...key.jwk })) };
  }

  all(): readonly FSigningKey[] {
    return this.keys;
  }

  /** A key that is never listed, for the "signed with a wrong key" fault. */
  stranger(): FSigningKey {
    return newSigningKey(`unlisted-${randomBytes(4).toString("hex")}`, this.clock.now());
  }

  private make(): FSigningKey {
    this.serial += 1;
    return newSigningKey(`f-sandbox-${this.serial}-${randomBytes(4).toString("hex")}`, this.clock.now());
  }
}

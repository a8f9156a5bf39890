import { createHash, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import {
  createFWebhookVerifier,
  decodeEd25519X,
  FWebhookVerificationError,
  fSignedMessage,
  parseJwks,
  type FWebhookFailure,
} from "../../../src/providers/f/index.js";
import { FWorld } from "./harness.js";

const NOW_MS = 1_750_000_000_000;
const clock = { now: () => NOW_MS };

interface TestKey {
  kid: string;
  privateKey: KeyObject;
  /** base64url without padding, as node exports it. */
  x: string;
}

function newKey(kid: string): TestKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x!;
  return { kid, privateKey, x };
}

const jwk = (key: TestKey, x = key.x) => ({ kty: "OKP", crv: "Ed25519", kid: key.kid, x, use: "sig", alg: "EdDSA" });

/**
 * Signs a delivery the way spec F Events 4 describes, written out in full
 * here (not the client's or the sandbox's helper) so that the test checks the
 * client against the spec's own wording.
 */
function signed(key: TestKey, body: Buffer | string, fields: { generationId?: string; userId?: string; timestamp?: number } = {}) {
  const rawBody = Buffer.isBuffer(body) ? body : Buffer.from(body, "utf8");
  const generationId = fields.generationId ?? "R2VuZXJhdGlvbi0x";
  const userId = fields.userId ?? Buffer.from("account-1").toString("base64");
  const timestamp = String(fields.timestamp ?? Math.floor(NOW_MS / 1000));
  const digest = createHash("sha256").update(rawBody).digest("hex");
  const message = Buffer.from(`${generationId}\n${userId}\n${timestamp}\n${digest}`, "utf8");
  const signature = sign(null, message, key.privateKey).toString("hex");
  return {
    rawBody,
    headers: {
      "x-img-webhook-generation-id": generationId,
      "x-img-webhook-user-id": userId,
      "x-img-webhook-timestamp": timestamp,
      "x-img-webhook-key-id": key.kid,
      "x-img-webhook-signature": signature,
      "content-type": "application/json",
    } as Record<string, string | undefined>,
  };
}

async function failure(run: () => Promise<unknown>): Promise<FWebhookFailure> {
  try {
    await run();
  } catch (error) {
    if (error instanceof FWebhookVerificationError) return error.reason;
    throw error;
  }
  throw new Error("expected an FWebhookVerificationError");
}

const result = (generationId = "R2VuZXJhdGlvbi0x") =>
  JSON.stringify({ created: "2025-06-15T00:00:00Z", generation_id: generationId, data: [{ url: "https://img.example/1.png", prompt: "kite", resolution: "1024x1024", seed: 1, is_image_safe: true }] });

describe("F webhooks: signature rules", () => {
  it("F: the signed message is generation-id, user-id, timestamp and the lowercase hex SHA-256 of the raw body, joined by line feeds, UTF-8", () => {
    const body = Buffer.from('{"a":"é"}', "utf8");
    const message = fSignedMessage({ generationId: "g", userId: "dQ==", timestamp: "1700000000" }, body);
    expect(message.toString("utf8")).toBe(`g\ndQ==\n1700000000\n${createHash("sha256").update(body).digest("hex")}`);
    expect(message.toString("utf8")).toMatch(/\n[0-9a-f]{64}$/);
  });

  it("F: each key's x is base64url without padding and is padded before decoding", () => {
    const key = newKey("k1");
    expect(key.x).toHaveLength(43);
    const raw = decodeEd25519X(key.x)!;
    expect(raw).toHaveLength(32);
    expect(decodeEd25519X(`${key.x}=`)!.equals(raw)).toBe(true);
    expect(decodeEd25519X(key.x.slice(0, 40))).toBeNull();
    expect(decodeEd25519X(`${key.x.slice(0, 42)}+`)).toBeNull();
  });

  it("F: keys that are not Ed25519 or not 32 bytes are skipped; the usable ones are kept", () => {
    const key = newKey("good");
    const set = parseJwks({ keys: [{ kty: "RSA", kid: "rsa", n: "x", e: "AQAB" }, { kty: "OKP", crv: "Ed25519", kid: "short", x: "AAAA" }, jwk(key)] });
    expect(set.keys.map((entry) => entry.kid)).toEqual(["good"]);
    expect(set.skipped).toHaveLength(2);
    expect(() => parseJwks({ nope: [] })).toThrow(/keys array/);
  });

  it("F: a signature verifies against any key of the set; Key-Id only orders the attempts", async () => {
    const [first, second] = [newKey("k1"), newKey("k2")];
    const verifier = createFWebhookVerifier({ jwks: async () => ({ keys: [jwk(first), jwk(second)] }), clock });
    const delivery = signed(second, result());
    expect((await verifier.verify(delivery.rawBody, delivery.headers)).keyId).toBe("k2");
    expect((await verifier.verify(delivery.rawBody, { ...delivery.headers, "x-img-webhook-key-id": "k1" })).keyId).toBe("k2");
  });

  it("F: raw bytes are verified before parsing: the same JSON with other whitespace fails", async () => {
    const key = newKey("k1");
    const verifier = createFWebhookVerifier({ jwks: async () => ({ keys: [jwk(key)] }), clock });
    const delivery = signed(key, result());
    const pretty = Buffer.from(JSON.stringify(JSON.parse(result()), null, 2));
    expect(await failure(() => verifier.verify(pretty, delivery.headers))).toBe("signature_invalid");
  });

  it("F: timestamps beyond the tolerance are refused both ways; within it they pass", async () => {
    const key = newKey("k1");
    const verifier = createFWebhookVerifier({ jwks: async () => ({ keys: [jwk(key)] }), clock, toleranceMs: 60_000 });
    const at = (offsetSeconds: number) => signed(key, result(), { timestamp: Math.floor(NOW_MS / 1000) + offsetSeconds });
    const old = at(-61);
    const future = at(61);
    const near = at(-59);
    expect(await failure(() => verifier.verify(old.rawBody, old.headers))).toBe("timestamp_too_old");
    expect(await failure(() => verifier.verify(future.rawBody, future.headers))).toBe("timestamp_in_future");
    expect((await verifier.verify(near.rawBody, near.headers)).timestamp).toBe(Math.floor(NOW_MS / 1000) - 59);
  });

  it("F: the key set is cached, refreshed once when a signature fails, and never more than once per cool-down", async () => {
    const [old, rotated] = [newKey("old"), newKey("new")];
    let listed = [old];
    let loads = 0;
    let now = NOW_MS;
    const verifier = createFWebhookVerifier({
      jwks: async () => {
        loads += 1;
        return { keys: listed.map((key) => jwk(key)) };
      },
      clock: { now: () => now },
      refreshCooldownMs: 10_000,
    });
    const fromOld = signed(old, result());
    await verifier.verify(fromOld.rawBody, fromOld.headers);
    await verifier.verify(fromOld.rawBody, fromOld.headers);
    expect(loads).toBe(1);
    listed = [rotated];
    now += 10_000;
    const fromRotated = signed(rotated, result(), { timestamp: Math.floor(now / 1000) });
    expect((await verifier.verify(fromRotated.rawBody, fromRotated.headers)).keyId).toBe("new");
    expect(loads).toBe(2);
    const stranger = signed(newKey("stranger"), result(), { timestamp: Math.floor(now / 1000) });
    expect(await failure(() => verifier.verify(stranger.rawBody, stranger.headers))).toBe("signature_invalid");
    expect(loads).toBe(2);
  });

  it("F: concurrent first verifications share one key set load", async () => {
    const key = newKey("k1");
    let loads = 0;
    const verifier = createFWebhookVerifier({
      jwks: async () => {
        loads += 1;
        await Promise.resolve();
        return { keys: [jwk(key)] };
      },
      clock,
    });
    const delivery = signed(key, result());
    await Promise.all([1, 2, 3].map(() => verifier.verify(delivery.rawBody, delivery.headers)));
    expect(loads).toBe(1);
  });

  it("F: an authentic body that is not JSON is refused by the standalone verifier as payload_not_json", async () => {
    const key = newKey("k1");
    const verifier = createFWebhookVerifier({ jwks: async () => ({ keys: [jwk(key)] }), clock });
    const delivery = signed(key, "not json");
    expect(await failure(() => verifier.verify(delivery.rawBody, delivery.headers))).toBe("payload_not_json");
    expect((await verifier.verifySignature(delivery.rawBody, delivery.headers)).rawBody.toString()).toBe("not json");
  });

  it("F: a header given twice is refused", async () => {
    const key = newKey("k1");
    const verifier = createFWebhookVerifier({ jwks: async () => ({ keys: [jwk(key)] }), clock });
    const delivery = signed(key, result());
    const headers = { ...delivery.headers, "x-img-webhook-signature": [delivery.headers["x-img-webhook-signature"]!, "00"] };
    expect(await failure(() => verifier.verify(delivery.rawBody, headers))).toBe("malformed_header");
  });
});

describe("F webhooks: the adapter's verdict on signed bodies", () => {
  let world: FWorld | undefined;
  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  /** The sandbox's JWKS route answers with this test's key set instead (fault injection), so the test can sign. */
  async function withKeySet(key: TestKey): Promise<FWorld> {
    world = await FWorld.start();
    world.sandbox.injectFault({ provider: "f", method: "GET", path: /jwks\.json$/, fault: { kind: "status", status: 200, body: { keys: [jwk(key)] } } });
    return world;
  }

  const contextAt = (w: FWorld, nowMs: number) => ({ ...w.context(), clock: { now: () => nowMs, sleep: w.clock.sleep.bind(w.clock) } });

  it("F: an authentic body that is not JSON is accepted without a status (the engine reads the generation)", async () => {
    const key = newKey("k1");
    const w = await withKeySet(key);
    const delivery = signed(key, "<html>not a result</html>");
    const verdict = await w.adapter().webhooks!.verify({ ...delivery, jobId: null }, contextAt(w, NOW_MS));
    expect(verdict).toEqual({ kind: "accepted", deliveryId: "R2VuZXJhdGlvbi0x", providerJobId: "R2VuZXJhdGlvbi0x" });
  });

  it("F: the delivery header names the generation; a body naming another one gives no status", async () => {
    const key = newKey("k1");
    const w = await withKeySet(key);
    const delivery = signed(key, result("another-generation"));
    expect(await w.adapter().webhooks!.verify({ ...delivery, jobId: null }, contextAt(w, NOW_MS))).toEqual({
      kind: "accepted",
      deliveryId: "R2VuZXJhdGlvbi0x",
      providerJobId: "R2VuZXJhdGlvbi0x",
    });
  });

  it("F: a signed body with request_id (the endpoint page's name) instead of generation_id maps like a read", async () => {
    const key = newKey("k1");
    const w = await withKeySet(key);
    const body = JSON.stringify({ request_id: "R2VuZXJhdGlvbi0x", created: 1750000000, data: [{ url: "https://img.example/1.png", prompt: "kite", resolution: "640x640", seed: 9, is_image_safe: false }] });
    const verdict = await w.adapter().webhooks!.verify({ ...signed(key, body), jobId: null }, contextAt(w, NOW_MS));
    expect(verdict).toMatchObject({
      kind: "accepted",
      status: { kind: "succeeded", outputs: [{ url: "https://img.example/1.png", metadata: { seed: 9, prompt: "kite", resolution: "640x640", is_image_safe: false } }] },
    });
  });
});

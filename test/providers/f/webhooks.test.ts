import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../../../src/core/clock.js";
import type { WebhookVerdict } from "../../../src/providers/adapter.js";
import { createFWebhookVerifier, FWebhookVerificationError, type FWebhookFailure } from "../../../src/providers/f/index.js";
import { asDelivery, FWorld, RENDER_MS, type Received } from "./harness.js";

let world: FWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function start(options: Parameters<typeof FWorld.start>[0] = {}): Promise<FWorld> {
  world = await FWorld.start(options);
  return world;
}

/** Submits one generation with a webhook, lets it render, and returns its first delivery as received. */
async function delivered(w: FWorld, adapter = w.adapter(), input?: Record<string, unknown>) {
  const before = w.receiver.received.length;
  const { submitted, context } = await w.submit(adapter, input);
  w.advance();
  const received = (await w.receiver.waitFor(before + 1))[before]!;
  return { adapter, submitted, context, received };
}

function rejectedReason(verdict: WebhookVerdict): string {
  if (verdict.kind !== "rejected") throw new Error(`expected a rejection, got ${JSON.stringify(verdict)}`);
  return verdict.reason;
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

function withHeaders(received: Received, changes: Record<string, string | undefined>): Received {
  return { ...received, headers: { ...received.headers, ...changes } };
}

describe("F webhooks: real deliveries from the sandbox", () => {
  it("F: a real delivery verifies: accepted, deliveryId and providerJobId are the generation id, status is the signed result", async () => {
    const w = await start();
    const { adapter, submitted, context, received } = await delivered(w, undefined, { text_prompt: "kites", resolution: "512x512", num_images: 2, seed: 3 });
    expect(received.path).toBe("/webhooks/f/job-1");
    expect(received.headers["content-type"]).toBe("application/json");
    const verdict = await adapter.webhooks!.verify(asDelivery(received, "job-1"), context);
    if (verdict.kind !== "accepted") throw new Error(verdict.reason);
    expect(verdict.deliveryId).toBe(submitted.providerJobId);
    expect(verdict.providerJobId).toBe(submitted.providerJobId);
    expect(verdict.status).toMatchObject({ kind: "succeeded", providerStatus: "ready" });
    // Signed, so trusted: the same status a read gives.
    expect(verdict.status).toEqual(await adapter.poll(submitted, context));
    if (verdict.status?.kind !== "succeeded") throw new Error("expected succeeded");
    expect(verdict.status.outputs.map((output) => output.metadata)).toEqual([
      { seed: 3, prompt: "kites", resolution: "512x512", is_image_safe: true },
      { seed: 4, prompt: "kites", resolution: "512x512", is_image_safe: true },
    ]);
  });

  it("F: the key set is fetched from {base}/v1/.well-known/jwks.json once and cached", async () => {
    const w = await start();
    const first = await delivered(w);
    const second = await delivered(w, first.adapter);
    expect((await first.adapter.webhooks!.verify(asDelivery(first.received), first.context)).kind).toBe("accepted");
    expect((await first.adapter.webhooks!.verify(asDelivery(second.received), second.context)).kind).toBe("accepted");
    expect(w.jwksRequests()).toBe(1);
    const jwks = w.requests().find((entry) => entry.url === "/f/v1/.well-known/jwks.json")!;
    expect(jwks.method).toBe("GET");
  });

  it("F: a re-serialised body is refused (the digest covers the bytes as sent)", async () => {
    const w = await start();
    w.emulator.injectDeliveryFault({ kind: "reserialize" });
    const { adapter, context, received } = await delivered(w);
    const [attempt] = w.emulator.deliveries();
    // The same JSON value, other bytes.
    expect(JSON.parse(received.rawBody.toString("utf8"))).toEqual(JSON.parse(attempt!.signedBody.toString("utf8")));
    expect(received.rawBody.equals(attempt!.signedBody)).toBe(false);
    expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(received), context))).toMatch(/signature/);
    // The signed bytes with the same headers verify: the refusal is about the bytes alone.
    expect((await adapter.webhooks!.verify(asDelivery({ ...received, rawBody: attempt!.signedBody }), context)).kind).toBe("accepted");
  });

  it("F: a delivery signed with a key outside the key set is refused", async () => {
    const w = await start();
    w.emulator.injectDeliveryFault({ kind: "wrong_key" });
    const { adapter, context, received } = await delivered(w);
    expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(received), context))).toMatch(/no key of F's key set verifies/);
    // The set was loaded for this very delivery, so it is not fetched again.
    expect(w.jwksRequests()).toBe(1);
  });

  it("F: a timestamp older than the tolerance (5 minutes by default) is refused; a wider tolerance admits it", async () => {
    const w = await start();
    w.emulator.injectDeliveryFault({ kind: "old_timestamp", ageSeconds: 301 }, 2);
    const { adapter, context, received } = await delivered(w);
    expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(received), context))).toMatch(/old, beyond the 300 s tolerance/);
    const patient = w.adapter({ webhookToleranceMs: 10 * 60_000 });
    const later = await delivered(w, patient);
    expect((await patient.webhooks!.verify(asDelivery(later.received), later.context)).kind).toBe("accepted");
  });

  it("F: a timestamp further in the future than the tolerance is refused", async () => {
    const w = await start();
    const { adapter, context, received } = await delivered(w);
    const behind: Clock = { now: () => w.clock.now() - 6 * 60_000, sleep: (ms, signal) => w.clock.sleep(ms, signal) };
    expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(received), { ...context, clock: behind }))).toMatch(/ahead, beyond the 300 s tolerance/);
    // Within the tolerance either way, it verifies.
    const slightlyBehind: Clock = { ...behind, now: () => w.clock.now() - 4 * 60_000 };
    expect((await adapter.webhooks!.verify(asDelivery(received), { ...context, clock: slightlyBehind })).kind).toBe("accepted");
  });

  it("F: a rotated key is accepted after exactly one key set refresh", async () => {
    const w = await start();
    const first = await delivered(w);
    expect((await first.adapter.webhooks!.verify(asDelivery(first.received), first.context)).kind).toBe("accepted");
    expect(w.jwksRequests()).toBe(1);
    const rotated = w.emulator.rotateKey();
    // Past the refresh cool-down (30 s) as well as the render time.
    w.advance(31_000);
    const second = await delivered(w, first.adapter);
    expect(second.received.headers["x-img-webhook-key-id"]).toBe(rotated.kid);
    expect((await first.adapter.webhooks!.verify(asDelivery(second.received), second.context)).kind).toBe("accepted");
    expect(w.jwksRequests()).toBe(2);
    // Now cached: neither key needs another fetch.
    expect((await first.adapter.webhooks!.verify(asDelivery(second.received), second.context)).kind).toBe("accepted");
    expect((await first.adapter.webhooks!.verify(asDelivery(first.received), { ...first.context, clock: w.clock })).kind).toBe("accepted");
    expect(w.jwksRequests()).toBe(2);
  });

  it("F: forged deliveries refresh the key set at most once per cool-down", async () => {
    const w = await start();
    const { adapter, context, received } = await delivered(w);
    expect((await adapter.webhooks!.verify(asDelivery(received), context)).kind).toBe("accepted");
    const forged = withHeaders(received, { "x-img-webhook-signature": "ab".repeat(64) });
    for (let attempt = 0; attempt < 3; attempt++) expect((await adapter.webhooks!.verify(asDelivery(forged), context)).kind).toBe("rejected");
    expect(w.jwksRequests()).toBe(1);
    w.advance(31_000);
    // The timestamp must still be within the tolerance: check the refresh alone with a wide one.
    const wide = w.adapter({ webhookToleranceMs: 3_600_000 });
    expect((await wide.webhooks!.verify(asDelivery(received), context)).kind).toBe("accepted");
    expect((await wide.webhooks!.verify(asDelivery(forged), context)).kind).toBe("rejected");
    expect((await wide.webhooks!.verify(asDelivery(forged), context)).kind).toBe("rejected");
    expect(w.jwksRequests()).toBe(2);
    w.advance(31_000);
    expect((await wide.webhooks!.verify(asDelivery(forged), context)).kind).toBe("rejected");
    expect(w.jwksRequests()).toBe(3);
  });

  it("F: Key-Id is only a hint: a missing or unknown Key-Id still verifies", async () => {
    const w = await start();
    const { adapter, context, received } = await delivered(w);
    expect((await adapter.webhooks!.verify(asDelivery(withHeaders(received, { "x-img-webhook-key-id": undefined })), context)).kind).toBe("accepted");
    expect((await adapter.webhooks!.verify(asDelivery(withHeaders(received, { "x-img-webhook-key-id": "no-such-key" })), context)).kind).toBe("accepted");
    expect(w.jwksRequests()).toBe(1);
  });

  it("F: any signed header changed (generation id, user id, timestamp) breaks the signature", async () => {
    const w = await start();
    const { adapter, context, received } = await delivered(w);
    const timestamp = Number(received.headers["x-img-webhook-timestamp"]);
    for (const change of [
      { "x-img-webhook-generation-id": "AAAAAAAAAAAAAAAAAAAAAAAA" },
      { "x-img-webhook-user-id": Buffer.from("someone-else").toString("base64") },
      { "x-img-webhook-timestamp": String(timestamp + 1) },
    ]) {
      expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(withHeaders(received, change)), context))).toMatch(/signature/);
    }
    const tampered = Buffer.from(received.rawBody);
    tampered[tampered.length - 2] = tampered[tampered.length - 2]! ^ 1;
    expect((await adapter.webhooks!.verify(asDelivery({ ...received, rawBody: tampered }), context)).kind).toBe("rejected");
  });

  it("F: a delivery missing a signed header or with a malformed signature or timestamp is refused", async () => {
    const w = await start();
    const { adapter, context, received } = await delivered(w);
    for (const name of ["x-img-webhook-generation-id", "x-img-webhook-user-id", "x-img-webhook-timestamp", "x-img-webhook-signature"]) {
      expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(withHeaders(received, { [name]: undefined })), context))).toMatch(new RegExp(`no ${name} header`));
    }
    expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(withHeaders(received, { "x-img-webhook-signature": "zz" })), context))).toMatch(/not a 64-byte Ed25519 signature/);
    expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(withHeaders(received, { "x-img-webhook-timestamp": "1.5e9" })), context))).toMatch(/Unix seconds/);
  });

  it("F: duplicate deliveries carry the same generation id, so the engine de-duplicates them", async () => {
    const w = await start();
    w.emulator.injectDeliveryFault({ kind: "duplicate" });
    const { adapter, submitted, context } = await delivered(w);
    const [original, duplicate] = await w.receiver.waitFor(2);
    expect(duplicate!.rawBody.equals(original!.rawBody)).toBe(true);
    const verdicts = [await adapter.webhooks!.verify(asDelivery(original!), context), await adapter.webhooks!.verify(asDelivery(duplicate!), context)];
    expect(verdicts.map((verdict) => verdict.kind === "accepted" && verdict.deliveryId)).toEqual([submitted.providerJobId, submitted.providerJobId]);
  });

  it("F: a dropped delivery is silent; the poll fallback still gets the result", async () => {
    const w = await start();
    w.emulator.injectDeliveryFault({ kind: "drop" });
    const adapter = w.adapter();
    const dropped = await w.submit(adapter);
    // A second generation without a fault: its delivery shows the sandbox's delivery sweep has run.
    const control = await w.submit(adapter);
    w.advance();
    const [only] = await w.receiver.waitFor(1);
    expect(only!.headers["x-img-webhook-generation-id"]).toBe(control.submitted.providerJobId);
    expect(w.emulator.generation(dropped.submitted.providerJobId)!.delivery).toMatchObject({ state: "dropped", attempts: 0 });
    const status = await adapter.poll(dropped.submitted, dropped.context);
    expect(status.kind).toBe("succeeded");
    expect(w.receiver.received.map((received) => received.headers["x-img-webhook-generation-id"])).not.toContain(dropped.submitted.providerJobId);
  });

  it("F: a delayed delivery arrives later; the generation can be read before it", async () => {
    const w = await start();
    w.emulator.injectDeliveryFault({ kind: "delay", ms: 60_000 });
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter);
    w.advance();
    expect((await adapter.poll(submitted, context)).kind).toBe("succeeded");
    expect(w.emulator.generation(submitted.providerJobId)!.delivery).toMatchObject({ state: "waiting", attempts: 0 });
    w.advance(60_000);
    const [late] = await w.receiver.waitFor(1);
    // The delivery is re-signed with a fresh timestamp when sent, so it verifies.
    expect((await adapter.webhooks!.verify(asDelivery(late!), context)).kind).toBe("accepted");
  });

  it("F: when the key set cannot be loaded the delivery is refused (F retries a non-2xx answer)", async () => {
    const w = await start();
    const { adapter, received } = await delivered(w);
    w.sandbox.injectFault({ provider: "f", method: "GET", path: /jwks\.json$/, fault: { kind: "status", status: 500 }, times: 1 });
    const context = w.context({ maxAttempts: 1 });
    expect(rejectedReason(await adapter.webhooks!.verify(asDelivery(received), context))).toMatch(/key set could not be loaded.*HTTP 500/);
    expect((await adapter.webhooks!.verify(asDelivery(received), context)).kind).toBe("accepted");
  });
});

describe("F webhooks: standalone verifier for library users", () => {
  it("F: createFWebhookVerifier verifies raw bytes against a JWKS URL and returns the parsed payload", async () => {
    const w = await start();
    const { submitted, received } = await delivered(w);
    const verifier = createFWebhookVerifier({ jwks: `${w.baseUrl}/v1/.well-known/jwks.json`, clock: w.clock });
    const verified = await verifier.verify(received.rawBody, received.headers);
    expect(verified).toMatchObject({
      generationId: submitted.providerJobId,
      userId: w.emulator.userId,
      timestamp: Number(received.headers["x-img-webhook-timestamp"]),
      keyId: received.headers["x-img-webhook-key-id"],
    });
    expect(verified.payload).toEqual(w.emulator.generation(submitted.providerJobId)!.payload);
    // Fetch-style Headers work too.
    const headers = new Headers(Object.entries(received.headers).filter((entry): entry is [string, string] => entry[1] !== undefined));
    expect((await verifier.verify(received.rawBody, headers)).generationId).toBe(submitted.providerJobId);
  });

  it("F: the standalone verifier throws one typed error with a stable reason", async () => {
    const w = await start();
    w.emulator.injectDeliveryFault({ kind: "reserialize" });
    w.emulator.injectDeliveryFault({ kind: "old_timestamp" });
    const verifier = createFWebhookVerifier({ jwks: `${w.baseUrl}/v1/.well-known/jwks.json`, clock: w.clock });
    const reserialised = await delivered(w);
    expect(await failure(() => verifier.verify(reserialised.received.rawBody, reserialised.received.headers))).toBe("signature_invalid");
    const old = await delivered(w);
    expect(await failure(() => verifier.verify(old.received.rawBody, old.received.headers))).toBe("timestamp_too_old");
    expect(await failure(() => verifier.verify(old.received.rawBody, {}))).toBe("missing_header");
  });

  it("F: the standalone verifier's default tolerance is 5 minutes of its clock", async () => {
    const w = await start();
    const { received } = await delivered(w);
    const at = (offsetMs: number) => ({ now: () => w.clock.now() + offsetMs });
    const jwks = `${w.baseUrl}/v1/.well-known/jwks.json`;
    expect((await createFWebhookVerifier({ jwks, clock: at(4 * 60_000) }).verify(received.rawBody, received.headers)).generationId).toBeTruthy();
    expect(await failure(() => createFWebhookVerifier({ jwks, clock: at(6 * 60_000) }).verify(received.rawBody, received.headers))).toBe("timestamp_too_old");
    expect(RENDER_MS).toBeLessThan(60_000);
  });
});

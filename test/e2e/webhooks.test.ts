import type { FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/engine/logger.js";
import { Webhook } from "standardwebhooks";
import { createAEmulator, type AEmulator } from "../../src/sandbox/a/index.js";
import { createBEmulator, type BEmulator } from "../../src/sandbox/b/index.js";
import { createFEmulator, type FEmulator } from "../../src/sandbox/f/index.js";
import { buildServer } from "../../src/server/app.js";
import type { Store } from "../../src/store/store.js";
import { sqliteFactory } from "../helpers/stores.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

let world: World | undefined;
let server: FastifyInstance | undefined;
let store: Store;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ store, cleanup } = await sqliteFactory.open());
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await cleanup();
  await world?.close();
  world = undefined;
});

/** The sandbox, an engine on the store, and `mediagate serve`'s server on loopback as the engine's public URL. */
async function served(emulator: AEmulator | BEmulator | FEmulator) {
  world = await startWorld([emulator]);
  // The server must listen before the engine exists (its address is the public URL), so bind first and attach after.
  let ingress: Parameters<typeof buildServer>[0] | undefined;
  const app = await buildServer({
    get store() {
      return ingress!.store;
    },
    get engine() {
      return ingress!.engine;
    },
    get providers() {
      return ingress!.providers;
    },
    log: silentLogger,
    now: () => Date.now(),
  } as Parameters<typeof buildServer>[0]);
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  server = app;
  const built = worldEngine(world, store, { publicUrl: address });
  ingress = { store, engine: built.engine, providers: built.providers, log: silentLogger, now: () => Date.now() };
  return { ...built, address };
}

describe("webhooks through `mediagate serve` (real server, real sandbox deliveries)", () => {
  it("A: callback_url is the job's route; the callback only triggers an immediate read, before the first scheduled poll", async () => {
    const a = createAEmulator({ renderMs: 1_500 });
    const { engine, enqueue, wait, address } = await served(a);
    const job = await enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "a lighthouse at dusk", duration: 5, resolution: "480p" } });
    engine.start();
    const outcome = await wait([job.id]);
    await engine.stop();
    expect([outcome.jobs[0]!.state, outcome.jobs[0]!.error]).toEqual(["succeeded", null]);
    expect(a.callbacks().map((delivery) => [delivery.state, delivery.url])).toEqual([["sent", `${address}/webhooks/a/${job.id}`]]);
    // A's first scheduled poll is at least 5 s after submit; the 1.5 s render was read once, on the callback's nudge.
    const reads = world!.sandbox.context.requests.filter((entry) => entry.provider === "a" && entry.method === "GET" && entry.url.includes("/tasks/"));
    expect(reads).toHaveLength(1);
    expect((await store.deliveries({ provider: "a" })).map((delivery) => delivery.outcome)).toEqual(["applied"]);
  });

  it("A: a forged callback body saying succeeded changes nothing but a read: the job stays running", async () => {
    const a = createAEmulator({ renderMs: 60_000 });
    const { engine, enqueue, address } = await served(a);
    const job = await enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "slow", duration: 5, resolution: "480p" } });
    engine.start();
    for (let tries = 0; tries < 200 && (await store.getJob(job.id))!.state !== "running"; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    const running = (await store.getJob(job.id))!;
    const forged = { id: running.providerJobId, status: "succeeded", content: { video_url: "https://evil.example/x.mp4" } };
    const answer = await fetch(`${address}/webhooks/a/${job.id}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(forged) });
    expect(answer.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await engine.stop();
    const after = (await store.getJob(job.id))!;
    expect(after.state).toBe("running");
    expect(after.providerStatus).not.toBe("succeeded");
    expect(await store.outputs(job.id)).toEqual([]);
  });

  it("F: a signed delivery is verified and applied; its duplicate is a no-op answered 2xx; bytes changed are refused", async () => {
    const f = createFEmulator({ allowLoopbackWebhooks: true, renderMs: 800 });
    const { engine, enqueue, wait, address } = await served(f);
    f.injectDeliveryFault({ kind: "duplicate" }, 1);
    const job = await enqueue({ provider: "f", model: "img-v2", input: { text_prompt: "a red kite", resolution: "1024x1024" } });
    engine.start();
    const outcome = await wait([job.id]);
    for (let tries = 0; tries < 100 && f.deliveries().length < 2; tries++) await new Promise((resolve) => setTimeout(resolve, 20));
    await engine.stop();
    expect(outcome.jobs[0]!.state).toBe("succeeded");
    const [submit] = world!.sandbox.context.requests.filter((entry) => entry.provider === "f" && entry.method === "POST");
    expect(new URL(submit!.url, "http://x").searchParams.get("webhook_url")).toBe(`${address}/webhooks/f/${job.id}`);
    const attempts = f.deliveries();
    expect(attempts.map((attempt) => attempt.duplicate)).toEqual([false, true]);
    expect(attempts.every((attempt) => attempt.statusCode !== undefined && attempt.statusCode >= 200 && attempt.statusCode < 300)).toBe(true);
    expect((await store.deliveries({ provider: "f" })).map((delivery) => delivery.outcome)).toEqual(["applied"]);
    const [output] = await store.outputs(job.id);
    expect(output!.metadata).toMatchObject({ seed: expect.anything(), is_image_safe: true });

    // The same delivery with one byte changed is refused and recorded without a delivery id.
    const original = attempts[0]!;
    const tampered = Buffer.from(original.body);
    tampered[tampered.length - 2] = tampered[tampered.length - 2]! ^ 1;
    const refused = await fetch(`${address}/webhooks/f/${job.id}`, { method: "POST", headers: original.headers, body: tampered });
    expect(refused.status).toBe(401);
    expect((await store.deliveries({ provider: "f" })).map((delivery) => [delivery.outcome, delivery.deliveryId === null])).toEqual([
      ["applied", false],
      ["rejected", true],
    ]);
  });

  it("B: webhook_url is sent at the top level; the same signed delivery three times applies once; one byte changed is refused", async () => {
    const b = createBEmulator({ allowLocalWebhookUrls: true, renderTimeMs: 500, queueTimeMs: 100 });
    const { engine, enqueue, wait, address } = await served(b);
    const job = await enqueue({ provider: "b", model: "vendorx/video-2.5", operation: "image-to-video", input: { image: "https://images.example/k.png", resolution: "720p", duration_s: 5 } });
    engine.start();
    const outcome = await wait([job.id]);
    await b.flushWebhooks();
    await engine.stop();
    expect(outcome.jobs[0]!.state).toBe("succeeded");
    expect(b.deliveries.map((delivery) => [delivery.url, delivery.state])).toEqual([[`${address}/webhooks/b/${job.id}`, "delivered"]]);
    expect((await store.deliveries({ provider: "b" })).map((delivery) => delivery.outcome)).toEqual(["applied"]);

    // A genuine message, signed with the account's secret, sent three times: the first applies, the others are no-ops answered 2xx.
    const payload = b.deliveries[0]!.payload!;
    const signer = new Webhook(b.webhookSecret);
    const messageId = "msg_e2e_replay";
    const sentAt = new Date(world!.sandbox.context.clock.now());
    const headers = { "content-type": "application/json", "webhook-id": messageId, "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)), "webhook-signature": signer.sign(messageId, sentAt, payload) };
    const answers = [];
    for (let copy = 0; copy < 3; copy++) {
      const response = await fetch(`${address}/webhooks/b/${job.id}`, { method: "POST", headers, body: payload });
      answers.push([response.status, ((await response.json()) as { outcome: string }).outcome]);
    }
    expect(answers).toEqual([[200, "applied"], [200, "duplicate"], [200, "duplicate"]]);
    const tampered = Buffer.from(payload);
    tampered[10] = tampered[10]! ^ 1;
    const refused = await fetch(`${address}/webhooks/b/${job.id}`, { method: "POST", headers: { ...headers, "webhook-id": "msg_e2e_tampered" }, body: tampered });
    expect(refused.status).toBe(401);
    expect((await store.deliveries({ provider: "b" })).map((delivery) => delivery.outcome)).toEqual(["applied", "applied", "rejected"]);
  });
});

import type { FastifyInstance } from "fastify";
import { once } from "node:events";
import { connect } from "node:net";
import { Agent, request as undiciRequest } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { createAEmulator, type AEmulator } from "../../src/sandbox/a/index.js";
import { createBEmulator, type BEmulator } from "../../src/sandbox/b/index.js";
import { createFEmulator, type FEmulator } from "../../src/sandbox/f/index.js";
import { REFUSAL_BURST, REFUSAL_REFILL_MS } from "../../src/server/refusal-limiter.js";
import { REJECTION_BUCKET_MS } from "../../src/server/rejection-tally.js";
import type { Store } from "../../src/store/store.js";
import { sqliteFactory, storeFactories, type StoreFactory } from "../helpers/stores.js";
import { startWorld, type World } from "../helpers/world.js";
import { servedEngine } from "../helpers/webhook-server.js";
import { until } from "../helpers/until.js";

let world: World | undefined;
let server: FastifyInstance | undefined;
let store: Store;
let cleanup: (() => Promise<void>) | undefined;
const agents: Agent[] = [];
afterEach(async () => {
  // The test's own clients, then the sandbox (its webhook senders), then the server: an open connection of
  // one would otherwise hold the close of the next.
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
  await world?.close();
  world = undefined;
  await server?.close();
  server = undefined;
  await cleanup?.();
  cleanup = undefined;
});

/**
 * The sandbox, an engine on the store, and `mediagate serve`'s server on
 * loopback as the engine's public URL. `now` is the ingress clock (the
 * per-source bound and the counters' hours); `timeScale` runs the sandbox
 * and the engine on virtual time.
 */
async function served(factory: StoreFactory, emulator: AEmulator | BEmulator | FEmulator, options: { now?: () => number; timeScale?: number } = {}) {
  ({ store, cleanup } = await factory.open());
  world = await startWorld([emulator], options.timeScale ? { timeScale: options.timeScale } : {});
  const built = await servedEngine(world, store, { now: options.now ?? (() => Date.now()), ...(options.timeScale ? { virtualTime: true } : {}) });
  server = built.server;
  return built;
}

/** Closes the server, which writes the refusal counts it still holds to the store. */
async function closeServer(): Promise<void> {
  await server?.close();
  server = undefined;
}

/** Runs `count` sends, `concurrency` at a time, and returns their answers in order. */
async function inParallel<T>(count: number, send: (index: number) => Promise<T>, concurrency = 8): Promise<T[]> {
  const answers: T[] = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next++;
        answers[index] = await send(index);
      }
    }),
  );
  return answers;
}


/** A POST from a chosen loopback address (127.0.0.0/8 is all ours), so tests can be several sources. */
function fromAddress(localAddress: string) {
  const agent = new Agent({ localAddress });
  agents.push(agent);
  return async (url: string, body = "{}", headers: Record<string, string> = { "content-type": "application/json" }) => {
    const answer = await undiciRequest(url, { method: "POST", body, headers, dispatcher: agent });
    await answer.body.dump();
    return { status: answer.statusCode, retryAfter: answer.headers["retry-after"] ?? null };
  };
}

const bClip = { provider: "b" as const, model: "vendorx/video-2.5", operation: "image-to-video", input: { image: "https://images.example/k.png", resolution: "720p", duration_s: 5 } };

describe("closing `mediagate serve`'s server", () => {
  it("ends a connection that was opened but never sent a request after the grace for requests being handled, instead of waiting a minute for it", async () => {
    const { address } = await served(sqliteFactory, createBEmulator({}));
    const silent = connect(Number(new URL(address).port), "127.0.0.1");
    await once(silent, "connect");
    const ended = once(silent, "close");
    await closeServer();
    await ended;
    expect(silent.destroyed).toBe(true);
  });
});

for (const factory of storeFactories) {
  describe(`webhooks through \`mediagate serve\` (real server, real sandbox deliveries, ${factory.name})`, () => {
    it("A: callback_url is the job's route; the callback only triggers an immediate read, before the first scheduled poll", async () => {
      const a = createAEmulator({ renderMs: 1_500 });
      const { engine, enqueue, wait, address } = await served(factory, a);
      const job = await enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "a lighthouse at dusk", duration: 5, resolution: "480p" } });
      engine.start();
      const outcome = await wait([job.id]);
      await engine.stop();
      expect([outcome.jobs[0]!.state, outcome.jobs[0]!.error]).toEqual(["succeeded", null]);
      expect(a.callbacks().map((delivery) => [delivery.state, delivery.url])).toEqual([["sent", `${address}/webhooks/a/${job.id}`]]);
      // A's first scheduled poll is at least 5 s after submit; the 1.5 s render was read once, on the callback's nudge.
      const reads = world!.sandbox.requests().filter((entry) => entry.provider === "a" && entry.method === "GET" && entry.url.includes("/tasks/"));
      expect(reads).toHaveLength(1);
      expect((await store.deliveries({ provider: "a" })).map((delivery) => delivery.outcome)).toEqual(["applied"]);
    });

    it("A: a forged callback body saying succeeded changes nothing but a read: the task is read once at once, and the job stays running", async () => {
      // Virtual time at 1/50: A's first scheduled poll (5 s after submit) is minutes of real time away, so any read is the callback's.
      const a = createAEmulator({ renderMs: 60_000 });
      const { engine, enqueue, address } = await served(factory, a, { timeScale: 0.02 });
      const job = await enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "slow", duration: 5, resolution: "480p" } });
      engine.start();
      await until(async () => (await store.getJob(job.id))!.state === "running", "the job to be running");
      const running = (await store.getJob(job.id))!;
      const reads = () => world!.sandbox.requests().filter((entry) => entry.provider === "a" && entry.method === "GET" && entry.url.includes("/tasks/"));
      expect(reads()).toHaveLength(0);
      const forged = { id: running.providerJobId, status: "succeeded", content: { video_url: "https://evil.example/x.mp4" } };
      const answer = await fetch(`${address}/webhooks/a/${job.id}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(forged) });
      expect(answer.status).toBe(200);
      await until(() => reads().length > 0, "the read the callback asks for");
      await until(async () => (await store.getJob(job.id))!.providerStatus !== null, "the read's answer to be recorded");
      await engine.stop();
      expect(reads()).toHaveLength(1);
      expect(reads()[0]!.url).toContain(running.providerJobId!);
      const after = (await store.getJob(job.id))!;
      expect(after.state).toBe("running");
      expect(after.providerStatus).not.toBe("succeeded");
      expect(await store.outputs(job.id)).toEqual([]);
    });

    it("F: a signed delivery is verified and applied; its duplicate is a no-op answered 2xx; bytes changed are refused and only counted", async () => {
      const f = createFEmulator({ allowLoopbackWebhooks: true, renderMs: 800 });
      const { engine, enqueue, wait, address } = await served(factory, f);
      f.injectDeliveryFault({ kind: "duplicate" }, 1);
      const job = await enqueue({ provider: "f", model: "img-v2", input: { text_prompt: "a red kite", resolution: "1024x1024" } });
      engine.start();
      const outcome = await wait([job.id]);
      await until(() => f.deliveries().length >= 2, "F's duplicate delivery");
      await engine.stop();
      expect(outcome.jobs[0]!.state).toBe("succeeded");
      const [submit] = world!.sandbox.requests().filter((entry) => entry.provider === "f" && entry.method === "POST");
      expect(new URL(submit!.url, "http://x").searchParams.get("webhook_url")).toBe(`${address}/webhooks/f/${job.id}`);
      const attempts = f.deliveries();
      expect(attempts.map((attempt) => attempt.duplicate)).toEqual([false, true]);
      expect(attempts.every((attempt) => attempt.statusCode !== undefined && attempt.statusCode >= 200 && attempt.statusCode < 300)).toBe(true);
      expect((await store.deliveries({ provider: "f" })).map((delivery) => delivery.outcome)).toEqual(["applied"]);
      const [output] = await store.outputs(job.id);
      expect(output!.metadata).toMatchObject({ seed: expect.anything(), is_image_safe: true });

      // The same delivery with one byte changed is refused: counted under its reason, not stored as a delivery.
      const original = attempts[0]!;
      const tampered = Buffer.from(original.body);
      tampered[tampered.length - 2] = tampered[tampered.length - 2]! ^ 1;
      const refused = await fetch(`${address}/webhooks/f/${job.id}`, { method: "POST", headers: original.headers, body: tampered });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ outcome: "rejected", error: { code: "signature_invalid" } });
      await closeServer();
      expect((await store.deliveries({ provider: "f" })).map((delivery) => delivery.outcome)).toEqual(["applied"]);
      expect((await store.webhookRejections()).map((count) => [count.provider, count.reason, count.refused, count.throttled])).toEqual([["f", "signature_invalid", 1, 0]]);
    });

    it("B: webhook_url is sent at the top level; the same signed delivery three times applies once; one byte changed is refused", async () => {
      const b = createBEmulator({ allowLocalWebhookUrls: true, renderTimeMs: 500, queueTimeMs: 100 });
      const { engine, enqueue, wait, address } = await served(factory, b);
      const job = await enqueue(bClip);
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
      const sentAt = new Date(world!.sandbox.clock.now());
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
      await closeServer();
      expect((await store.deliveries({ provider: "b" })).map((delivery) => delivery.outcome)).toEqual(["applied", "applied"]);
      expect((await store.webhookRejections()).map((count) => [count.provider, count.reason, count.refused])).toEqual([["b", "bad_signature", 1]]);
    });

    it("B: 3,000 forged deliveries become one counter, not 3,000 rows (429 with Retry-After past the source's bound), while B's own signed delivery from that same address is applied", async () => {
      const b = createBEmulator({ allowLocalWebhookUrls: true, renderTimeMs: 500, queueTimeMs: 100 });
      // The ingress clock stands still, so the source's bound never refills: exactly REFUSAL_BURST refusals are answered 401.
      const frozenAt = Date.now();
      const { engine, enqueue, wait, address } = await served(factory, b, { now: () => frozenAt });
      const job = await enqueue(bClip);
      const forger = new Webhook(`whsec_${Buffer.from("a secret that is not the account's").toString("base64")}`);
      const forge = async (index: number) => {
        const messageId = `msg_forged_${index}`;
        const payload = JSON.stringify({ id: "job_forged", status: "completed", index });
        const sentAt = new Date();
        const headers = { "content-type": "application/json", "webhook-id": messageId, "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)), "webhook-signature": forger.sign(messageId, sentAt, payload) };
        const response = await fetch(`${address}/webhooks/b/${job.id}`, { method: "POST", headers, body: payload });
        const answer = (await response.json()) as { outcome: string; error: { code: string; message: string } };
        return { status: response.status, outcome: answer.outcome, code: answer.error.code, message: answer.error.message, retryAfter: response.headers.get("retry-after") };
      };

      // The first half of the flood puts the source past its bound; then the job runs (B delivers its signed webhook from the
      // same loopback address) while the second half keeps being refused.
      const before = await inParallel(1_500, forge);
      engine.start();
      const [outcome, during] = await Promise.all([
        wait([job.id]).then(async (result) => {
          await b.flushWebhooks();
          return result;
        }),
        inParallel(1_500, (index) => forge(1_500 + index)),
      ]);
      const after = await forge(3_000);
      await engine.stop();

      expect(outcome.jobs[0]!.state).toBe("succeeded");
      expect(b.deliveries.map((delivery) => delivery.state)).toEqual(["delivered"]);
      expect(after).toMatchObject({ status: 429, outcome: "throttled" });
      const answers = [...before, ...during];
      expect(answers.filter((answer) => answer.status === 401)).toHaveLength(REFUSAL_BURST);
      expect(answers.filter((answer) => answer.status === 401).every((answer) => answer.code === "bad_signature")).toBe(true);
      const throttled = answers.filter((answer) => answer.status === 429);
      expect(throttled).toHaveLength(3_000 - REFUSAL_BURST);
      expect(throttled.every((answer) => answer.outcome === "throttled" && answer.code === "throttled" && answer.message.includes("bad_signature") && Number(answer.retryAfter) >= 1)).toBe(true);

      await closeServer();
      const deliveries = await store.deliveries();
      expect(deliveries.map((delivery) => [delivery.provider, delivery.outcome, delivery.deliveryId])).toEqual([["b", "applied", b.deliveries[0]!.messageId]]);
      const hour = Math.floor(frozenAt / REJECTION_BUCKET_MS) * REJECTION_BUCKET_MS;
      expect(await store.webhookRejections()).toEqual([
        { provider: "b", reason: "bad_signature", bucketStart: hour, refused: 3_001, throttled: 3_001 - REFUSAL_BURST, firstAt: frozenAt, lastAt: frozenAt },
      ]);
    }, 120_000);

    it("404 (no such provider or route), 413 (too large) and 401 answers are each counted per provider and reason, none stored as a delivery", async () => {
      const frozenAt = Date.now();
      const { address } = await served(factory, createBEmulator({}), { now: () => frozenAt });
      const post = fromAddress("127.0.0.1");
      expect(await post(`${address}/webhooks/zz`)).toMatchObject({ status: 404 });
      expect(await post(`${address}/webhooks/d/job_x`)).toMatchObject({ status: 404 });
      expect(await post(`${address}/webhooks/b/job_x/extra`)).toMatchObject({ status: 404 });
      expect((await fetch(`${address}/admin`)).status).toBe(404);
      expect(await post(`${address}/webhooks/b/job_x`, "x".repeat(2 * 1024 * 1024))).toMatchObject({ status: 413 });
      expect(await post(`${address}/webhooks/b/job_x`)).toMatchObject({ status: 401 });
      await closeServer();
      expect(await store.deliveries()).toEqual([]);
      const hour = Math.floor(frozenAt / REJECTION_BUCKET_MS) * REJECTION_BUCKET_MS;
      expect((await store.webhookRejections()).map((count) => [count.provider, count.reason, count.bucketStart, count.refused])).toEqual([
        ["b", "missing_headers", hour, 1],
        ["b", "too_large", hour, 1],
        ["d", "no_webhook_route", hour, 1],
        ["unknown", "no_webhook_route", hour, 1],
        ["unknown", "unknown_route", hour, 2],
      ]);
    });

    it("the bound is per source address: past it one address is answered 429 while another is still answered 401, and it refills with time", async () => {
      let now = Date.now();
      const { address } = await served(factory, createBEmulator({}), { now: () => now });
      const noisy = fromAddress("127.0.0.2");
      const quiet = fromAddress("127.0.0.3");
      const url = `${address}/webhooks/b/job_x`;
      const noisyAnswers = [];
      for (let index = 0; index <= REFUSAL_BURST; index++) noisyAnswers.push((await noisy(url)).status);
      expect(noisyAnswers).toEqual([...Array<number>(REFUSAL_BURST).fill(401), 429]);
      const throttled = await noisy(url);
      expect(throttled.status).toBe(429);
      expect(Number(throttled.retryAfter)).toBe(Math.ceil(REFUSAL_REFILL_MS / 1000));
      expect((await quiet(url)).status).toBe(401);
      now += REFUSAL_REFILL_MS;
      expect((await noisy(url)).status).toBe(401);
      expect((await noisy(url)).status).toBe(429);
      await closeServer();
      expect((await store.webhookRejections()).map((count) => [count.provider, count.reason, count.refused, count.throttled])).toEqual([["b", "missing_headers", REFUSAL_BURST + 5, 3]]);
    });
  });
}

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBEmulator } from "../../src/sandbox/b/index.js";
import { createDEmulator } from "../../src/sandbox/d/index.js";
import type { Store } from "../../src/store/store.js";
import { sqliteFactory } from "../helpers/stores.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

/** Virtual time 20 times faster than real time. */
const TIME_SCALE = 20;

let world: World | undefined;
let store: Store;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ store, cleanup } = await sqliteFactory.open());
});
afterEach(async () => {
  await cleanup();
  await world?.close();
  world = undefined;
});

const downloads = (world: World, path: RegExp) => world.sandbox.requests().filter((entry) => entry.method === "GET" && path.test(entry.url)).map((entry) => entry.statusCode);

describe("result links that expire before they are downloaded", () => {
  it("B: a content link that expired before its download is read again for a fresh one: the job is saved, not failed, and charged once", async () => {
    // B's content links live 10 virtual seconds (0.5 s real); the first download arrives 0.7 s real after it was asked for.
    const b = createBEmulator({ queueTimeMs: 500, renderTimeMs: 2_000, resultUrlTtlMs: 10_000, settlementDelayMs: 1_000 });
    world = await startWorld([b], { timeScale: TIME_SCALE });
    world.sandbox.injectFault({ provider: "b", method: "GET", path: /^\/b\/files\//, fault: { kind: "delay", ms: 700 }, times: 1 });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const job = await enqueue({ provider: "b", model: "vendorx/video-2.5", operation: "text-to-video", input: { prompt: "a kite over dunes", resolution: "720p", duration_s: 5 } });
    engine.start();
    const outcome = await wait([job.id]);
    for (let tries = 0; tries < 200 && (await store.getJob(job.id))!.chargeState !== "settled"; tries++) await new Promise((resolve) => setTimeout(resolve, 25));
    await engine.stop();
    expect([outcome.jobs[0]!.state, outcome.jobs[0]!.error?.code ?? null]).toEqual(["succeeded", null]);
    expect(downloads(world, /^\/b\/files\//)).toEqual([403, 200]);
    expect(b.jobs).toHaveLength(1);
    expect(await store.ledgerTotal({ provider: "b" })).toBe(b.settledChargesByKey["sandbox-b-key"]);
  });

  it("D: a result link that stays dead (D hands back the same one on every poll) fails the job as result_expired after a bounded number of tries, submitted once", async () => {
    const d = createDEmulator({ renderTimeMs: 1_000 });
    world = await startWorld([d], { timeScale: TIME_SCALE });
    world.sandbox.injectFault({ provider: "d", method: "GET", path: /^\/d-results\//, fault: { kind: "status", status: 403, body: { code: "link_expired", message: "the link expired" } } });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const job = await enqueue({ provider: "d", model: "gen-2-pro", input: { prompt: "a dead link", width: 256, height: 256 } });
    engine.start();
    const outcome = await wait([job.id]);
    await engine.stop();
    expect([outcome.jobs[0]!.state, outcome.jobs[0]!.error?.code]).toEqual(["failed", "result_expired"]);
    const tries = downloads(world, /^\/d-results\//);
    expect(tries.every((status) => status === 403)).toBe(true);
    expect(tries.length).toBeGreaterThanOrEqual(1);
    expect(tries.length).toBeLessThanOrEqual(5);
    expect(d.submitCount).toBe(1);
  });
});

import { createHash } from "node:crypto";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCEmulator, type CEmulator } from "../../src/sandbox/c/index.js";
import type { Store } from "../../src/store/store.js";
import { sqliteFactory } from "../helpers/stores.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

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

const MINUTE = 60_000;
const video = (prompt: string) => ({ provider: "c" as const, model: "v6", input: { prompt } });

/** C on the free tier (3 slots); the engine runs on the sandbox's virtual clock, `scale` times faster than real time. */
async function cWorld(options: Parameters<typeof createCEmulator>[0], scale: number): Promise<{ c: CEmulator; world: World }> {
  const c = createCEmulator(options);
  world = await startWorld([c], { timeScale: scale });
  return { c, world };
}

describe("engine on C (in-process, real sandbox and SQLite, virtual time)", () => {
  it("C: the free tier's 3 slots are never exceeded and no 500044 is received; every video is saved", async () => {
    const { c, world } = await cWorld({ renderMs: { min: 20_000, max: 40_000 } }, 60);
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const jobs = [];
    for (let index = 0; index < 8; index++) jobs.push(await enqueue(video(`boat ${index}`)));
    engine.start();
    const outcome = await wait(jobs.map((job) => job.id));
    await engine.stop();
    expect(outcome.jobs.map((job) => [job.state, job.error?.message ?? null])).toEqual(Array(8).fill(["succeeded", null]));
    expect(c.stats().concurrentLimitRejections).toBe(0);
    expect(Object.values(c.stats().peakConcurrency)).toEqual([3]);
    expect(c.stats().submits).toBe(8);
    for (const job of outcome.jobs) {
      const [output] = await store.outputs(job.id);
      expect(output!.contentType).toBe("video/mp4");
      expect(existsSync(output!.path)).toBe(true);
      const bytes = readFileSync(output!.path);
      expect(bytes.subarray(4, 8).toString("latin1")).toBe("ftyp");
      // Each job saved its own task's video (the sandbox tags every file with its task).
      expect(bytes.toString("utf8").endsWith(`mediagate sandbox: C video ${job.providerJobId}`)).toBe(true);
      expect(createHash("sha256").update(bytes).digest("hex")).toBe(output!.sha256);
    }
  });

  it("C: 500044 sends the job back to the queue to wait for a slot with backoff; a rejected submit takes no slot", async () => {
    const { c, world } = await cWorld({ renderMs: { min: 60_000, max: 60_000 } }, 60);
    // Another client of the same account holds all three slots for a virtual minute.
    for (let index = 0; index < 3; index++) {
      const response = await fetch(`${world.sandbox.url}/c/openapi/v2/video/text/generate`, {
        method: "POST",
        headers: { "API-KEY": "sandbox-c-key", "Ai-trace-id": crypto.randomUUID(), "content-type": "application/json" },
        body: JSON.stringify({ prompt: `other ${index}` }),
      });
      expect(((await response.json()) as { ErrCode: number }).ErrCode).toBe(0);
    }
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const job = await enqueue(video("ours"));
    engine.start();
    const outcome = await wait([job.id]);
    await engine.stop();
    expect(outcome.jobs[0]!.state).toBe("succeeded");
    const refused = c.stats().concurrentLimitRejections;
    expect(refused).toBeGreaterThanOrEqual(1);
    expect(engine.stats().c!.backpressure).toBe(refused);
    const events = await store.events(job.id);
    expect(events[2]).toMatchObject({ fromState: "submitting", toState: "queued" });
    expect(events[2]!.reason).toMatch(/500044|slot|capacity/i);
    // Never an immediate resubmit: consecutive submits are at least a virtual second apart.
    const submits = world.sandbox.requests().filter((entry) => entry.provider === "c" && entry.method === "POST").slice(3);
    for (let index = 1; index < submits.length; index++) expect(submits[index]!.at - submits[index - 1]!.at).toBeGreaterThanOrEqual(1_000);
  });

  it("C: after ten minutes in status 5 the slot is released (the provider frees it) while the job is still tracked", async () => {
    const { c, world } = await cWorld({ renderMs: { min: 14 * MINUTE, max: 14 * MINUTE } }, 300);
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const jobs = [];
    for (let index = 0; index < 4; index++) jobs.push(await enqueue(video(`long ${index}`)));
    engine.start();
    const outcome = await wait(jobs.map((job) => job.id));
    await engine.stop();
    expect(outcome.jobs.map((job) => job.state)).toEqual(Array(4).fill("succeeded"));
    expect(c.stats().concurrentLimitRejections).toBe(0);
    const byCreation = c.tasks().sort((left, right) => left.createdAt - right.createdAt);
    // The fourth task started once the first three had generated for ten minutes, before any of them finished.
    expect(byCreation[3]!.createdAt - byCreation[0]!.createdAt).toBeGreaterThanOrEqual(10 * MINUTE);
    expect(byCreation[3]!.createdAt - byCreation[0]!.createdAt).toBeLessThan(14 * MINUTE);
    const first = await store.events(outcome.jobs.find((job) => job.providerJobId === byCreation[0]!.videoId)!.id);
    expect(first.map((event) => event.toState)).toEqual(["queued", "submitting", "running", "capturing", "succeeded"]);
  });

  it("C: 500090 fails the job insufficient_balance and no further C job is submitted: at most the first wave (3 slots) was sent, the rest never ran", async () => {
    const { c, world } = await cWorld({ renderMs: { min: 10_000, max: 10_000 }, balanceCredits: 0 }, 60);
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const jobs = [];
    for (let index = 0; index < 8; index++) jobs.push(await enqueue(video(`poor ${index}`)));
    engine.start();
    const first = await wait([jobs[0]!.id]);
    // Idle means nothing in flight and nothing due: an engine that ignored the halt would first have sent the rest.
    await once(engine, "idle");
    await engine.stop();
    const states = await Promise.all(jobs.map(async (job) => (await store.getJob(job.id))!));
    const failed = states.filter((job) => job.state === "failed");
    const neverRan = states.filter((job) => job.state === "queued");
    expect(first.jobs[0]!.state).toBe("failed");
    expect(failed.map((job) => job.error?.code)).toEqual(Array(failed.length).fill("insufficient_balance"));
    expect(c.stats().submits).toBe(failed.length);
    expect(c.stats().submits).toBeLessThanOrEqual(3);
    expect(neverRan).toHaveLength(8 - failed.length);
    for (const job of neverRan) expect([job.attempts, job.submitSentAt, job.providerJobId]).toEqual([0, null, null]);
    expect((await store.halts()).map((halt) => halt.provider)).toEqual(["c"]);
  });
});

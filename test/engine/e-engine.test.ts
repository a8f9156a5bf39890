import { existsSync, readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEEmulator, type EEmulator } from "../../src/sandbox/e/index.js";
import type { Store } from "../../src/store/store.js";
import { busiestWindow } from "../../bench/harness.js";
import { sqliteFactory } from "../helpers/stores.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";
import { until } from "../helpers/until.js";

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

async function eWorld(options: Parameters<typeof createEEmulator>[0], scale: number): Promise<{ e: EEmulator; world: World }> {
  const e = createEEmulator(options);
  world = await startWorld([e], { timeScale: scale });
  return { e, world };
}


describe("engine on E (in-process, real sandbox and SQLite, virtual time)", () => {
  it("E: 6 jobs share 4 requests a minute with their polls: no 60 s window above 4, no 429, seeds and alt text kept beside each image", async () => {
    // Scale 20: the engine's 1 s arrival margin is 50 ms of real time, more than loopback jitter.
    const { e, world } = await eWorld({ renderMs: { min: 20_000, max: 40_000 } }, 20);
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const jobs = [];
    for (let index = 0; index < 6; index++) jobs.push(await enqueue({ provider: "e", model: "v3", input: { prompt: `a paper crane ${index}` } }));
    engine.start();
    const outcome = await wait(jobs.map((job) => job.id));
    await engine.stop();
    expect(outcome.jobs.map((job) => [job.state, job.error?.message ?? null])).toEqual(Array(6).fill(["succeeded", null]));
    expect(e.quota().rejected).toBe(0);
    // Every request E counts: API calls and status reads carrying the client id (token requests and result links are not counted by E).
    const counted = e.requests().filter((request) => request.counted).map((request) => request.at);
    expect(busiestWindow(counted, 60_000).count).toBeLessThanOrEqual(4);
    for (const job of outcome.jobs) {
      const outputs = await store.outputs(job.id);
      expect(outputs.length).toBeGreaterThanOrEqual(1);
      for (const output of outputs) {
        expect(output.metadata).toHaveProperty("seed");
        expect(output.metadata).toHaveProperty("altText");
        expect(existsSync(`${output.path}.json`)).toBe(true);
        expect(JSON.parse(readFileSync(`${output.path}.json`, "utf8"))).toEqual(output.metadata);
        expect(readFileSync(output.path).subarray(1, 4).toString("latin1")).toBe("PNG");
      }
    }
  }, 60_000);

  it("E: the first minute sends exactly 3 submits (mediagate counts its token request among the 4); stopping the engine while the rest wait for the window puts them back in the queue at once: nothing sent, nothing unknown", async () => {
    const { e, world } = await eWorld({ renderMs: { min: 600_000, max: 600_000 } }, 1);
    const { engine, enqueue } = worldEngine(world, store);
    const jobs: Array<{ id: string }> = [];
    for (let index = 0; index < 8; index++) jobs.push(await enqueue({ provider: "e", model: "v3", input: { prompt: `a waiting kite ${index}` } }));
    engine.start();
    // spec E Limits: 4 requests a minute per organisation; whether the token request is one of them is not shown (as for
    // polls, "not shown, so count them"). mediagate counts it in its own window, so the first minute's 4 are the token
    // request and 3 submits. The sandbox does not count token requests, so E sees 3: under its quota, never over.
    // Wait until every job is either sent or still waiting for a rate token: the window has then decided for all 8.
    await until(async () => {
      const states = await Promise.all(jobs.map(async (job) => (await store.getJob(job.id))!));
      const waiting = states.filter((job) => job.state === "submitting" && job.submitSentAt === null).length;
      return e.jobs().length >= 3 && states.filter((job) => job.state === "running").length + waiting === 8;
    }, "3 jobs sent and 5 waiting for the window");
    const sent = 3;
    await engine.stop();
    const states = await Promise.all(jobs.map(async (job) => (await store.getJob(job.id))!));
    expect(e.jobs()).toHaveLength(sent);
    expect(e.tokens()).toHaveLength(1);
    expect(e.requests().filter((request) => request.counted).map((request) => request.kind)).toEqual(["submit", "submit", "submit"]);
    expect(states.filter((job) => job.state === "running")).toHaveLength(sent);
    const waiting = states.filter((job) => job.state === "queued");
    expect(waiting).toHaveLength(8 - sent);
    for (const job of waiting) {
      expect(job.reason).toMatch(/^not sent: .*engine stopping/);
      expect(job.submitSentAt).toBeNull();
      expect(job.leaseOwner).toBeNull();
    }
  }, 30_000);
});

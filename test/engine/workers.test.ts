import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { busiestWindow } from "../../bench/harness.js";
import { ScaledClock } from "../../src/core/clock.js";
import { createEEmulator } from "../../src/sandbox/e/index.js";
import { openPostgresStore } from "../../src/store/postgres.js";
import type { Store } from "../../src/store/store.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { dropSchema } from "../helpers/stores.js";
import { waitAndRead } from "../helpers/wait.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";
import { until } from "../helpers/until.js";

const databaseUrl = process.env.DATABASE_URL;

// Several workers on one store is what PostgreSQL is for; on SQLite, two processes on one file are
// covered by the CLI test that starts two batches together (test/e2e/d-batch.test.ts).
describe.runIf(databaseUrl)("two engines on one PostgreSQL store (real sandbox over loopback)", () => {
  let schema: string;
  let stores: Store[];
  let worlds: Array<DWorld | World>;
  beforeEach(async () => {
    schema = `mg_test_${randomBytes(6).toString("hex")}`;
    stores = [await openPostgresStore(databaseUrl!, { schema, maxConnections: 4 }), await openPostgresStore(databaseUrl!, { schema, maxConnections: 4 })];
    worlds = [];
  });
  afterEach(async () => {
    await Promise.all(stores.map((store) => store.close()));
    for (const world of worlds) await world.close();
    await dropSchema(databaseUrl!, schema);
  });

  it("D: they share the 24 slots through the store: 60 jobs, peak 24 at D, no 429, each submitted once", async () => {
    // Renders long enough that two engines fill all 24 slots before the first ends, even on a loaded machine
    // (at 700 ms, two engines claiming through PostgreSQL under load reached a peak of 9–21).
    const world = await startDWorld({ renderTimeMs: 3_000 });
    worlds.push(world);
    const [first, second] = stores.map((store) => engineFor(world, store));
    const jobs = [];
    for (let index = 0; index < 60; index++) jobs.push(await first!.enqueue({ model: "gen-2-pro", input: { prompt: `shared ${index}`, width: 256, height: 256 } }));
    first!.engine.start();
    second!.engine.start();
    const outcome = await waitAndRead(first!.engine, stores[0]!, jobs.map((job) => job.id));
    await Promise.all([first!.engine.stop(), second!.engine.stop()]);
    expect(outcome.jobs.every((job) => job.state === "succeeded")).toBe(true);
    expect(first!.engine.stats().d!.submits).toBeGreaterThan(0);
    expect(second!.engine.stats().d!.submits).toBeGreaterThan(0);
    expect(world.submits()).toBe(60);
    expect(world.d.peakActive).toBe(24);
    expect(world.d.rejected429Count).toBe(0);
  }, 60_000);

  it("an idle engine hears of work another process queued, and of a webhook another process received for its job, at once (LISTEN/NOTIFY), not at its next look", async () => {
    const world = await startDWorld({ renderTimeMs: 60_000 });
    worlds.push(world);
    // A thousand times slower than real time: its naps (half a second between looks at the store, its first
    // poll) last minutes, so within this test only a notification can make it act. (An hour ahead, so that
    // what the other process queues at its real now is due.)
    const idle = engineFor(world, stores[0]!, { clock: new ScaledClock(0.001, Date.now() + 3_600_000) });
    const elsewhere = engineFor(world, stores[1]!);
    const napping = new Promise<void>((resolve) => idle.engine.once("idle", () => resolve()));
    idle.engine.listenForWork();
    idle.engine.start();
    await napping;
    const job = await elsewhere.enqueue({ model: "gen-2-pro", input: { prompt: "heard at once", width: 256, height: 256 } });
    await until(async () => (await stores[1]!.getJob(job.id))!.state === "running", "the idle engine to submit the job queued elsewhere");
    expect(world.submits()).toBe(1);
    const polls = () => world.sandbox.requests().filter((request) => request.method === "GET" && request.url.startsWith("/d-poll/v1/get_result")).length;
    expect(polls()).toBe(0);
    // The other process's server verified a webhook for it: its engine nudges the job, the owner polls it now.
    expect(await elsewhere.engine.nudge((await stores[1]!.getJob(job.id))!)).toBe(true);
    await until(async () => polls() > 0, "the owner to poll the nudged job");
    await idle.engine.stop();
  }, 60_000);

  it("E: they share 4 requests a minute through the store: no 60 s window above 4 at E, no 429", async () => {
    const e = createEEmulator({ renderMs: { min: 20_000, max: 40_000 } });
    const world = await startWorld([e], { timeScale: 20 });
    worlds.push(world);
    const [first, second] = stores.map((store) => worldEngine(world, store, { virtualTime: true }));
    const jobs = [];
    for (let index = 0; index < 6; index++) jobs.push(await first!.enqueue({ provider: "e", model: "v3", input: { prompt: `a shared crane ${index}` } }));
    first!.engine.start();
    second!.engine.start();
    const outcome = await first!.wait(jobs.map((job) => job.id));
    await Promise.all([first!.engine.stop(), second!.engine.stop()]);
    expect(outcome.jobs.every((job) => job.state === "succeeded")).toBe(true);
    expect(e.quota().rejected).toBe(0);
    const counted = e.requests().filter((request) => request.counted).map((request) => request.at);
    expect(busiestWindow(counted, 60_000).count).toBeLessThanOrEqual(4);
    expect(e.jobs()).toHaveLength(6);
  }, 90_000);
});


import { once } from "node:events";
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBEmulator, type BEmulator } from "../../src/sandbox/b/index.js";
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

const clip = (index: number) => ({
  provider: "b" as const,
  model: "vendorx/video-2.5",
  operation: "image-to-video",
  input: { image: `https://images.example/${index}.png`, resolution: "720p", duration_s: 5 },
});

async function bWorld(options: Parameters<typeof createBEmulator>[0], scale = 60): Promise<{ b: BEmulator; world: World }> {
  const b = createBEmulator(options);
  world = await startWorld([b], { timeScale: scale });
  return { b, world };
}

/** Runs the engine until every job has ended and every charge is settled (or the bound passes). */
async function untilSettled(store: Store, ids: string[], boundMs = 30_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  let summary = "";
  while (Date.now() < deadline) {
    const jobs = await Promise.all(ids.map((id) => store.getJob(id)));
    if (jobs.every((job) => job && ["succeeded", "failed"].includes(job.state) && !["pending", "unavailable"].includes(job.chargeState))) return;
    const counts = new Map<string, number>();
    for (const job of jobs) counts.set(`${job?.state}/${job?.chargeState}`, (counts.get(`${job?.state}/${job?.chargeState}`) ?? 0) + 1);
    summary = [...counts].map(([key, count]) => `${key}: ${count}`).join(", ");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`charges did not settle in time (${summary})`);
}

describe("engine on B (in-process, real sandbox and SQLite, virtual time)", () => {
  it("B: a submit whose answer is lost is resent with the same Idempotency-Key: one job at B, tracked to the end", async () => {
    const { b, world } = await bWorld({ renderTimeMs: 5_000 });
    world.sandbox.injectFault({ provider: "b", method: "POST", path: /^\/b\/v1\/media\//, fault: { kind: "drop_after_handling" }, times: 1 });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const job = await enqueue(clip(1));
    engine.start();
    const outcome = await wait([job.id]);
    await engine.stop();
    expect(outcome.jobs[0]!.state).toBe("succeeded");
    expect(b.submitCount).toBe(2);
    expect(b.jobs).toHaveLength(1);
    expect(b.jobs[0]!.idempotencyKey).toBe(outcome.jobs[0]!.idempotencyKey);
  });

  it("B: a crash between sending a submit and recording its answer is resumed with the same key, creating no second job", async () => {
    const { b, world } = await bWorld({ renderTimeMs: 5_000 });
    const first = worldEngine(world, store, { virtualTime: true, leaseMs: 2_000 });
    const job = await first.enqueue(clip(2));
    // What a dead engine leaves: the key stored, the request sent, the job still `submitting` under a lease that lapses.
    const key = "2b1b6f1e-6d1c-4a53-9a55-3f6d7f0c9a11";
    const claimed = await store.claimForSubmit(job.id, "mg:gone-host:999999:dead", [], world.sandbox.clock.now(), 1);
    expect(claimed.kind).toBe("claimed");
    await store.updateJob(job.id, { state: "submitting" }, { idempotencyKey: key }, world.sandbox.clock.now());
    const response = await fetch(`${world.sandbox.url}/b/v1/media/vendorx/video-2.5/image-to-video`, {
      method: "POST",
      headers: { "X-API-Key": "sandbox-b-key", "Idempotency-Key": key, "content-type": "application/json" },
      body: JSON.stringify(job.body),
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const second = worldEngine(world, store, { virtualTime: true });
    second.engine.start();
    const outcome = await second.wait([job.id]);
    await second.engine.stop();
    expect(outcome.jobs[0]!.state).toBe("succeeded");
    expect(outcome.jobs[0]!.idempotencyKey).toBe(key);
    expect(b.jobs).toHaveLength(1);
    expect(b.submitCount).toBe(2);
  });

  it("B: 100 jobs with pending and unavailable billing: the ledger equals B's settled charges to the micro-dollar", async () => {
    const { b, world } = await bWorld({ renderTimeMs: { minMs: 2_000, maxMs: 8_000 }, settlementDelayMs: 4_000, billingUnavailableMs: 40_000, concurrencyLimit: 8 }, 120);
    b.failNextJobs(5);
    const { engine, enqueue } = worldEngine(world, store, { virtualTime: true });
    const jobs = [];
    for (let index = 0; index < 100; index++) jobs.push(await enqueue(clip(index), `bill-${index}`));
    engine.start();
    await untilSettled(store, jobs.map((job) => job.id), 60_000);
    await engine.stop();
    const settledAtB = Object.values(b.settledChargesByKey).reduce((sum, value) => sum + value, 0);
    expect(settledAtB).toBeGreaterThan(0);
    expect(await store.ledgerTotal({ provider: "b" })).toBe(settledAtB);
    const finished = await Promise.all(jobs.map(async (job) => (await store.getJob(job.id))!));
    expect(finished.filter((job) => job.state === "failed").map((job) => job.chargeMicroUsd)).toEqual([0, 0, 0, 0, 0]);
    expect(finished.every((job) => job.chargeState === "settled")).toBe(true);
    expect(b.jobs).toHaveLength(100);
    expect(b.rejected429Count).toBe(0);
    // Every succeeded job saved its own job's video (the sandbox tags each file with its job id).
    for (const job of finished.filter((each) => each.state === "succeeded")) {
      const [output] = await store.outputs(job.id);
      expect(readFileSync(output!.path).toString("utf8").endsWith(`mediagate sandbox: B job ${job.providerJobId}`)).toBe(true);
    }
  }, 90_000);

  it("B: insufficient_balance fails the job and no further B job is submitted: at most the first wave (4 slots) was sent, the rest never ran", async () => {
    const { b, world } = await bWorld({ renderTimeMs: 5_000, balanceMicroUsd: 100 });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const jobs = [];
    for (let index = 0; index < 10; index++) jobs.push(await enqueue(clip(index), `poor-${index}`));
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
    expect(b.submitCount).toBe(failed.length);
    expect(b.submitCount).toBeLessThanOrEqual(4);
    expect(neverRan).toHaveLength(10 - failed.length);
    for (const job of neverRan) expect([job.attempts, job.submitSentAt, job.providerJobId]).toEqual([0, null, null]);
    expect((await store.halts()).map((halt) => halt.provider)).toEqual(["b"]);
  });
});

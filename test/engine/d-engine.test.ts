import { hostname } from "node:os";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type EngineLogger, silentLogger } from "../../src/engine/logger.js";
import type { Store } from "../../src/store/store.js";
import { D_KEY, type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { failingStore, sqliteFactory } from "../helpers/stores.js";
import { untilJob } from "../helpers/until.js";

let world: DWorld;
let store: Store;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ store, cleanup } = await sqliteFactory.open());
});
afterEach(async () => {
  await cleanup();
  await world?.close();
});

const pro = (prompt: string) => ({ model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });

async function submitDirectly(world: DWorld, prompt: string): Promise<number> {
  const response = await fetch(`${world.sandbox.url}/d/v1/gen-2-pro`, {
    method: "POST",
    headers: { "x-key": D_KEY, "content-type": "application/json" },
    body: JSON.stringify({ prompt, width: 256, height: 256 }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe("engine on D (in-process, real sandbox and SQLite)", () => {
  it("a step that ends sets when its job is next due, and the loop wakes for it then, not at its idle tick", async () => {
    world = await startDWorld({ renderTimeMs: 1_000 });
    // Ten minutes between idle looks: the job's polls come only from the due times its own steps set.
    const { engine, enqueue } = engineFor(world, store, { idleTickMs: 600_000 });
    const job = await enqueue(pro("woken by its own due time"));
    engine.start();
    const done = await untilJob(engine, store, job.id, (current) => current.state === "succeeded", 20_000);
    await engine.stop();
    expect(done.state).toBe("succeeded");
    // Polled through its render, as scheduled from each poll's end (the first 500 ms after the submit's answer).
    const polls = world.sandbox.requests().filter((request) => request.url.startsWith("/d-poll/"));
    expect(polls.length).toBeGreaterThanOrEqual(2);
  });

  it("D: 429 makes the job wait for a slot with backoff, never an immediate resubmit", async () => {
    world = await startDWorld({ renderTimeMs: 2_500 });
    // Another client of the same account holds all 24 slots.
    for (let index = 0; index < 24; index++) expect(await submitDirectly(world, `other ${index}`)).toBe(200);
    const { engine, enqueue, wait } = engineFor(world, store);
    const job = await enqueue(pro("ours"));
    engine.start();
    const outcome = await wait([job.id]);
    await engine.stop();
    expect(outcome.jobs[0]!.state).toBe("succeeded");
    const ourSubmits = world.sandbox.requests().filter(
      (request) => request.method === "POST" && request.url === "/d/v1/gen-2-pro" && request.realAt > 0,
    ).slice(24);
    // Every attempt before the last was refused with 429; the last one was accepted.
    const refused = ourSubmits.slice(0, -1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const request of refused) expect(request.statusCode).toBe(429);
    expect(ourSubmits.at(-1)!.statusCode).toBe(200);
    // No attempt followed the previous one at once: each waited at least a second.
    for (let index = 1; index < ourSubmits.length; index++) {
      expect(ourSubmits[index]!.realAt - ourSubmits[index - 1]!.realAt).toBeGreaterThanOrEqual(1_000);
    }
    // Each 429 sent the job back to the queue with the reason, and taught the engine that the pool was full.
    const events = await store.events(job.id);
    const retries = refused.flatMap(() => ["queued", "submitting"]);
    expect(events.map((event) => event.toState)).toEqual(["queued", "submitting", ...retries, "running", "capturing", "succeeded"]);
    expect(events[2]!.reason).toMatch(/capacity/);
    expect(engine.stats().d!.backpressure).toBe(refused.length);
  });

  it("a D submit whose answer is lost becomes unknown_submission and is never resubmitted", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "drop_after_handling" }, times: 1 });
    const { engine, enqueue, wait } = engineFor(world, store);
    const job = await enqueue(pro("lost answer"));
    engine.start();
    const outcome = await wait([job.id]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await engine.stop();
    expect(outcome.jobs[0]!.state).toBe("unknown_submission");
    expect(outcome.jobs[0]!.error?.code).toBe("submit_outcome_unknown");
    expect(outcome.jobs[0]!.error?.message).toMatch(/mediagate resubmit/);
    expect(world.submits()).toBe(1);
    expect(world.d.jobs).toHaveLength(1);
  });

  it("a running job left by a stopped engine is tracked to the end by the next one", async () => {
    world = await startDWorld({ renderTimeMs: 1_200 });
    const first = engineFor(world, store);
    const job = await first.enqueue(pro("handover"));
    first.engine.start();
    for (let tries = 0; tries < 200 && (await store.getJob(job.id))!.state !== "running"; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await first.engine.stop();
    expect((await store.getJob(job.id))!.state).toBe("running");
    const second = engineFor(world, store);
    second.engine.start();
    const outcome = await second.wait([job.id]);
    await second.engine.stop();
    expect(outcome.jobs[0]!.state).toBe("succeeded");
    expect(world.submits()).toBe(1);
  });

  it("a store that fails for a while (locked, unreachable) stalls the engine, which retries with backoff and finishes every job", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    // The real store, with its queue reads failing three times, as a locked or unreachable database would.
    const locked = failingStore(store, 3, { fails: (method) => method === "dueQueued", message: "database is locked" });
    const logged: string[] = [];
    const log = { ...silentLogger, error: (_object: unknown, message?: string) => void logged.push(message ?? "") } as unknown as EngineLogger;
    const { engine, enqueue, wait } = engineFor(world, locked.store, { log });
    const jobs = [await enqueue(pro("first")), await enqueue(pro("second"))];
    engine.start();
    const outcome = await wait(jobs.map((job) => job.id));
    await engine.stop();
    expect(outcome.jobs.map((job) => job.state)).toEqual(["succeeded", "succeeded"]);
    expect(locked.failed()).toBe(3);
    expect(logged.filter((message) => message === "engine step failed; retrying")).toHaveLength(3);
    expect(world.submits()).toBe(2);
  });

  it("D outage: the provider's host goes down while 24 jobs render and 6 wait for slots; afterwards every job finishes, none sent twice, none unknown", async () => {
    world = await startDWorld({ renderTimeMs: 2_000 });
    const { engine, enqueue, wait } = engineFor(world, store);
    const jobs = [];
    for (let index = 0; index < 30; index++) jobs.push(await enqueue(pro(`outage ${index}`)));
    engine.start();
    for (let tries = 0; tries < 500 && world.d.activeCount() < 24; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(world.submits()).toBe(24);
    // Every slot is taken, so no submit is in flight: the outage cuts polls only.
    await world.sandbox.startOutage();
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    await world.sandbox.endOutage();
    const outageEndedAt = Date.now();
    const outcome = await wait(jobs.map((job) => job.id));
    await engine.stop();
    expect(outcome.jobs.map((job) => job.state)).toEqual(Array(30).fill("succeeded"));
    expect(world.submits()).toBe(30);
    expect(world.d.rejected429Count).toBe(0);
    // The first 24 finished rendering while the host was down: the engine could only see it after.
    const firstWave = outcome.jobs.filter((job) => job.submittedAt !== null).sort((left, right) => left.submittedAt! - right.submittedAt!).slice(0, 24);
    for (const job of firstWave) expect(job.providerDoneAt!).toBeGreaterThanOrEqual(outageEndedAt);
  }, 60_000);

  it("D outage before submit: a refused connection never carried the submit, so the job is sent once the host is back, not marked unknown", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    const { engine, enqueue, wait } = engineFor(world, store);
    const jobs = [await enqueue(pro("refused one")), await enqueue(pro("refused two"))];
    await world.sandbox.startOutage();
    engine.start();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(world.submits()).toBe(0);
    await world.sandbox.endOutage();
    const outcome = await wait(jobs.map((job) => job.id));
    await engine.stop();
    expect(outcome.jobs.map((job) => job.state)).toEqual(["succeeded", "succeeded"]);
    expect(world.submits()).toBe(2);
  }, 60_000);

  it("a job left in submitting by a dead engine before its request left is queued again and sent once, not marked unknown", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const { engine, enqueue, wait } = engineFor(world, store);
    const [sent, unsent] = [await enqueue(pro("was sent")), await enqueue(pro("never sent"))];
    // A dead engine (pid 999999 on this host) claimed both; only one's request had started to leave.
    const dead = `mg:${hostname()}:999999:abcdef`;
    for (const job of [sent, unsent]) expect((await store.claimForSubmit(job.id, dead, [], Date.now(), 60_000)).kind).toBe("claimed");
    await store.updateJob(sent.id, { state: "submitting" }, { submitSentAt: Date.now() }, Date.now());
    engine.start();
    const outcome = await wait([sent.id, unsent.id]);
    await engine.stop();
    expect(outcome.jobs.map((job) => [job.ref, job.state])).toEqual([
      [sent.ref, "unknown_submission"],
      [unsent.ref, "succeeded"],
    ]);
    expect(world.submits()).toBe(1);
  });
});

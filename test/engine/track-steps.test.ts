import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/core/job.js";
import { createDEmulator, type DEmulator } from "../../src/sandbox/d/index.js";
import type { Store } from "../../src/store/store.js";
import { sqliteFactory } from "../helpers/stores.js";
import { storedJobWhen, until } from "../helpers/until.js";
import { failOneAttemptThenHold, startWorld, type World, worldEngine } from "../helpers/world.js";

// What one poll does to a running job: the status it records, what it reports, when it polls next, and how a
// provider's failure or a failed poll is written down. Real sandbox D over loopback, real SQLite, virtual time.

const D_POLL_PATH = /^\/d-poll\//;
const pro = (prompt: string) => ({ provider: "d" as const, model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });

let store: Store;
let cleanup: () => Promise<void>;
let world: World | undefined;
beforeEach(async () => {
  ({ store, cleanup } = await sqliteFactory.open());
});
afterEach(async () => {
  await cleanup();
  await world?.close();
  world = undefined;
});

async function dWorld(): Promise<{ d: DEmulator; world: World }> {
  const d = createDEmulator({ renderTimeMs: 2_000 });
  world = await startWorld([d], { timeScale: 20 });
  return { d, world };
}

const pollRequests = (world: World) => world.sandbox.context.requests.filter((request) => D_POLL_PATH.test(request.url)).length;

describe("tracking a job, one poll at a time (SQLite, real sandbox D, virtual time)", () => {
  it("a status D does not list keeps the job running with 'provider status X' as its reason and its next poll ahead; a new status is reported once, not at every poll; every poll is counted", async () => {
    const { world } = await dWorld();
    world.sandbox.context.faults.add({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "status", status: 200, body: { status: "Queued" } }, times: 3 });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const seen: Job[] = [];
    engine.on("job", (job) => seen.push(job));
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("succeeded");

    const queued = seen.filter((update) => update.state === "running" && update.providerStatus === "Queued");
    expect(queued).toHaveLength(1);
    expect(queued[0]!.reason).toBe("provider status Queued");
    expect(queued[0]!.nextAttemptAt).toBeGreaterThan(queued[0]!.updatedAt);
    expect(queued[0]!.pollFailures).toBe(0);
    expect(engine.stats().d!.polls).toBe(pollRequests(world));

    const capturing = seen.find((update) => update.state === "capturing")!;
    expect(capturing.reason).toBe("saving results");
    expect(capturing.providerStatus).toBe("Ready");
    expect(capturing.providerDoneAt).not.toBeNull();
    const toCapturing = (await store.events(job.id)).find((event) => event.toState === "capturing")!;
    expect(toCapturing.reason).toBe("provider reported Ready");
    expect(toCapturing.detail).toEqual({ outputs: 1 });
  });

  it("a status a verified webhook delivered is used once instead of the next poll: the job ends on it with no further poll", async () => {
    const d = createDEmulator({ renderTimeMs: 600_000 });
    world = await startWorld([d], { timeScale: 20 });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    await until(() => pollRequests(world!) >= 1, "the first poll");
    const running = (await store.getJob(job.id))!;
    expect(running.state).toBe("running");
    const polled = pollRequests(world);
    const delivered = { kind: "failed" as const, providerStatus: "Error", code: "provider_failed", message: "D said so in a webhook", raw: { status: "Error" } };
    expect(await engine.nudge(running, delivered)).toBe(true);
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("failed");
    expect(ended!.error!.message).toBe("D said so in a webhook");
    expect(pollRequests(world)).toBe(polled);
  });

  it("stopping the engine during a poll counts no failure: the job stays running as it was, and the next engine tracks it to the end", async () => {
    const { d, world } = await dWorld();
    // The first poll is held until the client gives up on it (the stop aborts it).
    world.sandbox.context.faults.add({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "delay", ms: 30_000 }, times: 1 });
    const first = worldEngine(world, store, { virtualTime: true });
    const job = await first.enqueue(pro("a lighthouse"), "lighthouse");
    first.engine.start();
    await until(() => pollRequests(world) >= 1, "the first poll to be asked for");
    await first.engine.stop();
    const stopped = (await store.getJob(job.id))!;
    expect(stopped.state).toBe("running");
    expect(stopped.pollFailures).toBe(0);
    expect(stopped.reason ?? "").not.toMatch(/poll failed/);
    expect(stopped.leaseOwner).toBeNull();

    const second = worldEngine(world, store, { virtualTime: true });
    second.engine.start();
    const [ended] = (await second.wait([job.id])).jobs;
    await second.engine.stop();
    expect(ended!.state).toBe("succeeded");
    expect(d.jobs).toHaveLength(1);
  });

  it("D reporting a job Error ends it failed (provider_failed) with D's answer quoted in the message and kept as detail; its charge is recorded as unknown, as D does not say", async () => {
    const { world } = await dWorld();
    const answer = { status: "Error", details: "the model could not render this" };
    world.sandbox.context.faults.add({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "status", status: 200, body: answer } });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const states: string[] = [];
    engine.on("job", (update) => states.push(update.state));
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("failed");
    expect(ended!.error!.code).toBe("provider_failed");
    expect(ended!.error!.message).toBe(`D reported job ${ended!.providerJobId} Error: ${JSON.stringify(answer)}`);
    expect(ended!.error!.detail).toEqual(answer);
    expect(ended!.providerStatus).toBe("Error");
    expect(ended!.providerDoneAt).not.toBeNull();
    expect(ended!.reason).toBe(ended!.error!.message);
    expect(ended!.leaseOwner).toBeNull();
    expect(ended!.chargeMicroUsd).toBeNull();
    expect(ended!.chargeSource).toBe("D does not publish whether failed jobs are charged");
    expect(states.at(-1)).toBe("failed");
    const last = (await store.events(job.id)).at(-1)!;
    expect(last.toState).toBe("failed");
    expect(last.reason).toBe(ended!.error!.message);
    expect(last.detail).toEqual({ raw: answer });
  });

  it("a poll that fails with a Retry-After is tried again exactly that long after: the job stays running, the failure counted, with 'poll failed (…); retrying' as its reason, said to listeners", async () => {
    const { world } = await dWorld();
    failOneAttemptThenHold(world, D_POLL_PATH, { kind: "status", status: 503, headers: { "retry-after": "7" } });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const reported: Job[] = [];
    engine.on("job", (update) => {
      if (update.pollFailures === 1) reported.push(update);
    });
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    const between = await storedJobWhen(store, job.id, (current) => current.pollFailures === 1, "the failed poll to be recorded");
    expect(between.state).toBe("running");
    expect(between.error).toBeNull();
    expect(between.reason).toMatch(/^poll failed \(.*HTTP 503.*\); retrying$/);
    expect(between.nextAttemptAt - between.updatedAt).toBe(7_000);
    // Reported to listeners as it happened (a progress display shows it), not only written to the store.
    expect(reported.map((update) => update.reason)).toEqual([between.reason]);
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("succeeded");
    expect(ended!.pollFailures).toBe(0);
  });
});

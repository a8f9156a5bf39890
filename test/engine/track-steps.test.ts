import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/core/job.js";
import { createAEmulator } from "../../src/sandbox/a/index.js";
import { createDEmulator, type DEmulator } from "../../src/sandbox/d/index.js";
import type { Store } from "../../src/store/store.js";
import { sqliteFactory } from "../helpers/stores.js";
import { storedJobWhen, until } from "../helpers/until.js";
import { UNKNOWN_CHARGE } from "../../src/engine/track.js";
import { failOneAttemptThenHold, startWorld, stoppedMidDownload, type World, worldEngine } from "../helpers/world.js";

// What one poll does to a running job: the status it records, what it reports, when it polls next, and how a
// provider's failure or a failed poll is written down. Real sandbox D over loopback, real SQLite, virtual time.

const D_POLL_PATH = /^\/d-poll\//;
const D_RESULT_PATH = /^\/d-results\//;
const A_RESULT_PATH = /^\/a\/results\//;
const A_TASK_PATH = /^\/a\/api\/v3\/.*tasks\/[^/]+$/;
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

const pollRequests = (world: World) => world.sandbox.requests().filter((request) => D_POLL_PATH.test(request.url)).length;

describe("tracking a job, one poll at a time (SQLite, real sandbox D, virtual time)", () => {
  it("a status D does not list keeps the job running with 'provider status X' as its reason and its next poll ahead; a new status is reported once, not at every poll; every poll is counted", async () => {
    const { world } = await dWorld();
    world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "status", status: 200, body: { status: "Queued" } }, times: 3 });
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
    world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "delay", ms: 30_000 }, times: 1 });
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
    world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "status", status: 200, body: answer } });
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

/** `stoppedMidDownload`, and the job it leaves is `capturing`. */
async function leftCapturing(world: World, resultPath: RegExp, start: (engine: ReturnType<typeof worldEngine>) => Promise<Job>): Promise<Job> {
  const stopped = await stoppedMidDownload(world, store, resultPath, start);
  expect(stopped.state).toBe("capturing");
  return stopped;
}

describe("a capturing job whose result must be read again (SQLite, real sandboxes, virtual time)", () => {
  it("the provider now saying the job is not done keeps it capturing, read again after the provider's longest poll interval (D: 5 s), with no failure counted; then it is saved, submitted and charged once", async () => {
    const { d, world } = await dWorld();
    const stopped = await leftCapturing(world, D_RESULT_PATH, ({ enqueue }) => enqueue(pro("a lighthouse"), "lighthouse"));
    world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "status", status: 200, body: { id: stopped.providerJobId, status: "Pending" } }, times: 1 });
    // The held read is answered a real second late, so the job can be read as the Pending answer left it.
    world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "delay", ms: 1_000 }, times: 1 });
    const second = worldEngine(world, store, { virtualTime: true });
    second.engine.start();
    const between = await storedJobWhen(store, stopped.id, (job) => job.providerStatus === "Pending", "the Pending answer to be recorded");
    expect(between.state).toBe("capturing");
    expect(between.nextAttemptAt - between.updatedAt).toBe(5_000);
    expect(between.pollFailures).toBe(0);
    expect(between.error).toBeNull();
    const [ended] = (await second.wait([stopped.id])).jobs;
    await second.engine.stop();
    expect(ended!.state).toBe("succeeded");
    expect(d.jobs).toHaveLength(1);
    expect(ended!.chargeMicroUsd).toBe(30_000);
    expect(await store.ledgerTotal()).toBe(30_000);
  });

  for (const kind of ["expired", "cancelled"] as const) {
    it(`A reporting a task ${kind} after it was reported succeeded, while its result was being saved, fails the job (not ${kind}: it was done) and keeps the charge of its success, from the tokens A reported then`, async () => {
      const a = createAEmulator({ queueMs: 1_000, renderMs: 4_000 });
      world = await startWorld([a], { timeScale: 20, env: { MEDIAGATE_A_USD_PER_MILLION_TOKENS: "2" } });
      const stopped = await leftCapturing(world, A_RESULT_PATH, ({ enqueue }) =>
        enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "a lighthouse at dusk", duration: 5, resolution: "480p" } }));
      const tokens = (a.tasks()[0] as { usage?: { total_tokens?: number } }).usage?.total_tokens;
      const reported = (await store.events(stopped.id)).find((event) => event.toState === "capturing")!.detail as { usage: { tokens: number } };
      expect(reported.usage.tokens).toBeGreaterThan(0);
      if (tokens !== undefined) expect(reported.usage.tokens).toBe(tokens);
      const answer = { id: stopped.providerJobId, status: kind };
      world.sandbox.injectFault({ provider: "a", method: "GET", path: A_TASK_PATH, fault: { kind: "status", status: 200, body: answer } });
      const second = worldEngine(world, store, { virtualTime: true });
      second.engine.start();
      const [ended] = (await second.wait([stopped.id])).jobs;
      await second.engine.stop();
      expect(ended!.state).toBe("failed");
      expect(ended!.error).toMatchObject({ code: kind === "expired" ? "provider_expired" : "provider_cancelled", message: `provider reported ${kind}`, detail: answer });
      expect(ended!.chargeMicroUsd).toBe(reported.usage.tokens * 2);
      expect(await store.ledgerTotal()).toBe(reported.usage.tokens * 2);
      expect(await store.outputs(stopped.id)).toEqual([]);
      expect((await store.events(stopped.id)).at(-1)).toMatchObject({ fromState: "capturing", toState: "failed" });
    });
  }

  it("reads that keep failing at the network give a capturing job up only past its tracking deadline, after 8 failed reads, as tracking_failed: charged as the success D reported", async () => {
    const d = createDEmulator({ renderTimeMs: 2_000 });
    world = await startWorld([d], { timeScale: 200 });
    const stopped = await leftCapturing(world!, D_RESULT_PATH, ({ enqueue }) => enqueue(pro("a lighthouse"), "lighthouse"));
    expect(stopped.trackingDeadlineAt).toBe(stopped.submittedAt! + 30 * 60_000);
    world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "drop" } });
    const second = worldEngine(world, store, { virtualTime: true });
    const seen: Job[] = [];
    second.engine.on("job", (job) => seen.push(job));
    second.engine.start();
    // Within the deadline, failure after failure leaves it capturing (a provider outage must not lose a paid result).
    const failing = await storedJobWhen(store, stopped.id, (job) => job.pollFailures >= 9, "nine failed reads", 30_000);
    expect(failing.state).toBe("capturing");
    expect(failing.error).toBeNull();
    world.sandbox.clock.advance(31 * 60_000);
    const [ended] = (await second.wait([stopped.id])).jobs;
    await second.engine.stop();
    expect(ended!.state).toBe("failed");
    expect(ended!.error!.code).toBe("tracking_failed");
    expect(ended!.error!.message).toMatch(/^tracking failed after 1\d attempts: /);
    expect(ended!.chargeMicroUsd).toBe(30_000);
    expect(ended!.chargeSource).not.toBe(UNKNOWN_CHARGE);
    expect(await store.ledgerTotal()).toBe(30_000);
    expect(seen.at(-1)!.state).toBe("failed");
    expect(d.jobs).toHaveLength(1);
  });
});

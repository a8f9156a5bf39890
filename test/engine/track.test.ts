import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { IDEMPOTENT_ATTEMPTS } from "../../src/providers/http.js";
import { createAEmulator } from "../../src/sandbox/a/index.js";
import { createDEmulator, type DEmulator } from "../../src/sandbox/d/index.js";
import type { Store } from "../../src/store/store.js";
import { formatMicroUsd } from "../../src/core/money.js";
import { JobsReport, summaryText } from "../../src/cli/run-jobs.js";
import { UNKNOWN_CHARGE } from "../../src/engine/track.js";
import { storeFactories } from "../helpers/stores.js";
import { untilJob } from "../helpers/until.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

const D_POLL_PATH = /^\/d-poll\//;
const pro = (prompt: string) => ({ provider: "d" as const, model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });

/** Tries the HTTP layer makes of one idempotent request before the engine sees it fail. */
const HTTP_ATTEMPTS = IDEMPOTENT_ATTEMPTS;

for (const factory of storeFactories) {
  describe(`tracking a running job to its end (${factory.name}, real sandbox, virtual time)`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    let world: World | undefined;
    beforeEach(async () => {
      ({ store, cleanup } = await factory.open());
    });
    afterEach(async () => {
      await cleanup();
      await world?.close();
      world = undefined;
    });

    async function dWorld(options: Parameters<typeof createDEmulator>[0], timeScale: number): Promise<{ d: DEmulator; world: World }> {
      const d = createDEmulator(options);
      world = await startWorld([d], { timeScale });
      return { d, world };
    }

    const pollsAt = (world: World, after: number) =>
      world.sandbox.requests().filter((request) => D_POLL_PATH.test(request.url) && request.at > after).length;

    it("D: a job still rendering past the 30-minute tracking deadline fails tracking_deadline_exceeded, frees its slot and is polled no more", async () => {
      const { world } = await dWorld({ renderTimeMs: 5 * 3_600_000 }, 1);
      const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
      const job = await enqueue(pro("never done"));
      const states: string[] = [];
      engine.on("job", (update) => states.push(update.state));
      engine.start();
      const running = await untilJob(engine, store, job.id, (current) => current.state === "running" && current.providerStatus === "Pending");
      expect(running.trackingDeadlineAt).toBe(running.submittedAt! + 30 * 60_000);
      world.sandbox.clock.advance(31 * 60_000);
      const deadlinePassedAt = world.sandbox.clock.now();
      const [ended] = (await wait([job.id])).jobs;
      await engine.stop();
      expect(ended!.state).toBe("failed");
      expect(ended!.error?.code).toBe("tracking_deadline_exceeded");
      expect(ended!.error?.message).toMatch(/^still not finished \d+ s after submit \(last status Pending\); giving up tracking$/);
      // The seconds are counted from the submit to the moment it was given up (past the 31 minutes the clock moved).
      const seconds = Number(/still not finished (\d+) s/.exec(ended!.error!.message)![1]);
      expect(seconds).toBe(Math.round((ended!.finishedAt! - ended!.submittedAt!) / 1_000));
      expect(seconds).toBeGreaterThanOrEqual(31 * 60);
      expect(states.at(-1)).toBe("failed");
      expect(ended!.reason).toBe(ended!.error!.message);
      expect(ended!.leaseOwner).toBeNull();
      expect((await store.poolStatus()).find((pool) => pool.key === "d:account")!.held).toBe(0);
      // The deadline is checked before polling: nothing was asked of D once it had passed.
      expect(pollsAt(world, deadlinePassedAt)).toBe(0);
    });

    it("D: a job given up at its tracking deadline records its charge as unknown: the budget keeps holding its estimate and the summary counts it as possibly charged", async () => {
      const { world } = await dWorld({ renderTimeMs: 5 * 3_600_000 }, 1);
      const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
      const job = await enqueue(pro("paid, never seen done"));
      await store.setBudget("budget_track", 1_000_000, Date.now());
      await store.assignBudget("budget_track", [job.id], Date.now());
      engine.start();
      await untilJob(engine, store, job.id, (current) => current.state === "running");
      world.sandbox.clock.advance(31 * 60_000);
      const outcome = await wait([job.id]);
      await engine.stop();
      const ended = outcome.jobs[0]!;
      expect(ended.error?.code).toBe("tracking_deadline_exceeded");
      expect(ended.chargeMicroUsd).toBeNull();
      expect(ended.chargeSource).toBe(UNKNOWN_CHARGE);
      expect(ended.estimateMicroUsd).toBeGreaterThan(0);
      expect(ended.budgetHeldMicroUsd).toBe(ended.estimateMicroUsd);
      expect((await store.budget("budget_track"))!.committedMicroUsd).toBe(ended.estimateMicroUsd);
      const report = new JobsReport();
      report.add(ended);
      const summary = summaryText(report, [], "out");
      expect(summary).toContain(`1 job(s) may have been charged by the provider (up to ${formatMicroUsd(ended.estimateMicroUsd!)} estimated, not in the total)`);
      expect(summary.split("\n")[0]).toBe("0 succeeded, 1 failed, 0 never ran; charged $0.0000");
    });

    it("D: polls that keep failing at the network (a provider outage) never give up a paid job before its tracking deadline: it is polled with backoff and saved once D answers again", async () => {
      const { world } = await dWorld({ renderTimeMs: 1_000 }, 50);
      // More failed polls in a row than the 8 after which a job without a deadline is given up (each poll is
      // itself tried HTTP_ATTEMPTS times by the HTTP layer).
      const DROPPED_POLLS = 10 * HTTP_ATTEMPTS;
      world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "drop" }, times: DROPPED_POLLS });
      const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
      const job = await enqueue(pro("unreachable polls"));
      engine.start();
      const [ended] = (await wait([job.id])).jobs;
      await engine.stop();
      expect(ended!.state).toBe("succeeded");
      expect(world.sandbox.requests().filter((request) => D_POLL_PATH.test(request.url) && request.fault === "drop")).toHaveLength(DROPPED_POLLS);
      expect(world.sandbox.requests().filter((request) => request.method === "POST" && request.url.startsWith("/d/v1/"))).toHaveLength(1);
      const reasons = (await store.events(job.id)).map((event) => event.toState);
      expect(reasons).toEqual(["queued", "submitting", "running", "capturing", "succeeded"]);
    });

    it("D: a poll refused with a 4xx three times in a row fails the job with that error's code; twice in a row does not", async () => {
      const { world } = await dWorld({ renderTimeMs: 3_000 }, 20);
      const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
      const refused = { kind: "status" as const, status: 404, body: { code: "not_found", message: "no such job" } };
      const failedSeen: string[] = [];
      engine.on("job", (update) => {
        if (update.state === "failed") failedSeen.push(update.id);
      });
      world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: refused, times: 2 });
      const survivor = await enqueue(pro("refused twice"));
      engine.start();
      const [succeeded] = (await wait([survivor.id])).jobs;
      expect(succeeded!.state).toBe("succeeded");

      world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: refused });
      const victim = await enqueue(pro("refused for good"));
      const [failed] = (await wait([victim.id])).jobs;
      await engine.stop();
      expect(failed!.state).toBe("failed");
      expect(failed!.error?.code).toBe("provider_rejected");
      expect(failed!.error?.message).toMatch(/^tracking failed after 3 attempts: D answered HTTP 404/);
      expect(world.sandbox.requests().filter((request) => D_POLL_PATH.test(request.url) && request.statusCode === 404)).toHaveLength(2 + 3);
      // The provider's error is kept whole, the charge is marked unknown (accepted, never seen to end), and the event says why.
      expect(failed!.error?.detail).toMatchObject({ provider: "d", httpStatus: 404, retryable: false });
      expect(failed!.chargeSource).toBe(UNKNOWN_CHARGE);
      expect(failed!.leaseOwner).toBeNull();
      const last = (await store.events(victim.id)).at(-1)!;
      expect(last.toState).toBe("failed");
      expect(last.reason).toMatch(/^tracking failed: D answered HTTP 404/);
      // Reported as it happened (progress, the server), not only found later in the store.
      expect(failedSeen).toEqual([victim.id]);
    });

    it("A: a task A reports expired ends the job expired (provider_expired) with A's detail kept; nothing is saved", async () => {
      const a = createAEmulator({ queueMs: 1_000, renderMs: 4_000 });
      world = await startWorld([a], { timeScale: 20 });
      const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
      a.injectOutcome("expired");
      const job = await enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "a lighthouse at dusk", duration: 5, resolution: "480p" } });
      engine.start();
      const [ended] = (await wait([job.id])).jobs;
      await engine.stop();
      expect(a.tasks().map((task) => task.status)).toEqual(["expired"]);
      expect(ended!.state).toBe("expired");
      expect(ended!.providerStatus).toBe("expired");
      expect(ended!.error).toMatchObject({ code: "provider_expired", message: "provider reported expired", detail: { status: "expired", error: { code: "TaskExpired" } } });
      expect(await store.outputs(job.id)).toEqual([]);
      const outDir = join(world.folder, "out");
      expect(existsSync(outDir) ? readdirSync(outDir) : []).toEqual([]);
      expect((await store.events(job.id)).at(-1)).toMatchObject({ fromState: "running", toState: "expired" });
    });

    it("A: a task cancelled at A while queued ends the job cancelled (provider_cancelled); it is polled no more", async () => {
      const a = createAEmulator({ queueMs: 10 * 60_000, renderMs: 4_000 });
      world = await startWorld([a], { timeScale: 20 });
      const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
      const job = await enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "a lighthouse at dusk", duration: 5, resolution: "480p" } });
      engine.start();
      const running = await untilJob(engine, store, job.id, (current) => current.state === "running");
      expect(a.cancelTask(running.providerJobId!)).toBe("cancelled");
      const [ended] = (await wait([job.id])).jobs;
      const readsWhenEnded = world.sandbox.requests().filter((request) => request.method === "GET" && request.provider === "a").length;
      // Past any poll that would still be due, and time for the engine to make it, had the job still been tracked.
      world.sandbox.clock.advance(5 * 60_000);
      await world.sandbox.clock.sleep(5_000);
      await engine.stop();
      expect(ended!.state).toBe("cancelled");
      expect(ended!.providerStatus).toBe("cancelled");
      expect(ended!.error).toMatchObject({ code: "provider_cancelled", message: "provider reported cancelled" });
      expect(world.sandbox.requests().filter((request) => request.method === "GET" && request.provider === "a")).toHaveLength(readsWhenEnded);
    });
  });
}

import { describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/core/config.js";
import { type Clock, ScaledClock } from "../../src/core/clock.js";
import type { Job } from "../../src/core/job.js";
import { Engine } from "../../src/engine/engine.js";
import { chargeUnsettled, JOB_PAGE, jobsInPages, type WaitCounts, waitForSettlement } from "../../src/engine/wait.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import type { NewJob, Store } from "../../src/store/store.js";
import { failingStore, freshStoreEachTest, storeFactories } from "../helpers/stores.js";
import { waitAndRead } from "../helpers/wait.js";

/** More than one page of what a waiting command reads per look (src/engine/wait.ts). */
const JOBS = 1_200;

function queuedJob(index: number, batchId: string): NewJob {
  return {
    id: `job_w${String(index).padStart(5, "0")}`,
    ref: `w-${index}`,
    batchId,
    provider: "d",
    model: "gen-2-pro",
    operation: null,
    body: { prompt: `w ${index}` },
    facts: {},
    warnings: [],
    estimateMicroUsd: 30_000,
    estimateSource: "test",
    outDir: "/tmp/out",
  };
}

/**
 * A clock whose time never moves: a wait on it looks at the store only when
 * woken (an engine event that ends it, the engine going idle, an abort), so a
 * test sees exactly what each of those does.
 */
const stoppedClock: Clock = {
  now: () => 5_000,
  sleep: (_ms, signal) => new Promise((_resolve, reject) => signal?.addEventListener("abort", () => reject(signal.reason), { once: true })),
};

const cancel = (store: Store, id: string, at: number) => store.transition(id, { state: "queued" }, "cancelled", { error: { code: "cancelled", message: "by test" } }, "cancelled", at);

/** An engine that is never started: every change below is made "by another process", so no event tells the waiter. */
function idleEngine(store: Store): Engine {
  return new Engine({ store, providers: createProviderRegistry(loadConfig({ env: {}, cwd: process.cwd() })), secrets: () => [] });
}

for (const factory of storeFactories) {
  describe(`waiting for a batch (${factory.name})`, () => {
    let store: Store;
    freshStoreEachTest(factory, (opened) => (store = opened));

    it("follows changes made by another process, more than a page of them stamped in the same millisecond, and ends when they are all terminal", async () => {
      const jobs = Array.from({ length: JOBS }, (_, index) => queuedJob(index, "batch_w"));
      await store.insertJobs(jobs, 1_000);
      const ids = jobs.map((job) => job.id);
      const finished: string[] = [];
      let lastCounts: WaitCounts | null = null;
      const waiting = waitAndRead(idleEngine(store), store, ids, {
        scope: { batchId: "batch_w" },
        onTerminal: (job: Job, counts) => {
          finished.push(job.id);
          lastCounts = counts;
        },
        signal: AbortSignal.timeout(30_000),
      });
      // Elsewhere (a `mediagate cancel`, another worker): every job ends, all at one instant.
      for (const id of ids) await store.transition(id, { state: "queued" }, "cancelled", { error: { code: "cancelled", message: "by test" } }, "cancelled", 2_000);
      const outcome = await waiting;
      expect(outcome.jobs.every((job) => job.state === "cancelled")).toBe(true);
      expect(new Set(finished).size).toBe(JOBS);
      expect(lastCounts).toMatchObject({ total: JOBS, done: JOBS, failed: JOBS, running: 0, queued: 0 });
    }, 60_000);

    it("ends at once when every job is finished or blocked (over budget, behind a halted provider, not savable), with exact counts; each finished job is handed over once, read whole", async () => {
      const jobs = [0, 1, 2, 3, 4, 5].map((index) => ({ ...queuedJob(index, "batch_c"), ...(index === 4 ? { provider: "c" as const, model: "c-model" } : {}) }));
      await store.insertJobs(jobs, 1_000);
      const [done, failed, cancelled, overBudget, halted, unsaved] = jobs.map((job) => job.id) as [string, string, string, string, string, string];
      const run = async (id: string, to: "succeeded" | "failed" | "capturing") => {
        await store.transition(id, { state: "queued" }, "submitting", {}, "claimed", 1_100);
        await store.transition(id, { state: "submitting" }, "running", { providerJobId: `p-${id}` }, "accepted", 1_200);
        if (to === "failed") return store.transition(id, { state: "running" }, "failed", { error: { code: "provider_failed", message: "no" } }, "failed", 1_300);
        await store.transition(id, { state: "running" }, "capturing", {}, "done", 1_300);
        if (to === "capturing") return store.updateJob(id, { state: "capturing" }, { blockedCode: "output_unwritable", reason: "folder gone" }, 1_400);
        return store.transition(id, { state: "capturing" }, "succeeded", {}, "saved", 1_400);
      };
      await run(done, "succeeded");
      await run(failed, "failed");
      await run(unsaved, "capturing");
      await store.transition(cancelled, { state: "queued" }, "cancelled", { error: { code: "cancelled", message: "by test" } }, "cancelled", 1_500);
      await store.updateJob(overBudget, { state: "queued" }, { blockedCode: "over_budget", reason: "over budget" }, 1_500);
      await store.haltProvider({ provider: "c", code: "insufficient_credits", message: "C is out of credits", jobId: null, at: 1_500 });
      const finished: Job[] = [];
      const signal = AbortSignal.timeout(5_000);
      const outcome = await waitAndRead(idleEngine(store), store, jobs.map((job) => job.id), {
        scope: { batchId: "batch_c" },
        onTerminal: (job) => finished.push(job),
        signal,
      });
      expect(signal.aborted).toBe(false);
      expect(outcome.counts).toEqual({ total: 6, done: 3, succeeded: 1, failed: 2, running: 0, queued: 0, blocked: 3 });
      expect(finished.map((job) => job.id).sort()).toEqual([done, failed, cancelled].sort());
      // Read whole: the job as stored, not a brief.
      expect(finished.find((job) => job.id === failed)!.error).toEqual({ code: "provider_failed", message: "no" });
      expect(outcome.jobs.find((job) => job.id === halted)!.state).toBe("queued");
    });

    it("follows the engine's own events in order, counting each state once and ignoring a copy older than what it knows; ends when the job finishes", async () => {
      const [job] = [queuedJob(0, "batch_e")];
      await store.insertJobs([job!], 1_000);
      const engine = idleEngine(store);
      const changes: Array<[string, WaitCounts]> = [];
      const terminal: string[] = [];
      const waiting = waitAndRead(engine, store, [job!.id], {
        scope: { batchId: "batch_e" },
        onChange: (update, counts) => changes.push([update.state, { ...counts }]),
        onTerminal: (update) => terminal.push(update.state),
        signal: AbortSignal.timeout(5_000),
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const submitting = (await store.transition(job!.id, { state: "queued" }, "submitting", {}, "claimed", 1_100))!;
      engine.emit("job", submitting);
      const running = (await store.transition(job!.id, { state: "submitting" }, "running", { providerJobId: "p-1" }, "accepted", 1_200))!;
      engine.emit("job", running);
      engine.emit("job", submitting);
      const succeeded = (await store.transition(job!.id, { state: "running" }, "capturing", {}, "done", 1_300))!;
      engine.emit("job", succeeded);
      const saved = (await store.transition(job!.id, { state: "capturing" }, "succeeded", {}, "saved", 1_400))!;
      engine.emit("job", saved);
      const outcome = await waiting;
      expect(changes.map(([state]) => state)).toEqual(["submitting", "running", "capturing", "succeeded"]);
      const base = { total: 1, blocked: 0 };
      expect(changes.map(([, counts]) => counts)).toEqual([
        { ...base, done: 0, succeeded: 0, failed: 0, running: 1, queued: 0 },
        { ...base, done: 0, succeeded: 0, failed: 0, running: 1, queued: 0 },
        { ...base, done: 0, succeeded: 0, failed: 0, running: 1, queued: 0 },
        { ...base, done: 1, succeeded: 1, failed: 0, running: 0, queued: 0 },
      ]);
      expect(terminal).toEqual(["succeeded"]);
      expect(outcome.counts).toEqual({ ...base, done: 1, succeeded: 1, failed: 0, running: 0, queued: 0 });
    });

    it("a provider halted while its jobs wait in the queue: they count as blocked and the wait ends without them; a job of the batch not watched here does not hold it open", async () => {
      const jobs = [queuedJob(0, "batch_h"), queuedJob(1, "batch_h"), queuedJob(2, "batch_h")];
      await store.insertJobs(jobs, 1_000);
      const watchedIds = [jobs[0]!.id, jobs[1]!.id];
      const signal = AbortSignal.timeout(10_000);
      const waiting = waitAndRead(idleEngine(store), store, watchedIds, { scope: { batchId: "batch_h" }, signal });
      await store.transition(jobs[0]!.id, { state: "queued" }, "cancelled", { error: { code: "cancelled", message: "by test" } }, "cancelled", 2_000);
      await store.haltProvider({ provider: "d", code: "insufficient_credits", message: "D is out of credits", jobId: null, at: 2_000 });
      const outcome = await waiting;
      expect(signal.aborted).toBe(false);
      expect(outcome.counts).toEqual({ total: 2, done: 1, succeeded: 0, failed: 1, running: 0, queued: 0, blocked: 1 });
      expect(outcome.jobs.map((job) => job.state).sort()).toEqual(["cancelled", "queued"]);
    });

    it("jobsInPages reads every job of more than two pages once, page by page; waitForSettlement returns once the charges settle, or what is still unsettled at its bound or when aborted", async () => {
      const jobs = Array.from({ length: 2 * JOB_PAGE + 3 }, (_, index) => queuedJob(index, "batch_p"));
      await store.insertJobs(jobs, 1_000);
      const pages: number[] = [];
      const read: string[] = [];
      for await (const page of jobsInPages(store, jobs.map((job) => job.id))) {
        pages.push(page.length);
        read.push(...page.map((job) => job.id));
      }
      expect(pages).toEqual([JOB_PAGE, JOB_PAGE, 3]);
      expect(read.sort()).toEqual(jobs.map((job) => job.id).sort());
      const exact: number[] = [];
      for await (const page of jobsInPages(store, jobs.slice(0, 2 * JOB_PAGE).map((job) => job.id))) exact.push(page.length);
      expect(exact).toEqual([JOB_PAGE, JOB_PAGE]);
      expect(chargeUnsettled({ chargeState: "unavailable" })).toBe(true);
      expect(chargeUnsettled({ chargeState: "pending" })).toBe(true);
      expect(chargeUnsettled({ chargeState: "settled" })).toBe(false);

      const [settling, settled] = [jobs[0]!.id, jobs[1]!.id];
      for (const id of [settling, settled]) {
        await store.transition(id, { state: "queued" }, "submitting", {}, "claimed", 1_100);
        await store.transition(id, { state: "submitting" }, "running", { providerJobId: `p-${id}` }, "accepted", 1_200);
        await store.transition(id, { state: "running" }, "capturing", {}, "done", 1_300);
        await store.transition(id, { state: "capturing" }, "succeeded", { chargeState: "pending", chargeSource: "awaiting the provider's settlement" }, "saved", 1_400);
      }
      const started = Date.now();
      const unsettled = await waitForSettlement(store, [settling, settled], 600);
      expect(Date.now() - started).toBeGreaterThanOrEqual(600);
      expect(unsettled.map((job) => job.id).sort()).toEqual([settling, settled].sort());

      const aborted = new AbortController();
      aborted.abort();
      expect((await waitForSettlement(store, [settling], 60_000, aborted.signal)).map((job) => job.id)).toEqual([settling]);

      setTimeout(() => void store.settleCharge(settling, { microUsd: 450_000, source: "settled by B" }, 2_000), 100);
      await store.settleCharge(settled, { microUsd: 30_000, source: "settled by B" }, 2_000);
      const before = Date.now();
      expect(await waitForSettlement(store, [settling, settled], 60_000)).toEqual([]);
      expect(Date.now() - before).toBeLessThan(5_000);
    });

    it("a change written by a process whose clock is far behind is missed by the follow, and found by the recount against the store ten seconds into the wait (by its clock)", async () => {
      const jobs = [queuedJob(0, "batch_r"), queuedJob(1, "batch_r")];
      await store.insertJobs(jobs, 100_000);
      const [early, late] = jobs.map((job) => job.id) as [string, string];
      // A writer an hour behind: its stamps fall before what the follow reads again (two seconds back).
      await store.transition(early, { state: "queued" }, "cancelled", { error: { code: "cancelled", message: "by test" } }, "cancelled", 200_000);
      // Twenty times real time: the recount's ten seconds are half a second, with a second of room on a loaded machine.
      const clock = new ScaledClock(20);
      const started = clock.now();
      const waiting = waitAndRead(idleEngine(store), store, [early, late], { scope: { batchId: "batch_r" }, clock, signal: AbortSignal.timeout(10_000) });
      await new Promise((resolve) => setTimeout(resolve, 30));
      await store.transition(late, { state: "queued" }, "cancelled", { error: { code: "cancelled", message: "by test" } }, "cancelled", 100_000 - 3_600_000);
      const outcome = await waiting;
      expect(outcome.counts).toMatchObject({ total: 2, done: 2, failed: 2, queued: 0 });
      const waited = clock.now() - started;
      expect(waited).toBeGreaterThanOrEqual(10_000);
      expect(waited).toBeLessThan(30_000);
    });

    it("counts that say done are checked against the store: an event saying finished for a job the store still has queued does not end the wait", async () => {
      const jobs = [queuedJob(0, "batch_x")];
      await store.insertJobs(jobs, 1_000);
      const engine = idleEngine(store);
      const clock = new ScaledClock(100);
      let ended = false;
      const waiting = waitAndRead(engine, store, [jobs[0]!.id], { scope: { batchId: "batch_x" }, clock, signal: AbortSignal.timeout(10_000) }).finally(() => (ended = true));
      await new Promise((resolve) => setTimeout(resolve, 30));
      const stored = (await store.getJob(jobs[0]!.id))!;
      // A copy that says cancelled while the store says queued (an event from a step whose write was lost).
      engine.emit("job", { ...stored, state: "cancelled", updatedAt: 5_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(ended).toBe(false);
      await store.transition(jobs[0]!.id, { state: "queued" }, "cancelled", { error: { code: "cancelled", message: "by test" } }, "cancelled", 6_000);
      const outcome = await waiting;
      expect(outcome.counts).toMatchObject({ total: 1, done: 1, failed: 1, queued: 0 });
      expect(outcome.jobs[0]!.state).toBe("cancelled");
    });

    it("on a clock that never moves: the engine's event for the last job ends the wait at once (a change in the same millisecond as the one before included), and its listeners are removed", async () => {
      const jobs = [queuedJob(0, "batch_k"), queuedJob(1, "batch_k")];
      await store.insertJobs(jobs, 1_000);
      const engine = idleEngine(store);
      const waiting = waitAndRead(engine, store, jobs.map((job) => job.id), { scope: { batchId: "batch_k" }, clock: stoppedClock, onChange: () => undefined });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(engine.listenerCount("job")).toBe(1);
      // Two changes of one job stamped in the same millisecond: the later one is taken, not refused as stale.
      engine.emit("job", (await store.transition(jobs[0]!.id, { state: "queued" }, "submitting", {}, "claimed", 2_000))!);
      engine.emit("job", (await store.transition(jobs[0]!.id, { state: "submitting" }, "failed", { error: { code: "provider_failed", message: "no" } }, "failed", 2_000))!);
      engine.emit("job", (await cancel(store, jobs[1]!.id, 2_000))!);
      const outcome = await waiting;
      expect(outcome.counts).toMatchObject({ total: 2, done: 2, failed: 2 });
      expect([engine.listenerCount("job"), engine.listenerCount("idle")]).toEqual([0, 0]);
    });

    it("on a clock that never moves: an idle engine makes the wait look at the store (a change made elsewhere is found), and an abort ends it at once with the counts so far", async () => {
      const jobs = [queuedJob(0, "batch_i"), queuedJob(1, "batch_i")];
      await store.insertJobs(jobs, 1_000);
      const engine = idleEngine(store);
      const waiting = waitAndRead(engine, store, [jobs[0]!.id], { scope: { batchId: "batch_i" }, clock: stoppedClock });
      await new Promise((resolve) => setTimeout(resolve, 50));
      await cancel(store, jobs[0]!.id, 2_000);
      engine.emit("idle");
      expect((await waiting).counts).toMatchObject({ total: 1, done: 1 });

      const aborting = new AbortController();
      const aborted = waitAndRead(engine, store, [jobs[1]!.id], { scope: { jobIds: [jobs[1]!.id] }, clock: stoppedClock, signal: aborting.signal });
      await new Promise((resolve) => setTimeout(resolve, 50));
      aborting.abort();
      expect((await aborted).counts).toMatchObject({ total: 1, done: 0, queued: 1 });
    });

    it("on a clock that never moves: an engine idle again and again makes the wait look at the store until a look finds nothing new, then not until a look on time (a busy batch goes idle many times a second)", async () => {
      const jobs = [queuedJob(0, "batch_n"), queuedJob(1, "batch_n"), queuedJob(2, "batch_n")];
      await store.insertJobs(jobs, 1_000);
      const engine = idleEngine(store);
      const looks = vi.spyOn(store, "changedBriefs");
      const settle = () => new Promise((resolve) => setTimeout(resolve, 30));
      const waiting = waitAndRead(engine, store, jobs.map((job) => job.id), { scope: { batchId: "batch_n" }, clock: stoppedClock });
      await settle();
      // A change made elsewhere: the idle's look finds it, so the next idle looks again.
      await cancel(store, jobs[0]!.id, 2_000);
      engine.emit("idle");
      await settle();
      expect(looks).toHaveBeenCalledTimes(1);
      engine.emit("idle");
      await settle();
      expect(looks).toHaveBeenCalledTimes(2);
      // That look found nothing new: idles no longer make the wait look.
      for (let idle = 0; idle < 5; idle++) {
        engine.emit("idle");
        await settle();
      }
      expect(looks).toHaveBeenCalledTimes(2);
      // An engine event still counts at once, and ends the wait.
      engine.emit("job", (await cancel(store, jobs[1]!.id, 2_100))!);
      engine.emit("job", (await cancel(store, jobs[2]!.id, 2_200))!);
      expect((await waiting).counts).toMatchObject({ total: 3, done: 3 });
      looks.mockRestore();
    });

    it("on a clock that never moves: a provider halted before the wait starts leaves its queued jobs blocked, and the wait ends at once; counts keep running, queued and halted apart", async () => {
      const jobs = [queuedJob(0, "batch_q"), queuedJob(1, "batch_q"), { ...queuedJob(2, "batch_q"), provider: "c" as const, model: "c-model" }];
      await store.insertJobs(jobs, 1_000);
      await store.haltProvider({ provider: "c", code: "insufficient_credits", message: "C is out of credits", jobId: null, at: 1_500 });
      const engine = idleEngine(store);
      const changes: WaitCounts[] = [];
      const waiting = waitAndRead(engine, store, jobs.map((job) => job.id), { scope: { batchId: "batch_q" }, clock: stoppedClock, onChange: (_job, counts) => changes.push({ ...counts }) });
      await new Promise((resolve) => setTimeout(resolve, 50));
      engine.emit("job", (await store.transition(jobs[0]!.id, { state: "queued" }, "submitting", {}, "claimed", 2_000))!);
      engine.emit("job", (await cancel(store, jobs[1]!.id, 2_100))!);
      engine.emit("job", (await store.transition(jobs[0]!.id, { state: "submitting" }, "failed", { error: { code: "provider_failed", message: "no" } }, "failed", 2_200))!);
      const outcome = await waiting;
      const base = { total: 3, succeeded: 0, blocked: 1 };
      expect(changes).toEqual([
        { ...base, done: 0, failed: 0, running: 1, queued: 1 },
        { ...base, done: 1, failed: 1, running: 1, queued: 0 },
        { ...base, done: 2, failed: 2, running: 0, queued: 0 },
      ]);
      expect(outcome.counts).toEqual({ ...base, done: 2, failed: 2, running: 0, queued: 0 });
    });

    it("a batch that holds a job not watched here (an edited file run again) is followed by the watched ids: the wait ends when they end, the other still queued", async () => {
      const jobs = [queuedJob(0, "batch_u"), queuedJob(1, "batch_u")];
      await store.insertJobs(jobs, 1_000);
      const signal = AbortSignal.timeout(10_000);
      const waiting = waitAndRead(idleEngine(store), store, [jobs[0]!.id], { scope: { batchId: "batch_u" }, signal });
      await cancel(store, jobs[0]!.id, 2_000);
      const outcome = await waiting;
      expect(signal.aborted).toBe(false);
      expect(outcome.counts).toMatchObject({ total: 1, done: 1 });
      expect((await store.getJob(jobs[1]!.id))!.state).toBe("queued");
    });

    it("changes made elsewhere are handed over in the order they were made, not the order the jobs were created", async () => {
      const jobs = [queuedJob(0, "batch_o"), queuedJob(1, "batch_o"), queuedJob(2, "batch_o")];
      await store.insertJobs(jobs, 1_000);
      const order: string[] = [];
      const waiting = waitAndRead(idleEngine(store), store, jobs.map((job) => job.id), {
        scope: { batchId: "batch_o" },
        onChange: (job) => order.push(job.id),
        signal: AbortSignal.timeout(10_000),
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      await cancel(store, jobs[2]!.id, 2_000);
      await cancel(store, jobs[0]!.id, 2_100);
      await cancel(store, jobs[1]!.id, 2_200);
      await waiting;
      expect(order).toEqual([jobs[2]!.id, jobs[0]!.id, jobs[1]!.id]);
    });

    it("a store that fails with no one listening for its errors is waited for all the same", async () => {
      const jobs = [queuedJob(0, "batch_n")];
      await store.insertJobs(jobs, 1_000);
      const { store: flaky, failed } = failingStore(store, 2, { fails: (method) => method !== "transition", message: "Connection terminated unexpectedly" });
      const waiting = waitAndRead(idleEngine(store), flaky, [jobs[0]!.id], { scope: { batchId: "batch_n" }, signal: AbortSignal.timeout(30_000) });
      await cancel(store, jobs[0]!.id, 2_000);
      expect((await waiting).jobs[0]!.state).toBe("cancelled");
      expect(failed()).toBe(2);
    }, 60_000);

    it("a store that stops answering is waited for and reported, not thrown: the wait ends once it answers again", async () => {
      const jobs = [queuedJob(0, "batch_s")];
      await store.insertJobs(jobs, 1_000);
      const errors: string[] = [];
      // The store fails its next reads (as while a database restarts), then answers again.
      const { store: flaky } = failingStore(store, 3, { fails: (method) => method !== "transition", message: "Connection terminated unexpectedly" });
      const waiting = waitAndRead(idleEngine(store), flaky, [jobs[0]!.id], {
        scope: { batchId: "batch_s" },
        onStoreError: (message) => errors.push(message),
        signal: AbortSignal.timeout(30_000),
      });
      await store.transition(jobs[0]!.id, { state: "queued" }, "cancelled", { error: { code: "cancelled", message: "by test" } }, "cancelled", 2_000);
      const outcome = await waiting;
      expect(outcome.jobs[0]!.state).toBe("cancelled");
      expect(errors).toEqual(["Connection terminated unexpectedly", "Connection terminated unexpectedly", "Connection terminated unexpectedly"]);
    }, 60_000);
  });
}

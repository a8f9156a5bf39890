import { afterEach, describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { systemClock } from "../../src/core/clock.js";
import { cancelPastDeadline } from "../../src/engine/deadlines.js";
import { createLogger } from "../../src/engine/logger.js";
import type { Store } from "../../src/store/store.js";
import { startDWorld, type DWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { newDJob, storeFactories } from "../helpers/stores.js";
import { untilJob } from "../helpers/until.js";

/**
 * Deadlines (issue 37, part 2): a job not sent when its deadline
 * (`cancel_after_s`) passes ends `cancelled`, error `deadline`, and nothing
 * is sent. The engine finds them by the index of deadlines, even at a
 * provider that claims nothing (halted), on both stores.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(kind: (typeof storeFactories)[number]): Promise<{ world: DWorld; store: Store }> {
  const world = await startDWorld({ renderTimeMs: 100 });
  cleanups.push(() => world.close());
  const opened = await kind.open();
  cleanups.push(opened.cleanup);
  return { world, store: opened.store };
}

for (const kind of storeFactories) {
  describe(`deadlines on ${kind.name} (real sandbox D)`, () => {
    it("queued jobs past their deadline are cancelled unsent (error deadline, the reason saying when), at a halted provider too; one with time left stays queued", async () => {
      const { world, store } = await open(kind);
      const now = Date.now();
      await store.haltProvider({ provider: "d", code: "out_of_credits", message: "D has no credits", jobId: null, at: now });
      await store.insertJobs([newDJob("late-1", { deadlineAt: now - 1_000 }), newDJob("late-2", { deadlineAt: now - 1 }), newDJob("later", { deadlineAt: now + 3_600_000 }), newDJob("never")], now);
      const worker = engineFor(world, store);
      cleanups.push(() => worker.engine.stop());
      worker.engine.start();
      for (const ref of ["late-1", "late-2"]) {
        const ended = await untilJob(worker.engine, store, `job_${ref}`, (job) => job.state === "cancelled");
        expect(ended.error).toMatchObject({ code: "deadline" });
        expect(ended.reason).toMatch(/^its deadline \(\d{4}-\d\d-\d\dT[\d:.]+Z\) passed before it was sent; nothing was sent or charged$/);
        expect((await store.events(ended.id)).at(-1)).toMatchObject({ fromState: "queued", toState: "cancelled" });
      }
      expect((await store.getJob("job_later"))!.state).toBe("queued");
      expect((await store.getJob("job_later"))!.deadlineAt).toBe(now + 3_600_000);
      expect((await store.getJob("job_never"))!.deadlineAt).toBeNull();
      expect(world.submits()).toBe(0);
    });

    it("a job with time left runs as any other; one queued past its deadline behind a busy provider is never sent", async () => {
      const { world, store } = await open(kind);
      const now = Date.now();
      await store.insertJobs([newDJob("in-time", { deadlineAt: now + 600_000 }), newDJob("too-late", { deadlineAt: now - 1 })], now);
      const worker = engineFor(world, store);
      cleanups.push(() => worker.engine.stop());
      worker.engine.start();
      await untilJob(worker.engine, store, "job_in-time", (job) => job.state === "succeeded");
      expect((await untilJob(worker.engine, store, "job_too-late", (job) => job.state === "cancelled")).error?.code).toBe("deadline");
      expect(world.submits()).toBe(1);
    });

    it("a job whose deadline passes between its claim and its send is cancelled, not sent: submitting → cancelled, error deadline, the deadline in the event's detail", async () => {
      const { world, store } = await open(kind);
      // The engine's clock jumps two minutes the moment the job is claimed: its deadline (one minute) passed after
      // the loop's look at the queue's deadlines, before the send.
      let offset = 0;
      const clock = { now: () => Date.now() + offset, sleep: systemClock.sleep };
      const jumping = new Proxy(store, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver) as unknown;
          if (property !== "claimForSubmit") return typeof value === "function" ? value.bind(target) : value;
          return async (...args: Parameters<Store["claimForSubmit"]>) => {
            const result = await target.claimForSubmit(...args);
            if (result.kind === "claimed") offset = 120_000;
            return result;
          };
        },
      });
      await store.insertJobs([newDJob("claimed-late", { deadlineAt: Date.now() + 60_000 })], Date.now());
      const worker = engineFor(world, jumping, { clock });
      cleanups.push(() => worker.engine.stop());
      worker.engine.start();
      const ended = await untilJob(worker.engine, store, "job_claimed-late", (job) => job.state === "cancelled");
      expect(ended.error).toEqual({ code: "deadline", message: expect.stringMatching(/^its deadline \(\d{4}-\d\d-\d\dT[\d:.]+Z\) passed before it was sent; nothing was sent or charged$/) });
      expect(ended.leaseOwner).toBeNull();
      const last = (await store.events(ended.id)).at(-1)!;
      expect(last).toMatchObject({ fromState: "submitting", toState: "cancelled", detail: { deadline_at: new Date(ended.deadlineAt!).toISOString() } });
      expect(world.submits()).toBe(0);
      expect(await store.poolStatus()).toEqual([expect.objectContaining({ key: "d:account", held: 0 })]);
    });

    it("one look cancels every job past its deadline, a page of 200 after another, tells of each, and logs how many once; a look that finds none logs nothing", async () => {
      const { store } = await open(kind);
      const now = Date.now();
      await store.insertJobs(Array.from({ length: 201 }, (_, index) => newDJob(`late-${index}`, { deadlineAt: now - 1_000 - index })), now - 5_000);
      await store.insertJobs([newDJob("in-time", { deadlineAt: now + 60_000 })], now - 5_000);
      const lines: string[] = [];
      const log = createLogger({ level: "info", secrets: () => [], destination: new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) }) });
      const emitted: string[] = [];
      const parts = { store, clock: systemClock, log, scope: () => null, emit: (job: { id: string; state: string }) => emitted.push(`${job.id}:${job.state}`) };
      expect(await cancelPastDeadline(parts, now)).toBe(201);
      expect(emitted).toHaveLength(201);
      expect(new Set(emitted)).toEqual(new Set(Array.from({ length: 201 }, (_, index) => `job_late-${index}:cancelled`)));
      expect((await store.listJobs({ states: ["cancelled"] })).length).toBe(201);
      expect((await store.getJob("job_in-time"))!.state).toBe("queued");
      const logged = lines.map((line) => JSON.parse(line) as { level: number; msg: string; cancelled?: number });
      expect(logged).toEqual([expect.objectContaining({ level: 30, cancelled: 201, msg: "jobs past their deadline cancelled before they were sent" })]);
      expect(await cancelPastDeadline(parts, now)).toBe(0);
      expect(lines).toHaveLength(1);
    });

    it("the store reads past-deadline jobs as one range, earliest first, a page at a time, only queued ones, only a scope's when given", async () => {
      const { store } = await open(kind);
      const now = 1_000_000;
      await store.insertJobs([newDJob("c", { deadlineAt: 300 }), newDJob("a", { deadlineAt: 100, batchId: "b1" }), newDJob("b", { deadlineAt: 200, batchId: "b1" }), newDJob("future", { deadlineAt: now + 1 })], 0);
      expect((await store.queuedPastDeadline(now, 10)).map((job) => job.ref)).toEqual(["a", "b", "c"]);
      expect((await store.queuedPastDeadline(now, 2)).map((job) => job.ref)).toEqual(["a", "b"]);
      expect((await store.queuedPastDeadline(200, 10)).map((job) => job.ref)).toEqual(["a", "b"]);
      expect((await store.queuedPastDeadline(now, 10, { batchId: "b1" })).map((job) => job.ref)).toEqual(["a", "b"]);
      expect((await store.queuedPastDeadline(now, 10, { jobIds: ["job_c"] })).map((job) => job.ref)).toEqual(["c"]);
      await store.transition("job_a", { state: "queued" }, "cancelled", {}, "cancelled", 1);
      expect((await store.queuedPastDeadline(now, 10)).map((job) => job.ref)).toEqual(["b", "c"]);
    });
  });
}

describe("a job accepted when its deadline passes (virtual time ×20)", () => {
  it("E publishes a cancel: the job is cancelled there and here (error deadline); A publishes none: it runs to its end, is saved, and its view says deadline_missed", async () => {
    const { createAllEmulators } = await import("../../src/sandbox/all.js");
    const { startWorld, worldEngine } = await import("../helpers/world.js");
    const { openStore } = await import("../../src/store/open.js");
    const { apiJob } = await import("../../src/app/job-view.js");
    const emulators = createAllEmulators({ e: { renderMs: 3_600_000 }, a: { queueMs: 0, renderMs: { min: 120_000, max: 120_000 } } });
    const world = await startWorld(emulators.list, { timeScale: 20 });
    cleanups.push(() => world.close());
    const store = await openStore(world.env.MEDIAGATE_STORE!);
    cleanups.push(() => store.close());
    const { engine, enqueue } = worldEngine(world, store, { virtualTime: true });
    cleanups.push(() => engine.stop());
    const now = world.sandbox.clock.now();
    const atE = await enqueue({ provider: "e", model: "v3", input: { prompt: "a slow harbour" } }, "e-deadline", { deadlineAt: now + 60_000 });
    const atA = await enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "a slow field", duration: 5, resolution: "480p" } }, "a-deadline", { deadlineAt: now + 60_000 });
    engine.start();
    const cancelled = await untilJob(engine, store, atE.id, (job) => job.state === "cancelled", 60_000);
    expect(cancelled.providerJobId).not.toBeNull();
    expect(cancelled.error).toMatchObject({ code: "deadline" });
    expect(cancelled.reason).toMatch(/passed while it ran at the provider: cancelled at E$/);
    expect(emulators.e.jobs()[0]!.cancelledAt).toBeDefined();
    const finished = await untilJob(engine, store, atA.id, (job) => job.state === "succeeded", 60_000);
    expect(finished.finishedAt!).toBeGreaterThan(finished.deadlineAt!);
    expect(apiJob(finished, [], null)).toMatchObject({ deadline_missed: true });
    expect(apiJob(cancelled, [], null)).toMatchObject({ deadline_missed: false });
  }, 120_000);
});

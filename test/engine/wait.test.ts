import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config.js";
import type { Job } from "../../src/core/job.js";
import { Engine } from "../../src/engine/engine.js";
import type { WaitCounts } from "../../src/engine/wait.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import type { NewJob, Store } from "../../src/store/store.js";
import { freshStoreEachTest, storeFactories } from "../helpers/stores.js";
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

    it("a store that stops answering is waited for and reported, not thrown: the wait ends once it answers again", async () => {
      const jobs = [queuedJob(0, "batch_s")];
      await store.insertJobs(jobs, 1_000);
      const errors: string[] = [];
      let failing = 3;
      // The store fails its next reads (as while a database restarts), then answers again.
      const flaky = new Proxy(store, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver) as unknown;
          if (typeof value !== "function") return value;
          return (...args: unknown[]) => {
            if (property !== "transition" && failing > 0) {
              failing--;
              return Promise.reject(new Error("Connection terminated unexpectedly"));
            }
            return (value as (...parameters: unknown[]) => unknown).apply(target, args);
          };
        },
      });
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

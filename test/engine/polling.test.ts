import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PollScheduler } from "../../src/engine/polling.js";
import type { ProviderLimits } from "../../src/providers/adapter.js";
import type { Store } from "../../src/store/store.js";
import { storeFactories } from "../helpers/stores.js";

const job = { provider: "d" as const, model: "gen-2-pro" };
/** Only the poll pace matters to the scheduler. */
function pace(minIntervalMs: number, maxIntervalMs: number): ProviderLimits {
  return { rateWindows: [], slotPools: [], poll: { minIntervalMs, maxIntervalMs }, trackingDeadlineMs: 3_600_000, idempotentSubmit: false };
}
const wide = pace(250, 120_000);

for (const factory of storeFactories) {
  describe(`adaptive polling (${factory.name})`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ store, cleanup } = await factory.open());
    });
    afterEach(async () => {
      await cleanup();
    });

    it("with nothing learned, the first poll comes after a second and the interval stretches slowly with the job's age, within the provider's pace", async () => {
      const polls = new PollScheduler(store);
      expect(await polls.nextDelay(job, 0, wide)).toBe(1_000);
      expect(await polls.nextDelay(job, 20_000, wide)).toBe(3_000);
      expect(await polls.nextDelay(job, 100_000, wide)).toBe(15_000);
      // C's pace: every 3 to 5 s, whatever the age.
      expect(await polls.nextDelay(job, 0, pace(3_000, 5_000))).toBe(3_000);
      expect(await polls.nextDelay(job, 100_000, pace(3_000, 5_000))).toBe(5_000);
    });

    it("with render times learned, the first poll lands just before the earliest expected finish, polls come often through the expected window, then back off", async () => {
      const polls = new PollScheduler(store);
      // Ten jobs seen done at 10 s … 19 s: the 10th percentile is 10.9 s, the median 14.5 s, the 90th 18.1 s.
      for (let second = 10; second < 20; second++) polls.record("d", "gen-2-pro", { doneElapsedMs: second * 1_000, pendingElapsedMs: null });
      expect(await polls.nextDelay(job, 0, wide)).toBe(Math.round(10_900 * 0.95));
      expect(await polls.nextDelay(job, 4_000, wide)).toBe(Math.round(10_900 * 0.95) - 4_000);
      expect(await polls.nextDelay(job, 12_000, wide)).toBe(580);
      expect(await polls.nextDelay(job, 28_000, wide)).toBe(580);
      expect(await polls.nextDelay(job, 30_000, wide)).toBe(6_000);
      // Never outside the provider's pace.
      expect(await polls.nextDelay(job, 0, pace(1_000, 5_000))).toBe(5_000);
      expect(await polls.nextDelay(job, 12_000, pace(1_000, 5_000))).toBe(1_000);
      // Another model has learned nothing.
      expect(await polls.nextDelay({ provider: "d", model: "gen-2-max" }, 0, wide)).toBe(1_000);
    });

    it("a finished job's render time is taken as the middle of its last pending poll and the poll that saw it done", async () => {
      const polls = new PollScheduler(store);
      polls.record("d", "gen-2-pro", { doneElapsedMs: 12_000, pendingElapsedMs: 8_000 });
      expect(await polls.nextDelay(job, 0, wide)).toBe(9_500);
      const unbracketed = new PollScheduler(store);
      // A pending poll later than the done one cannot bracket anything: the done time is used.
      unbracketed.record("d", "gen-2-pro", { doneElapsedMs: 12_000, pendingElapsedMs: 13_000 });
      expect(await unbracketed.nextDelay(job, 0, wide)).toBe(11_400);
    });

    it("only the 50 most recent render times count", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 50; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 100_000, pendingElapsedMs: null });
      expect(await polls.nextDelay(job, 0, wide)).toBe(95_000);
      for (let index = 0; index < 50; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 10_000, pendingElapsedMs: null });
      expect(await polls.nextDelay(job, 0, wide)).toBe(9_500);
      // No 100 s job is left among the latest: at 17 s the job is late and polled less often.
      expect(await polls.nextDelay(job, 17_000, wide)).toBe(3_400);
    });

    it("a new scheduler learns from the finished jobs in the store (another engine's, an earlier run's), of that provider and model only", async () => {
      const finished = [
        { ref: "a", model: "gen-2-pro", submittedAt: 1_000, providerDoneAt: 21_000, lastPendingElapsedMs: 18_000 },
        { ref: "b", model: "gen-2-pro", submittedAt: 2_000, providerDoneAt: 22_000, lastPendingElapsedMs: 18_000 },
        { ref: "c", model: "gen-2-max", submittedAt: 2_000, providerDoneAt: 5_000, lastPendingElapsedMs: null },
      ];
      for (const row of finished) {
        await store.insertJobs(
          [{ id: `job_${row.ref}`, ref: row.ref, batchId: null, provider: "d", model: row.model, operation: null, body: {}, facts: {}, warnings: [], estimateMicroUsd: null, estimateSource: "test", outDir: "/tmp/out" }],
          0,
        );
        await store.updateJob(`job_${row.ref}`, { state: "queued" }, { submittedAt: row.submittedAt, providerDoneAt: row.providerDoneAt, lastPendingElapsedMs: row.lastPendingElapsedMs }, row.providerDoneAt);
      }
      const polls = new PollScheduler(store);
      // Both gen-2-pro jobs took 19 s (the middle of 18 s pending and 20 s done).
      expect(await polls.nextDelay(job, 0, wide)).toBe(Math.round(19_000 * 0.95));
      expect(await polls.nextDelay({ provider: "d", model: "gen-2-max" }, 0, wide)).toBe(2_850);
      expect(await polls.nextDelay({ provider: "c", model: "gen-2-pro" }, 0, wide)).toBe(1_000);
    });

    it("a fixed interval replaces the learned schedule, still within the provider's pace", async () => {
      const polls = new PollScheduler(store, 2_000);
      polls.record("d", "gen-2-pro", { doneElapsedMs: 60_000, pendingElapsedMs: null });
      expect(await polls.nextDelay(job, 0, wide)).toBe(2_000);
      expect(await polls.nextDelay(job, 500_000, wide)).toBe(2_000);
      expect(await polls.nextDelay(job, 0, pace(3_000, 5_000))).toBe(3_000);
      expect(await new PollScheduler(store, 10_000).nextDelay(job, 0, pace(3_000, 5_000))).toBe(5_000);
    });
  });
}

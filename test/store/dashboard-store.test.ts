import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { freshStoreEachTest, newDJob, storeFactories } from "../helpers/stores.js";

const DAY = 86_400_000;
/** Midnight UTC, so that T0 + n days is the start of a day. */
const T0 = Math.floor(1_800_000_000_000 / DAY) * DAY;

for (const factory of storeFactories) {
  describe(`what the dashboard reads from the store (${factory.name})`, () => {
    let store: Store;
    freshStoreEachTest(factory, (opened) => (store = opened));

    /** Runs a queued job to succeeded with its charge in the ledger at `at`. */
    async function charge(id: string, microUsd: number, at: number) {
      await store.claimForSubmit(id, "mg:test:1:a", [], at - 3, 60_000);
      await store.transition(id, { state: "submitting" }, "running", { providerJobId: `p_${id}` }, "accepted", at - 2);
      await store.transition(id, { state: "running" }, "capturing", {}, "done", at - 1);
      await store.transition(id, { state: "capturing" }, "succeeded", { chargeMicroUsd: microUsd, chargeState: "computed" }, "saved", at, undefined, { ledger: { microUsd, source: "test" } });
    }

    it("spendByDay: the ledger's charges by the UTC day they were made beside the estimates of the jobs created that day, by provider; one token's only when given", async () => {
      await store.insertJobs([newDJob("d1", { tokenId: "tok_a" }), newDJob("c1", { provider: "c", model: "v6", estimateMicroUsd: 100_000, tokenId: "tok_b" })], T0 + 1_000);
      // Issue 36, finding 5: an unpriced job is counted as such, never as $0.
      await store.insertJobs([newDJob("e1", { provider: "e", model: "v3", estimateMicroUsd: null, tokenId: "tok_b" })], T0 + 1_500);
      await store.insertJobs([newDJob("d2", { tokenId: "tok_a", estimateMicroUsd: 70_000 })], T0 + DAY + 5);
      // d1 is created on day 0 and charged on day 1: its estimate counts on day 0, its charge on day 1.
      await charge("job_d1", 28_000, T0 + DAY + 10);
      await charge("job_d2", 70_000, T0 + DAY + 20);
      await charge("job_c1", 90_000, T0 + 2_000);
      expect(await store.spendByDay(T0, T0 + 3 * DAY)).toEqual([
        { day: T0, provider: "c", settledMicroUsd: 90_000, estimatedMicroUsd: 100_000, unpricedJobs: 0 },
        { day: T0, provider: "d", settledMicroUsd: 0, estimatedMicroUsd: 30_000, unpricedJobs: 0 },
        { day: T0, provider: "e", settledMicroUsd: 0, estimatedMicroUsd: 0, unpricedJobs: 1 },
        { day: T0 + DAY, provider: "d", settledMicroUsd: 98_000, estimatedMicroUsd: 70_000, unpricedJobs: 0 },
      ]);
      expect(await store.spendByDay(T0, T0 + 3 * DAY, "tok_a")).toEqual([
        { day: T0, provider: "d", settledMicroUsd: 0, estimatedMicroUsd: 30_000, unpricedJobs: 0 },
        { day: T0 + DAY, provider: "d", settledMicroUsd: 98_000, estimatedMicroUsd: 70_000, unpricedJobs: 0 },
      ]);
      // `to` is exclusive; days outside the range are not read.
      expect(await store.spendByDay(T0 + DAY, T0 + DAY + 15)).toEqual([{ day: T0 + DAY, provider: "d", settledMicroUsd: 28_000, estimatedMicroUsd: 70_000, unpricedJobs: 0 }]);
      expect(await store.spendByDay(T0 + 2 * DAY, T0 + 3 * DAY)).toEqual([]);
    });

    it("rateWindowUsage counts what takeRateToken counts: answered requests for a window after their answer, unanswered ones until they expire; other windows apart", async () => {
      const window = { key: "f:account", limit: 3, windowMs: 60_000 };
      const other = { key: "a:standard", limit: 10, windowMs: 60_000 };
      const first = await store.takeRateToken([window], T0);
      const second = await store.takeRateToken([window], T0 + 1_000);
      await store.takeRateToken([other], T0 + 1_000);
      if (!first.granted || !second.granted) throw new Error("the window had room");
      await store.answerRateToken(first.token, T0 + 2_000);
      expect(await store.rateWindowUsage([window, other], T0 + 10_000)).toEqual([
        { key: "f:account", used: 2, limit: 3, windowMs: 60_000 },
        { key: "a:standard", used: 1, limit: 10, windowMs: 60_000 },
      ]);
      // A window after its answer the first no longer counts; the unanswered second still does (it may be in flight).
      expect((await store.rateWindowUsage([window], T0 + 62_001))[0]!.used).toBe(1);
      expect((await store.rateWindowUsage([window], T0 + 1_000 + 150_001))[0]!.used).toBe(0);
      expect(await store.rateWindowUsage([], T0)).toEqual([]);
    });
  });
}

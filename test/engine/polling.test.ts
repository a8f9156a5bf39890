import { describe, expect, it } from "vitest";
import { PollScheduler } from "../../src/engine/polling.js";
import type { ProviderLimits } from "../../src/providers/adapter.js";
import type { Store } from "../../src/store/store.js";
import { freshStoreEachTest, storeFactories } from "../helpers/stores.js";

const job = { provider: "d" as const, model: "gen-2-pro" };
/** Only the poll pace matters to the scheduler. */
function pace(minIntervalMs: number, maxIntervalMs: number): ProviderLimits {
  return { rateWindows: [], slotPools: [], poll: { minIntervalMs, maxIntervalMs }, trackingDeadlineMs: 3_600_000, idempotentSubmit: false };
}
const wide = pace(250, 120_000);

for (const factory of storeFactories) {
  describe(`adaptive polling (${factory.name})`, () => {
    let store: Store;
    freshStoreEachTest(factory, (opened) => (store = opened));

    it("with nothing learned, the first poll comes after half a second, then the interval stretches slowly with the job's age, within the provider's pace", async () => {
      const polls = new PollScheduler(store);
      expect(await polls.firstDelay({ ...job, id: "job_1" }, wide)).toBe(500);
      expect(await polls.nextDelay(job, 500, wide)).toBe(250);
      expect(await polls.nextDelay(job, 20_000, wide)).toBe(3_000);
      expect(await polls.nextDelay(job, 100_000, wide)).toBe(15_000);
      // C's pace: every 3 to 5 s, whatever the age.
      expect(await polls.firstDelay({ ...job, id: "job_2" }, pace(3_000, 5_000))).toBe(3_000);
      expect(await polls.nextDelay(job, 100_000, pace(3_000, 5_000))).toBe(5_000);
    });

    it("with render times spread wider than the poll pace, the first poll lands where the expected lag is least, polls come often through the expected window, then back off", async () => {
      const polls = new PollScheduler(store);
      // Ten jobs seen done at 10 s … 19 s (each pending a moment before: times known closely, and too far apart for one
      // render time): polling every 580 ms (4% of the 14.5 s median), the least lag is a first poll at 10 s.
      for (let second = 10; second < 20; second++) polls.record("d", "gen-2-pro", { doneElapsedMs: second * 1_000, pendingElapsedMs: second * 1_000 });
      expect(await polls.firstDelay({ ...job, id: "job_1" }, wide)).toBe(10_000);
      // A job pending before the expected window (a first poll moved early) is polled at the cadence, or at the window if sooner.
      expect(await polls.nextDelay(job, 4_000, wide)).toBe(580);
      expect(await polls.nextDelay(job, 10_000, wide)).toBe(Math.round(10_900 * 0.95) - 10_000);
      expect(await polls.nextDelay(job, 12_000, wide)).toBe(580);
      expect(await polls.nextDelay(job, 28_000, wide)).toBe(580);
      expect(await polls.nextDelay(job, 30_000, wide)).toBe(6_000);
      // Never outside the provider's pace.
      expect(await polls.firstDelay({ ...job, id: "job_2" }, pace(1_000, 5_000))).toBe(10_000);
      expect(await polls.nextDelay(job, 12_000, pace(1_000, 5_000))).toBe(1_000);
      // Another model has learned nothing.
      expect(await polls.firstDelay({ provider: "d", model: "gen-2-max", id: "job_3" }, wide)).toBe(500);
    });

    it("render times spread 0.5–2 s, 1,000 jobs one after another: the first poll settles where about one job in eleven is done and stays there (a job found done at its first poll says only that it was done by then, not when), so the mean lag stays near half the 250 ms pace", async () => {
      const polls = new PollScheduler(store);
      const runs = await simulateSpread(polls, 1_000, seeded(7));
      const learned = runs.slice(300);
      // A first poll at the least-lag point of U(0.5 s, 2 s) polled every 250 ms finds about 8% done: at about 0.62 s.
      expect(mean(learned.map((run) => (run.doneAtFirst ? 1 : 0)))).toBeGreaterThan(0.03);
      expect(mean(learned.map((run) => (run.doneAtFirst ? 1 : 0)))).toBeLessThan(0.2);
      expect(mean(learned.map((run) => run.firstMs))).toBeLessThan(750);
      // No drift: every hundred jobs after the first 300 has its first polls between 0.5 and 0.8 s on average.
      for (let from = 300; from < 1_000; from += 100) {
        const firstMs = mean(runs.slice(from, from + 100).map((run) => run.firstMs));
        expect(firstMs, `jobs ${from}–${from + 99}`).toBeGreaterThan(500);
        expect(firstMs, `jobs ${from}–${from + 99}`).toBeLessThan(800);
      }
      // Polled every 250 ms from there: the lag is about half that, for about four polls a job (a first poll that
      // drifted to 1.2 s, as learned render times put it, had two jobs in three found done there and lags near 230 ms).
      expect(mean(learned.map((run) => run.lagMs))).toBeLessThan(150);
      expect(mean(learned.map((run) => run.polls))).toBeLessThan(4.5);
    });

    it("a first poll placed late by what was learned (jobs found done at 1.1–1.3 s, the drift of learned render times) comes down to where lag is least by the answers of first and second polls; placed early, it goes up", async () => {
      const late = new PollScheduler(store);
      for (let index = 0; index < 30; index++) late.record("d", "gen-2-pro", { doneElapsedMs: 1_100 + index * 7, pendingElapsedMs: null });
      for (let index = 0; index < 20; index++) late.record("d", "gen-2-pro", { doneElapsedMs: 1_350 + index * 30, pendingElapsedMs: 1_100 + index * 30 });
      const fromLate = await simulateSpread(late, 600, seeded(11));
      expect(fromLate[0]!.firstMs).toBeGreaterThanOrEqual(1_000);
      expect(mean(fromLate.slice(300).map((run) => run.firstMs))).toBeLessThan(800);
      expect(mean(fromLate.slice(300).map((run) => run.lagMs))).toBeLessThan(150);
      // Jobs of 1.5–2 s learned from polls 100 ms before them, first polls found pending for long: up from below.
      const early = new PollScheduler(store);
      for (let index = 0; index < 50; index++) early.record("d", "gen-2-pro", { doneElapsedMs: 300 + index * 34, pendingElapsedMs: 200 + index * 34 });
      const fromEarly = await simulateSpread(early, 600, seeded(13), { minMs: 1_500, maxMs: 2_000 });
      expect(fromEarly[0]!.firstMs).toBeLessThan(1_000);
      expect(mean(fromEarly.slice(300).map((run) => run.firstMs))).toBeGreaterThan(1_400);
    });

    it("with a fixed render time, the first poll comes where jobs were found done; probes find how much earlier it can come, and a job found pending there moves it later", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      const first = async (id: string) => polls.firstDelay({ ...job, id }, wide);
      // The first planned poll probes 5% earlier; the others wait at the safe 6 s until it is answered.
      expect(await first("probe_1")).toBe(5_700);
      expect(await first("job_1")).toBe(6_000);
      // Done at 5.7 s: that is the safe delay now, and the next probe reaches 1.5 times further.
      polls.answered("probe_1", false, 0);
      for (let index = 2; index < 9; index++) expect(await first(`job_${index}`)).toBe(5_700);
      expect(await first("probe_2")).toBe(5_700 - 450);
      // Pending at 5.25 s: the safe delay stays, the next probe comes half as far below it.
      polls.answered("probe_2", true, 0);
      for (let index = 9; index < 16; index++) expect(await first(`job_${index}`)).toBe(5_700);
      expect(await first("probe_3")).toBe(5_700 - 225);
      // A job planned at the safe delay found pending: the safe delay moves past that poll (by 1%).
      polls.answered("job_9", true, 0);
      expect(await first("job_16")).toBe(5_757);
      // Later answers of a job teach nothing more (only its first poll was planned).
      polls.answered("job_9", false, 0);
      expect(await first("job_17")).toBe(5_757);
    });

    it("a probe whose job is never answered (cancelled, taken over) does not stop probing: after the re-probe count, probes come again", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      const first = async (id: string) => polls.firstDelay({ ...job, id }, wide);
      expect(await first("lost_probe")).toBe(5_700);
      // Never answered. Without a limit, every later first poll would wait at the safe 6 s for good.
      const delays: number[] = [];
      for (let index = 0; index < 600; index++) delays.push(await first(`job_${index}`));
      expect(delays.filter((delay) => delay < 6_000).length).toBeGreaterThan(0);
      expect(delays.indexOf(5_700)).toBeLessThanOrEqual(256);
    });

    it("what is learned is when a poll went out: a probe that left late lowers the first poll only to its send time, and a job planned before a raise teaches nothing when done", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      const first = async (id: string) => polls.firstDelay({ ...job, id }, wide);
      expect(await first("probe_1")).toBe(5_700);
      expect(await first("old_plan")).toBe(6_000);
      // Planned at 5.7 s, sent at 5.9 s by a busy loop, found done: only 5.9 s is known to be enough.
      polls.answered("probe_1", false, 5_900);
      expect(await first("job_1")).toBe(5_900);
      polls.answered("job_1", true, 5_900);
      expect(await first("job_2")).toBe(5_959);
      // Planned at 6 s before the safe delay came down and went up again: its answer changes nothing.
      polls.answered("old_plan", false, 6_000);
      expect(await first("job_3")).toBe(5_959);
    });

    it("a probe found done lowers the first poll only to its time since the submit was sent, not since its answer: a job answered late was done by then only for that", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      const first = async (id: string) => polls.firstDelay({ ...job, id }, wide);
      expect(await first("probe_1")).toBe(5_700);
      // Its submit was answered 200 ms after it was sent (a busy loop): found done 5.7 s after the answer, the render
      // may have taken up to 5.9 s from a submit the provider took at once. 5.9 s is what is known to be enough.
      polls.answered("probe_1", false, 5_700, 5_900);
      expect(await first("job_1")).toBe(5_900);
      // A pending poll is counted from the answer (the latest the render can have started).
      polls.answered("job_1", true, 5_900, 6_100);
      expect(await first("job_2")).toBe(5_959);
    });

    it("a probe is placed from the submit's send, as the safe delay it tests was learned; every other first poll from the answer", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      // Each submit answered 240 ms after it left (a busy loop read it late).
      const first = async (id: string) => polls.firstDelay({ ...job, id }, wide, 240);
      expect(await first("probe_1")).toBe(5_700 - 240);
      expect(await first("job_1")).toBe(6_000);
      // Found done when it left 5.71 s after its send: that is the safe delay now. Placed from the answer it would have
      // left 5.95 s after the send and lowered nothing.
      polls.answered("probe_1", false, 5_470, 5_710);
      for (let index = 2; index < 9; index++) expect(await first(`job_${index}`)).toBe(5_710);
      // The next probe reaches 1.5 times further, again from the send.
      expect(await first("probe_2")).toBe(5_710 - 450 - 240);
    });

    it("no probe goes where a job was found pending since probing started: the next probe comes just past it, and probing ends once a job was found pending within 2% of the safe delay", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      const first = async (id: string) => polls.firstDelay({ ...job, id }, wide);
      expect(await first("probe_1")).toBe(5_700);
      // Planned at 5.7 s, sent late, 5.845 s after its submit left, and found pending: halving the gap would probe at
      // 5.85 s, barely past where the job was pending; the next probe comes 0.5% past 5.845 s instead (counted from
      // the send, as probes are placed).
      polls.answered("probe_1", true, 5_830, 5_845);
      for (let index = 1; index < 8; index++) await first(`early_${index}`);
      expect(await first("probe_2")).toBe(5_875);
      polls.answered("probe_2", true, 5_875);
      // A job at the safe delay found pending at 6 s: the safe delay goes to 6.06 s.
      expect(await first("job_1")).toBe(6_000);
      polls.answered("job_1", true, 6_000);
      // A job was found pending within 2% of the safe delay: what a probe could still gain is less than that, and a
      // probe found pending costs its job a poll interval, so none comes.
      const delays: number[] = [];
      for (let index = 2; index < 40; index++) delays.push(await first(`job_${index}`));
      expect(new Set(delays)).toEqual(new Set([6_060]));
    });

    it("probing stops once a job was found pending within 2% of the safe delay, and starts again after 256 first polls", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 1_000, pendingElapsedMs: null });
      let probes = 0;
      for (let index = 0; index < 200; index++) {
        const id = `job_${index}`;
        const delay = await polls.firstDelay({ ...job, id }, pace(0, 5_000));
        if (delay < 1_000) probes++;
        // Every probe finds the job pending: at 950 ms, then 975 ms, then 987.5 ms, which is within 2% of 1 s.
        polls.answered(id, delay < 1_000, 0);
      }
      expect(probes).toBe(3);
      for (let index = 200; index < 400; index++) {
        const id = `job_${index}`;
        const delay = await polls.firstDelay({ ...job, id }, pace(0, 5_000));
        if (delay < 1_000) probes++;
        polls.answered(id, delay < 1_000, 0);
      }
      expect(probes).toBe(6);
    });

    it("only the 50 most recent render times count", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 50; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 100_000, pendingElapsedMs: 10_000 });
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(55_000);
      for (let index = 0; index < 50; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 10_000, pendingElapsedMs: null });
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(10_000);
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
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(19_000);
      expect(await polls.expectedRenderMs("d", "gen-2-max")).toBe(3_000);
      expect(await polls.expectedRenderMs("c", "gen-2-pro")).toBeNull();
      expect(await polls.firstDelay({ provider: "c", model: "gen-2-pro", id: "job_x" }, wide)).toBe(500);
    });

    it("a fixed interval replaces the learned schedule, still within the provider's pace", async () => {
      const polls = new PollScheduler(store, 2_000);
      polls.record("d", "gen-2-pro", { doneElapsedMs: 60_000, pendingElapsedMs: null });
      expect(await polls.firstDelay({ ...job, id: "job_1" }, wide)).toBe(2_000);
      expect(await polls.nextDelay(job, 500_000, wide)).toBe(2_000);
      expect(await polls.nextDelay(job, 0, pace(3_000, 5_000))).toBe(3_000);
      expect(await new PollScheduler(store, 10_000).nextDelay(job, 0, pace(3_000, 5_000))).toBe(5_000);
    });
  
    it("a job whose last pending poll came after its done time is counted at its done time", async () => {
      const polls = new PollScheduler(store);
      polls.record("d", "gen-2-pro", { doneElapsedMs: 10_000, pendingElapsedMs: 20_000 });
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(10_000);
      polls.record("d", "gen-2-pro", { doneElapsedMs: 10_000, pendingElapsedMs: 10_000 });
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(10_000);
    });

    it("jobs recorded before the store was read are learned together with the store's, the 50 most recent kept", async () => {
      await storeFinished(store, [{ renderMs: 10_000, count: 1 }]);
      const polls = new PollScheduler(store);
      polls.record("d", "gen-2-pro", { doneElapsedMs: 30_000, pendingElapsedMs: null });
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(20_000);

      const fresh = new PollScheduler(store);
      for (let index = 0; index < 50; index++) fresh.record("d", "gen-2-max", { doneElapsedMs: 100_000, pendingElapsedMs: null });
      for (let index = 0; index < 30; index++) fresh.record("d", "gen-2-max", { doneElapsedMs: 10_000, pendingElapsedMs: null });
      // Kept: 20 of 100 s and the 30 of 10 s.
      expect(await fresh.expectedRenderMs("d", "gen-2-max")).toBe(10_000);
    });

    it("what the store holds counts as older than what this scheduler records next", async () => {
      // 25 jobs of 100 s, then 25 later jobs of 10 s, in the store.
      await storeFinished(store, [
        { renderMs: 100_000, count: 25 },
        { renderMs: 10_000, count: 25 },
      ]);
      const polls = new PollScheduler(store);
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(55_000);
      // 25 more of 10 s push out the 25 oldest, the 100 s ones.
      for (let index = 0; index < 25; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 10_000, pendingElapsedMs: null });
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(10_000);
    });

    it("first polls planned at the same moment share what is known: only one of them probes", async () => {
      await storeFinished(store, [{ renderMs: 6_000, count: 10 }]);
      const polls = new PollScheduler(store);
      const delays = await Promise.all([polls.firstDelay({ ...job, id: "job_1" }, wide), polls.firstDelay({ ...job, id: "job_2" }, wide)]);
      expect(delays.sort()).toEqual([5_700, 6_000]);
    });

    it("probes that keep finding jobs done reach further each time, at most a quarter of the safe delay", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 8_000, pendingElapsedMs: null });
      const probes: number[] = [];
      for (let index = 0; index < 64; index++) {
        const id = `job_${index}`;
        const delay = await polls.firstDelay({ ...job, id }, wide);
        if (delay < 8_000 && (probes.length === 0 || delay < probes[probes.length - 1]!)) probes.push(delay);
        // Every job is done by its first poll.
        polls.answered(id, false, delay);
      }
      // Each probe found done is the new safe delay; the gap below it is 5% of 8 s, then ×1.5 (600, 900, 1,350),
      // until a quarter of the safe delay caps it (1,187.5 below 4,750).
      expect(probes.slice(0, 5)).toEqual([7_600, 7_000, 6_100, 4_750, 3_563]);
      const gaps = probes.slice(1).map((delay, index) => probes[index]! - delay);
      for (let index = 0; index < gaps.length; index++) expect(gaps[index]!).toBeLessThanOrEqual(probes[index]! * 0.25 + 1);
    });

    it("times that one render time could explain are not spread: each job pending before every job's done poll (polls far apart while nothing was known) keeps the safe first poll; jobs pending after others were done make them spread", async () => {
      const tight = new PollScheduler(store);
      // A 6 s render seen through polls up to 800 ms apart: pending at 5.3–5.9 s, done at 6.0–6.7 s.
      for (let index = 0; index < 10; index++) tight.record("d", "gen-2-pro", { doneElapsedMs: 6_000 + index * 70, pendingElapsedMs: 5_300 + index * 60 });
      // Safe (the 10th percentile of done times, 6,063 ms) or a probe 5% below it: never the midpoints' least-lag point.
      expect([6_063, 5_760]).toContain(await tight.firstDelay({ ...job, id: "job_1" }, pace(250, 5_000)));
      const spread = new PollScheduler(store);
      // Pending at 7 s while another was done at 6 s: more than the 250 ms cadence apart.
      for (let index = 0; index < 10; index++) spread.record("d", "gen-2-pro", { doneElapsedMs: 6_000 + index * 200, pendingElapsedMs: 5_750 + index * 200 });
      expect(await spread.firstDelay({ ...job, id: "job_1" }, pace(250, 5_000))).toBeLessThan(6_000);
    });

    it("the first poll waits for a tight cluster of jobs when waiting costs less than polling again", async () => {
      const polls = new PollScheduler(store);
      // Done at 10.0 s, 10.1 s … 10.9 s; polls through the window every 418 ms (4% of the 10.45 s median).
      // Waiting 100 ms more catches a job that would wait ~209 ms for the next poll: worth it up to 10.2 s.
      for (let tenth = 0; tenth < 10; tenth++) polls.record("d", "gen-2-pro", { doneElapsedMs: 10_000 + tenth * 100, pendingElapsedMs: 10_000 + tenth * 100 });
      expect(await polls.firstDelay({ ...job, id: "job_1" }, wide)).toBe(10_200);
    });

    it("the safe first poll starts at the 10th percentile of done times (one job answered late does not place it), whatever order the jobs finished in", async () => {
      const polls = new PollScheduler(store);
      polls.record("d", "gen-2-pro", { doneElapsedMs: 5_100, pendingElapsedMs: null });
      for (let index = 0; index < 19; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      expect(await polls.firstDelay({ ...job, id: "probe_1" }, wide)).toBe(5_700);
      expect(await polls.firstDelay({ ...job, id: "job_1" }, wide)).toBe(6_000);
    });

    it("the expected render time is the median, whatever order the jobs finished in", async () => {
      const polls = new PollScheduler(store);
      for (const seconds of [10, 30, 20]) polls.record("d", "gen-2-pro", { doneElapsedMs: seconds * 1_000, pendingElapsedMs: null });
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(20_000);
    });

    it("exactly 50 render times are kept, not 49", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 25; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 100_000, pendingElapsedMs: null });
      for (let index = 0; index < 25; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 10_000, pendingElapsedMs: null });
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(55_000);
    });

    it("of the store's render times and those recorded before it was read, the 50 most recent are kept", async () => {
      await storeFinished(store, [{ renderMs: 100_000, count: 50 }]);
      const polls = new PollScheduler(store);
      for (let index = 0; index < 30; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 10_000, pendingElapsedMs: null });
      // 20 of the stored 100 s jobs and the 30 recorded 10 s jobs.
      expect(await polls.expectedRenderMs("d", "gen-2-pro")).toBe(10_000);
    });

    it("first polls planned before anything was known place the safe delay by when they left after their submit's send, once five found their jobs done", async () => {
      const first = async (polls: PollScheduler, id: string) => polls.firstDelay({ ...job, id }, wide);
      const polls = new PollScheduler(store);
      // Five jobs of a first wave, found done 505–520 ms after their submits left; their answers were read late by a
      // busy loop, so the finished jobs say 530 ms.
      const wave = [505, 508, 510, 515, 520];
      for (const index of wave.keys()) expect(await first(polls, `wave_${index}`)).toBe(500);
      for (const [index, sinceSent] of wave.entries()) {
        polls.answered(`wave_${index}`, false, sinceSent - 3, sinceSent);
        polls.record("d", "gen-2-pro", { doneElapsedMs: 530, pendingElapsedMs: null });
      }
      // The 10th percentile of 505…520 is 506.2 ms: a probe 5% below it, then the safe delay.
      expect(await first(polls, "probe_1")).toBe(481);
      expect(await first(polls, "job_1")).toBe(506);
      // Four are not enough: one fast job says nothing of the others.
      const fewer = new PollScheduler(store);
      for (const index of wave.slice(0, 4).keys()) await first(fewer, `wave_${index}`);
      for (const [index, sinceSent] of wave.slice(0, 4).entries()) {
        fewer.answered(`wave_${index}`, false, sinceSent - 3, sinceSent);
        fewer.record("d", "gen-2-pro", { doneElapsedMs: 530, pendingElapsedMs: null });
      }
      await first(fewer, "probe_1");
      expect(await first(fewer, "job_1")).toBe(530);
    });

    it("a first poll planned before anything was known teaches nothing about the safe delay", async () => {
      const polls = new PollScheduler(store);
      expect(await polls.firstDelay({ ...job, id: "early_job" }, wide)).toBe(500);
      polls.answered("early_job", false, 500);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      expect(await polls.firstDelay({ ...job, id: "probe_1" }, wide)).toBe(5_700);
      expect(await polls.firstDelay({ ...job, id: "job_1" }, wide)).toBe(6_000);
    });

    it("a job planned at the safe delay before it was raised, found done there, does not bring it back down", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      const first = async (id: string) => polls.firstDelay({ ...job, id }, wide);
      expect(await first("probe_1")).toBe(5_700);
      expect(await first("old_plan")).toBe(6_000);
      polls.answered("probe_1", true, 0);
      expect(await first("job_1")).toBe(6_000);
      polls.answered("job_1", true, 6_000);
      expect(await first("job_2")).toBe(6_060);
      // Other jobs found pending at 6 s are why it was raised; one found done there says nothing new.
      polls.answered("old_plan", false, 6_000);
      expect(await first("job_3")).toBe(6_060);
    });

    it("past 10,000 first polls never answered, their plans are dropped: a late answer teaches nothing", async () => {
      const polls = new PollScheduler(store);
      for (let index = 0; index < 10; index++) polls.record("d", "gen-2-pro", { doneElapsedMs: 6_000, pendingElapsedMs: null });
      const first = async (id: string) => polls.firstDelay({ ...job, id }, wide);
      expect(await first("probe_1")).toBe(5_700);
      polls.answered("probe_1", true, 0);
      expect(await first("old_plan")).toBe(6_000);
      for (let index = 0; index < 10_000; index++) await first(`unanswered_${index}`);
      // Found pending at 6 s, it would have moved the safe delay past 6 s, had its plan been kept.
      polls.answered("old_plan", true, 6_000);
      // The safe delay is still 6 s (one of the next two may be a probe below it: the lost probe's plan was dropped too).
      expect(Math.max(await first("job_1"), await first("job_2"))).toBe(6_000);
    });
  });
}

interface SpreadRun {
  firstMs: number;
  lagMs: number;
  doneAtFirst: boolean;
  polls: number;
}

/**
 * Jobs of D's gen-2-pro one after another, their render times drawn from `render` (0.5–2 s), polled as the engine
 * polls (every answer told, each finished job recorded) at D's pace (250 ms to 5 s).
 */
async function simulateSpread(polls: PollScheduler, count: number, random: () => number, render = { minMs: 500, maxMs: 2_000 }): Promise<SpreadRun[]> {
  const dPace = pace(250, 5_000);
  const runs: SpreadRun[] = [];
  for (let index = 0; index < count; index++) {
    const renderMs = render.minMs + random() * (render.maxMs - render.minMs);
    const id = `job_${index}`;
    let at = await polls.firstDelay({ ...job, id }, dPace);
    const firstMs = at;
    polls.answered(id, at < renderMs, at);
    let pendingAt: number | null = null;
    let polled = 1;
    while (at < renderMs) {
      pendingAt = at;
      at += await polls.nextDelay(job, at, dPace);
      polls.answered(id, at < renderMs, at);
      polled++;
    }
    polls.record("d", "gen-2-pro", { doneElapsedMs: at, pendingElapsedMs: pendingAt });
    runs.push({ firstMs, lagMs: at - renderMs, doneAtFirst: pendingAt === null, polls: polled });
  }
  return runs;
}

function mean(values: number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** A small deterministic generator of numbers in [0, 1) (mulberry32). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Finished D jobs in the store, oldest group first, each `renderMs` from submit to done. */
async function storeFinished(store: Store, groups: Array<{ renderMs: number; count: number }>): Promise<void> {
  let at = 1_000_000;
  let counter = 0;
  for (const group of groups) {
    for (let index = 0; index < group.count; index++) {
      const id = `job_stored_${++counter}`;
      await store.insertJobs(
        [{ id, ref: id, batchId: null, provider: "d", model: "gen-2-pro", operation: null, body: {}, facts: {}, warnings: [], estimateMicroUsd: null, estimateSource: "test", outDir: "/tmp/out" }],
        0,
      );
      at += 1_000;
      await store.updateJob(id, { state: "queued" }, { submittedAt: at - group.renderMs, providerDoneAt: at, lastPendingElapsedMs: null }, at);
    }
  }
}

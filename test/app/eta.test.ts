import { afterEach, describe, expect, it } from "vitest";
import { deadlineWarning, fairPosition, paceOf, Timings } from "../../src/app/eta.js";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import type { Store } from "../../src/store/store.js";
import { finishedDJob as finished, newDJob, storeFactories, tempDir } from "../helpers/stores.js";

/**
 * When will it finish (issue 37, part 1): queue positions from queue ranks
 * (migration 21), fair share counted; expected start and finish from the
 * slots free and the pace learned from finished jobs; on both stores.
 */

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** D configured (its limits only: nothing is sent). */
function dRuntime(): Pick<Runtime, "providers"> {
  const folder = tempDir();
  cleanups.push(() => folder.remove());
  const runtime = createRuntime({ env: {}, overrides: { MEDIAGATE_D_API_KEY: "d-test-key", MEDIAGATE_STORE: `sqlite:${folder.path}/unused.db`, MEDIAGATE_OUTPUT_DIR: folder.path } });
  cleanups.push(() => runtime.close());
  return runtime;
}

const D_POOL = [{ key: "d:account", capacity: 24 }];

describe("queue positions and fair share (no store)", () => {
  it("one tenant: a job's position is the jobs ahead of it, plus one", () => {
    const lines = [{ tenant: "a", headRank: 5, tailRank: 14, inFlight: 24, weight: 1 }];
    expect(fairPosition(lines, "a", 0)).toBe(1);
    expect(fairPosition(lines, "a", 9)).toBe(10);
  });

  it("two tenants take turns: a newcomer's first job is not behind a neighbour's thousand", () => {
    const lines = [
      { tenant: "alice", headRank: 1, tailRank: 1_000, inFlight: 24, weight: 1 },
      { tenant: "bob", headRank: 1, tailRank: 10, inFlight: 0, weight: 1 },
    ];
    // Bob has nothing in flight: his first ten go before any more of Alice's.
    expect(fairPosition(lines, "bob", 0)).toBe(1);
    expect(fairPosition(lines, "bob", 9)).toBe(10);
    // Alice's first waits for Bob's ten (his in flight reaches hers only past his line's end).
    expect(fairPosition(lines, "alice", 0)).toBe(11);
    expect(fairPosition(lines, "alice", 100)).toBe(111);
  });

  it("weights: a tenant of weight 2 takes two turns to the other's one", () => {
    const lines = [
      { tenant: "heavy", headRank: 1, tailRank: 100, inFlight: 0, weight: 2 },
      { tenant: "light", headRank: 1, tailRank: 100, inFlight: 0, weight: 1 },
    ];
    // Light's 11th job (place 10) comes after heavy's first 21 (places 0 … 10, the tie to heavy); heavy's 21st after light's first 10.
    expect(fairPosition(lines, "light", 10)).toBe(32);
    expect(fairPosition(lines, "heavy", 20)).toBe(31);
  });

  it("a pace is learned from finished jobs: the mean hold (submit to done) and the median total (submit to saved)", () => {
    const pace = paceOf([
      { doneElapsedMs: 1_000, pendingElapsedMs: null, finishedElapsedMs: 1_200 },
      { doneElapsedMs: 2_000, pendingElapsedMs: null, finishedElapsedMs: 2_300 },
      { doneElapsedMs: 6_000, pendingElapsedMs: null, finishedElapsedMs: 6_100 },
    ]);
    expect(pace).toEqual({ holdMs: 3_000, totalMs: 2_300, totals: [1_200, 2_300, 6_100], finished: [1_200, 2_300, 6_100] });
    expect(paceOf([])).toBeNull();
    // A job done at its provider whose results are still being saved: its render time stands in for the totals, never for the finished ones.
    expect(paceOf([{ doneElapsedMs: 1_000, pendingElapsedMs: null, finishedElapsedMs: null }])).toMatchObject({ totals: [1_000], finished: [] });
  });

  it("admission warns when the expected finish is past the deadline, and only then", () => {
    const timing = { queuePosition: 3, expectedStartAt: 1_000, expectedFinishAt: 10_000 };
    expect(deadlineWarning({ deadlineAt: 9_999 }, timing)).toBe(
      "expected to finish at 1970-01-01T00:00:10.000Z, after its deadline 1970-01-01T00:00:09.999Z (cancel_after_s): not sent by then it is cancelled, and sent it may run past it",
    );
    expect(deadlineWarning({ deadlineAt: 10_000 }, timing)).toBeNull();
    expect(deadlineWarning({ deadlineAt: null }, timing)).toBeNull();
    expect(deadlineWarning({ deadlineAt: 1 }, { ...timing, expectedFinishAt: null })).toBeNull();
  });
});

for (const kind of storeFactories) {
  describe(`queue positions and expected times on ${kind.name}`, () => {
    async function openStore(): Promise<Store> {
      const opened = await kind.open();
      cleanups.push(opened.cleanup);
      return opened.store;
    }

    it("each job queued gets the next rank of its tenant at its provider, across inserts; a provider's queue reads as its tenants' lines", async () => {
      const store = await openStore();
      await store.insertJobs([newDJob("a1"), newDJob("a2"), newDJob("b1", { tokenId: "tok_b" }), newDJob("e1", { provider: "e", model: "v3/generate-image" })], 1_000);
      await store.insertJobs([newDJob("a3"), newDJob("b2", { tokenId: "tok_b" })], 2_000);
      const ranks = Object.fromEntries(await Promise.all(["a1", "a2", "a3", "b1", "b2", "e1"].map(async (ref) => [ref, (await store.getJob(`job_${ref}`))!.queueRank])));
      expect(ranks).toEqual({ a1: 1, a2: 2, a3: 3, b1: 1, b2: 2, e1: 1 });
      await store.claimForSubmit("job_a1", "engine-1", D_POOL, 3_000, 60_000);
      const [d, e] = await store.queueShapes(["d", "e"]);
      expect(d).toEqual({
        provider: "d",
        inFlight: 1,
        lines: [
          { tenant: "local", headRank: 2, tailRank: 3, inFlight: 1, weight: 1 },
          { tenant: "tok_b", headRank: 1, tailRank: 2, inFlight: 0, weight: 1 },
        ],
      });
      expect(e).toEqual({ provider: "e", inFlight: 0, lines: [{ tenant: "local", headRank: 1, tailRank: 1, inFlight: 0, weight: 1 }] });
      expect(await store.queueShapes([])).toEqual([]);
    });

    it("a ranked queue's positions, starts and finishes follow the free slots and the learned pace; running jobs finish after the learned time less their age", async () => {
      const store = await openStore();
      const now = 10_000_000;
      // The pace: renders of 10 s, saved 2 s later.
      for (let index = 0; index < 5; index++) await finished(store, `done-${index}`, now - 100_000, 10_000, 2_000);
      // 24 slots, 24 in flight: the 48 behind wait, two waves.
      await store.insertJobs(Array.from({ length: 72 }, (_, index) => newDJob(`q-${String(index).padStart(2, "0")}`)), now - 50_000);
      for (let index = 0; index < 24; index++) {
        const claimed = await store.claimForSubmit(`job_q-${String(index).padStart(2, "0")}`, "engine-1", D_POOL, now - 4_000, 600_000);
        expect(claimed.kind).toBe("claimed");
        await store.transition(`job_q-${String(index).padStart(2, "0")}`, { state: "submitting" }, "running", { submittedAt: now - 4_000 }, "accepted", now - 4_000);
      }
      const timings = new Timings(dRuntime(), store);
      const jobs = await Promise.all(["q-00", "q-24", "q-47", "q-71", "done-0"].map(async (ref) => (await store.getJob(`job_${ref}`))!));
      const byRef = await timings.of(jobs, now);
      // Running 4 s of a 12 s total: 8 s left.
      expect(byRef.get("job_q-00")).toEqual({ queuePosition: null, expectedStartAt: now - 4_000, expectedFinishAt: now + 8_000 });
      // Slots turn over at 24 per 10 s: the first waiting job starts in 10/24 s, the 24th in 10 s, the 48th in 20 s.
      expect(byRef.get("job_q-24")).toEqual({ queuePosition: 1, expectedStartAt: now + Math.round(10_000 / 24), expectedFinishAt: now + Math.round(10_000 / 24) + 12_000 });
      expect(byRef.get("job_q-47")).toEqual({ queuePosition: 24, expectedStartAt: now + 10_000, expectedFinishAt: now + 22_000 });
      expect(byRef.get("job_q-71")).toEqual({ queuePosition: 48, expectedStartAt: now + 20_000, expectedFinishAt: now + 32_000 });
      expect(byRef.has("job_done-0")).toBe(false);
    });

    it("with slots free, the first jobs start now; a model with no finished job has a position and no times", async () => {
      const store = await openStore();
      const now = 20_000_000;
      await finished(store, "done", now - 100_000, 5_000, 1_000);
      await store.insertJobs([newDJob("first"), newDJob("second"), newDJob("other-model", { model: "gen-2-turbo" })], now - 1_000);
      const jobs = await Promise.all(["first", "second", "other-model"].map(async (ref) => (await store.getJob(`job_${ref}`))!));
      const byRef = await new Timings(dRuntime(), store).of(jobs, now);
      expect(byRef.get("job_first")).toEqual({ queuePosition: 1, expectedStartAt: now, expectedFinishAt: now + 6_000 });
      expect(byRef.get("job_second")).toEqual({ queuePosition: 2, expectedStartAt: now, expectedFinishAt: now + 6_000 });
      expect(byRef.get("job_other-model")).toEqual({ queuePosition: 3, expectedStartAt: null, expectedFinishAt: null });
    });
  });
}

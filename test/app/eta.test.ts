import { afterEach, describe, expect, it } from "vitest";
import { deadlineWarning, fairPosition, paceOf, queuePositionOf, Timings } from "../../src/app/eta.js";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import { createToken } from "../../src/app/tokens.js";
import { QUEUE_SHAPE_TENANTS } from "../../src/store/queue-shape.js";
import type { Job } from "../../src/core/job.js";
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

/** D and E configured (their limits only: nothing is sent). */
function dRuntime(): Pick<Runtime, "providers"> {
  const folder = tempDir();
  cleanups.push(() => folder.remove());
  const runtime = createRuntime({
    env: {},
    overrides: {
      MEDIAGATE_D_API_KEY: "d-test-key",
      MEDIAGATE_E_BASE_URL: "http://127.0.0.1:65530/e",
      MEDIAGATE_E_AUTH_URL: "http://127.0.0.1:65530/e-auth",
      MEDIAGATE_E_CLIENT_ID: "e-client",
      MEDIAGATE_E_CLIENT_SECRET: "e-secret",
      MEDIAGATE_STORE: `sqlite:${folder.path}/unused.db`,
      MEDIAGATE_OUTPUT_DIR: folder.path,
    },
  });
  cleanups.push(() => runtime.close());
  return runtime;
}

const D_POOL = [{ key: "d:account", capacity: 24 }];

describe("queue positions and fair share (no store)", () => {
  it("one tenant: a job's position is the jobs ahead of it, plus one", () => {
    const lines = [{ tenant: "a", headRank: 5, headDueAt: 0, tailRank: 14, inFlight: 24, weight: 1 }];
    expect(fairPosition(lines, "a", 0, 0)).toBe(1);
    expect(fairPosition(lines, "a", 9, 0)).toBe(10);
  });

  it("two tenants take turns: a newcomer's first job is not behind a neighbour's thousand", () => {
    const lines = [
      { tenant: "alice", headRank: 1, headDueAt: 0, tailRank: 1_000, inFlight: 24, weight: 1 },
      { tenant: "bob", headRank: 1, headDueAt: 500, tailRank: 10, inFlight: 0, weight: 1 },
    ];
    // Bob has nothing in flight: his first ten go before any more of Alice's.
    expect(fairPosition(lines, "bob", 0, 500)).toBe(1);
    expect(fairPosition(lines, "bob", 9, 500)).toBe(10);
    // Alice's first waits for Bob's ten (his in flight reaches hers only past his line's end).
    expect(fairPosition(lines, "alice", 0, 0)).toBe(11);
    expect(fairPosition(lines, "alice", 100, 0)).toBe(111);
  });

  it("an equal turn goes to the job that has waited longer: the line whose head is due first", () => {
    const lines = [
      { tenant: "alice", headRank: 1, headDueAt: 100, tailRank: 5, inFlight: 0, weight: 1 },
      { tenant: "bob", headRank: 1, headDueAt: 50, tailRank: 5, inFlight: 0, weight: 1 },
    ];
    expect(fairPosition(lines, "bob", 0, 50)).toBe(1);
    expect(fairPosition(lines, "alice", 0, 100)).toBe(2);
    expect(fairPosition(lines, "bob", 1, 60)).toBe(3);
  });

  it("weights: a tenant of weight 2 takes two turns to the other's one", () => {
    const lines = [
      { tenant: "heavy", headRank: 1, headDueAt: 0, tailRank: 100, inFlight: 0, weight: 2 },
      { tenant: "light", headRank: 1, headDueAt: 0, tailRank: 100, inFlight: 0, weight: 1 },
    ];
    // Light's 11th job (place 10) comes after heavy's first 21 (places 0 … 10, the tie to heavy, due as early); heavy's 21st after light's first 10.
    expect(fairPosition(lines, "light", 10, 0)).toBe(32);
    expect(fairPosition(lines, "heavy", 20, 0)).toBe(31);
  });

  it("a shape read just before a job was queued still places it: at the end of its line, or as the first of a line not read yet; a job its budget holds has no place", () => {
    const shape = { provider: "d" as const, inFlight: 24, lines: [{ tenant: "alice", headRank: 1, headDueAt: 0, tailRank: 100, inFlight: 24, weight: 1 }] };
    const job = (tenant: string, queueRank: number | null, more: Partial<Job> = {}) => ({ state: "queued" as const, tenant, queueRank, blockedCode: null, nextAttemptAt: 1_000, ...more });
    expect(queuePositionOf(job("alice", 101), shape)).toBe(101);
    // Bob's first job: nothing of his in flight, so it goes before Alice's next.
    expect(queuePositionOf(job("bob", 1), shape)).toBe(1);
    // Sent back to the queue before the head: first in its line.
    expect(queuePositionOf(job("alice", 0), shape)).toBe(1);
    expect(queuePositionOf(job("alice", 5, { state: "running" }), shape)).toBeNull();
    expect(queuePositionOf(job("alice", null), shape)).toBeNull();
    expect(queuePositionOf(job("alice", 5, { blockedCode: "over_budget" }), shape)).toBeNull();
    expect(queuePositionOf(job("alice", 5), undefined)).toBeNull();
  });

  it("a pace: negative times are not samples; with an even count the median is the middle two's mean; with no saved time the render stands for the total; the hold counts from the send where known", () => {
    expect(
      paceOf([
        { doneElapsedMs: 1_000, pendingElapsedMs: null, finishedElapsedMs: null, sentToDoneMs: 1_100 },
        { doneElapsedMs: 3_000, pendingElapsedMs: null, finishedElapsedMs: null, sentToDoneMs: null },
        { doneElapsedMs: -5, pendingElapsedMs: null, finishedElapsedMs: -1, sentToDoneMs: -7 },
      ]),
    ).toEqual({ holdMs: 2_050, totalMs: 2_000, totals: [1_000, 3_000], finished: [] });
    // Saved sooner than rendered (clocks of two processes): never a total below the render.
    expect(paceOf([{ doneElapsedMs: 4_000, pendingElapsedMs: null, finishedElapsedMs: 3_000 }])).toEqual({ holdMs: 4_000, totalMs: 4_000, totals: [3_000], finished: [3_000] });
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
          { tenant: "local", headRank: 2, headDueAt: 1_000, tailRank: 3, inFlight: 1, weight: 1 },
          { tenant: "tok_b", headRank: 1, headDueAt: 1_000, tailRank: 2, inFlight: 0, weight: 1 },
        ],
      });
      expect(e).toEqual({ provider: "e", inFlight: 0, lines: [{ tenant: "local", headRank: 1, headDueAt: 1_000, tailRank: 1, inFlight: 0, weight: 1 }] });
      expect(await store.queueShapes([])).toEqual([]);
    });

    it("a provider's lines carry each token's weight; a tenant whose only queued job its budget holds has no line; at most 200 tenants are read a provider", async () => {
      const store = await openStore();
      const heavy = await createToken(store, { name: "heavy", weight: 3, now: 1_000 });
      await store.insertJobs([newDJob("h-1", { tokenId: heavy.token.id }), newDJob("held", { tokenId: "tok_held" }), newDJob("mine")], 1_000);
      await store.updateJob("job_held", { state: "queued" }, { blockedCode: "over_budget" }, 2_000);
      const [d] = await store.queueShapes(["d"]);
      expect(d!.lines.map((line) => [line.tenant, line.weight])).toEqual(
        [
          [heavy.token.id, 3],
          ["local", 1],
        ].sort((left, right) => (String(left[0]) < String(right[0]) ? -1 : 1)),
      );
      await store.insertJobs(Array.from({ length: QUEUE_SHAPE_TENANTS }, (_, index) => newDJob(`t-${index}`, { tokenId: `tok_${String(index).padStart(3, "0")}` })), 3_000);
      const [crowded] = await store.queueShapes(["d"]);
      expect(crowded!.lines).toHaveLength(QUEUE_SHAPE_TENANTS);
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

    it("every state: sent, running past every learned time, capturing, held by a budget, ended; and a slot pool pushed back holds the line to its learned capacity until it unblocks", async () => {
      const store = await openStore();
      const now = 30_000_000;
      for (let index = 0; index < 3; index++) await finished(store, `done-${index}`, now - 100_000, 10_000, 2_000);
      await store.insertJobs(["sending", "old", "saving", "held", "cancelled", ...Array.from({ length: 12 }, (_, index) => `busy-${index}`), "waiting"].map((ref) => newDJob(ref)), now - 60_000);
      for (const ref of ["sending", "old", "saving", ...Array.from({ length: 12 }, (_, index) => `busy-${index}`)]) expect((await store.claimForSubmit(`job_${ref}`, "engine-1", D_POOL, now - 60_000, 600_000)).kind).toBe("claimed");
      await store.updateJob("job_sending", { state: "submitting" }, { submitSentAt: now - 300 }, now);
      await store.transition("job_old", { state: "submitting" }, "running", { submittedAt: now - 20_000 }, "accepted", now);
      await store.transition("job_saving", { state: "submitting" }, "running", { submittedAt: now - 11_000 }, "accepted", now);
      await store.transition("job_saving", { state: "running" }, "capturing", { providerDoneAt: now - 1_000 }, "done", now);
      await store.updateJob("job_held", { state: "queued" }, { blockedCode: "over_budget" }, now);
      await store.transition("job_cancelled", { state: "queued" }, "cancelled", {}, "cancelled", now);
      // D pushed back: its learned capacity is what it holds (15), and it waits until now + 30 s.
      await store.slotPushback(["d:account"], now + 30_000, now);
      const jobs = await Promise.all(["sending", "old", "saving", "held", "cancelled", "waiting"].map(async (ref) => (await store.getJob(`job_${ref}`))!));
      const byRef = await new Timings(dRuntime(), store).of(jobs, now);
      expect(byRef.get("job_sending")).toEqual({ queuePosition: null, expectedStartAt: now - 300, expectedFinishAt: now + 12_000 });
      // Running longer than every job of its model took: when it will finish is not known.
      expect(byRef.get("job_old")).toEqual({ queuePosition: null, expectedStartAt: now - 20_000, expectedFinishAt: null });
      expect(byRef.get("job_saving")).toEqual({ queuePosition: null, expectedStartAt: now - 11_000, expectedFinishAt: now + 1_000 });
      // Held by its budget: no place in line, and no times.
      expect(byRef.get("job_held")).toEqual({ queuePosition: null, expectedStartAt: null, expectedFinishAt: null });
      expect(byRef.has("job_cancelled")).toBe(false);
      // Its pool holds 15 of a learned 15 until it unblocks: the first waiting job starts no sooner than that.
      // (The budget-held job before it is not counted; the twelve claimed after it were its line's: its rank is the head's.)
      expect(byRef.get("job_waiting")).toEqual({ queuePosition: 1, expectedStartAt: now + 30_000, expectedFinishAt: now + 42_000 });
      expect(await new Timings(dRuntime(), store).of([], now)).toEqual(new Map());
    });

    it("a rate window paces a line with no slots (E: 4 requests a minute, two a job: one job every 30 s); a batch's end is its last job's finish; a request not queued yet is placed behind the line and the call's earlier jobs", async () => {
      const store = await openStore();
      const now = 40_000_000;
      const eJob = (ref: string) => newDJob(ref, { provider: "e", model: "v3/generate-image", operation: "generate-image" });
      await store.insertJobs([eJob("e-done")], now - 200_000);
      await store.transition("job_e-done", { state: "queued" }, "submitting", {}, "claimed", now - 200_000);
      await store.transition("job_e-done", { state: "submitting" }, "running", { submittedAt: now - 200_000 }, "accepted", now - 200_000);
      await store.transition("job_e-done", { state: "running" }, "capturing", { providerDoneAt: now - 195_000 }, "done", now - 195_000);
      await store.transition("job_e-done", { state: "capturing" }, "succeeded", { finishedAt: now - 194_000 }, "saved", now - 194_000);
      await store.insertJobs([eJob("e-1"), eJob("e-2"), eJob("e-3")], now - 1_000);
      const timings = new Timings(dRuntime(), store);
      const third = (await store.getJob("job_e-3"))!;
      // No slot pool: the first goes now, each next one window's worth (30 s) later.
      expect(await timings.one(third, now)).toEqual({ queuePosition: 3, expectedStartAt: now + 60_000, expectedFinishAt: now + 66_000 });
      expect(await timings.lineEnd((await store.getJob("job_e-1"))!, now)).toBe(now + 66_000);
      expect(await timings.lineEnd({ ...third, tenant: "nobody-waits" }, now)).toBeNull();
      // Queued now behind the three, and behind two more this call placed already: the sixth.
      expect(await timings.finishIfQueued(third, "local", 2, now)).toBe(now + 150_000 + 6_000);
      // Another tenant's first request: its first turn ties with the line's head, which has waited longer and goes first.
      expect(await timings.finishIfQueued(third, "another-tenant", 0, now)).toBe(now + 30_000 + 6_000);
      expect(await timings.one({ ...third, id: "job_none", state: "succeeded" }, now)).toEqual({ queuePosition: null, expectedStartAt: null, expectedFinishAt: null });
    });

    it("what estimates are made of is reused for a second, then read again: a line that left is still counted within the second, not after", async () => {
      const store = await openStore();
      const now = 50_000_000;
      await store.insertJobs([newDJob("b-1", { tokenId: "tok_b" }), newDJob("b-2", { tokenId: "tok_b" })], now - 10_000);
      await store.insertJobs([newDJob("mine")], now - 5_000);
      const mine = (await store.getJob("job_mine"))!;
      const first = new Timings(dRuntime(), store);
      // Tok_b's first has waited longer (an equal turn): mine is second.
      expect((await first.one(mine, now)).queuePosition).toBe(2);
      for (const ref of ["b-1", "b-2"]) await store.transition(`job_${ref}`, { state: "queued" }, "cancelled", {}, "cancelled", now);
      // Another Timings on the same store shares what was read.
      expect((await new Timings(dRuntime(), store).one(mine, now + 999)).queuePosition).toBe(2);
      expect((await first.one(mine, now + 1_000)).queuePosition).toBe(1);
      // A clock that went back reads again too.
      for (const ref of ["b-3", "b-4"]) await store.insertJobs([newDJob(ref, { tokenId: "tok_b" })], now - 20_000);
      expect((await first.one(mine, now - 1)).queuePosition).toBe(2);
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

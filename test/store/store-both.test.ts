import { describe, expect, it } from "vitest";
import type { JobState } from "../../src/core/job.js";
import type { JobPatch, NewJob, Store } from "../../src/store/store.js";
import { freshStoreEachTest, newDJob, storeFactories } from "../helpers/stores.js";

// The store calls the engine makes for settlement, webhooks, leases, its idle sleep and adaptive polling,
// on SQLite and (with DATABASE_URL) PostgreSQL alike.

function newJob(ref: string, overrides: Partial<NewJob> = {}): NewJob {
  return newDJob(ref, { body: { prompt: ref, width: 256, height: 256 }, ...overrides });
}

for (const factory of storeFactories) {
  describe(`store (${factory.name}): settlement, deliveries, leases, due times, render samples`, () => {
    let store: Store;
    freshStoreEachTest(factory, (opened) => (store = opened));

    /** Inserts a job and walks it through claim and submit to `to`, owned by `owner` until it ends. */
    async function jobIn(ref: string, to: JobState, owner: string, patch: JobPatch = {}, overrides: Partial<NewJob> = {}) {
      await store.insertJobs([newJob(ref, overrides)], 1_000);
      const id = `job_${ref}`;
      if (to === "queued") return (await store.updateJob(id, { state: "queued" }, patch, 1_000))!;
      expect((await store.claimForSubmit(id, owner, [], 1_000, 30_000)).kind).toBe("claimed");
      if (to === "submitting") return (await store.updateJob(id, { state: "submitting" }, patch, 1_000))!;
      await store.transition(id, { state: "submitting" }, "running", { providerJobId: `p_${ref}`, submittedAt: 2_000 }, "accepted", 2_000);
      if (to === "running") return (await store.updateJob(id, { state: "running" }, patch, 2_000))!;
      await store.transition(id, { state: "running" }, "capturing", {}, "done at the provider", 3_000);
      if (to === "capturing") return (await store.updateJob(id, { state: "capturing" }, patch, 3_000))!;
      if (to === "succeeded") return (await store.transition(id, { state: "capturing" }, "succeeded", { leaseOwner: null, leaseExpiresAt: null, ...patch }, "saved", 4_000))!;
      return (await store.transition(id, { state: "capturing" }, to, { leaseOwner: null, leaseExpiresAt: null, error: { code: "x", message: "x" }, ...patch }, "ended", 4_000))!;
    }

    it("insertJobs queues a large batch in chunks (500 rows a statement on SQLite, 5,000 on PostgreSQL): each new ref once with its event, a ref already stored or given twice returns the existing job, in the order given", async () => {
      await store.insertJobs([newJob("r-5")], 500);
      const refs = [...Array.from({ length: 5_200 }, (_, index) => `r-${index}`), "r-7"];
      const jobs = refs.map((ref, index) => newJob(ref, { id: `job_call_${index}` }));
      const results = await store.insertJobs(jobs, 1_000);
      expect(results.map((result) => result.job.ref)).toEqual(refs);
      expect(results.filter((result) => result.created)).toHaveLength(5_199);
      // Stored before: the earlier job, not created.
      expect(results[5]).toMatchObject({ created: false, job: { id: "job_r-5", createdAt: 500 } });
      // Given twice: created once, the repeat is that same job.
      expect(results[7]).toMatchObject({ created: true, job: { id: "job_call_7", state: "queued", createdAt: 1_000, nextAttemptAt: 1_000 } });
      expect(results[5_200]).toMatchObject({ created: false, job: { id: "job_call_7" } });
      expect(await store.events("job_call_5199")).toMatchObject([{ fromState: null, toState: "queued", reason: "validated, estimated and queued" }]);
      expect(await store.listJobs({ ids: ["job_call_7", "job_call_5199", "job_r-5"] })).toHaveLength(3);
      // A created job is handed back exactly as it is stored (it is not read back).
      for (const index of [0, 7, 5_199]) expect(results[index]!.job).toEqual(await store.getJob(results[index]!.job.id));
    });

    it("insertJobs stores every value as given: quotes, braces, commas, backslashes, the word NULL and unicode in text; nulls; large amounts", async () => {
      const awkward = 'NULL, {"a": [1, "b\\"]}, it\'s "quoted" — 狐 🦊 \n';
      const [result] = await store.insertJobs(
        [
          newJob("NULL", {
            id: "job_{awkward}",
            batchId: null,
            operation: awkward,
            body: { prompt: awkward, n: 3, list: [null, "NULL", "{}"] },
            facts: { note: awkward },
            warnings: [awkward, "NULL"],
            estimateMicroUsd: 9_007_199_254_740_991,
            estimateSource: awkward,
            outDir: "/tmp/a dir/with, comma",
            budgetId: null,
          }),
        ],
        1_000,
      );
      const stored = (await store.getJob("job_{awkward}"))!;
      expect(stored).toEqual(result!.job);
      expect(stored).toMatchObject({ ref: "NULL", batchId: null, operation: awkward, estimateMicroUsd: 9_007_199_254_740_991, estimateSource: awkward, outDir: "/tmp/a dir/with, comma" });
      expect(stored.body).toEqual({ prompt: awkward, n: 3, list: [null, "NULL", "{}"] });
      expect(stored.warnings).toEqual([awkward, "NULL"]);
      expect(await store.events("job_{awkward}")).toMatchObject([{ toState: "queued", detail: { estimateMicroUsd: 9_007_199_254_740_991, estimateSource: awkward } }]);
    });

    it("a claim whose job another engine took first claims, instead, the next due job of the same provider's queue and batch that the engine accepts; never another provider's, batch's or one not yet due", async () => {
      await store.insertJobs(
        [
          newJob("taken", { batchId: "b1" }),
          newJob("busy", { batchId: "b1" }),
          newJob("next", { batchId: "b1" }),
          newJob("later", { batchId: "b1" }),
          newJob("e-first", { batchId: "b1", provider: "e", model: "v3" }),
          newJob("other-batch", { batchId: "b2" }),
        ],
        500,
      );
      await store.updateJob("job_later", { state: "queued" }, { nextAttemptAt: 10_000 }, 500);
      expect((await store.claimForSubmit("job_taken", "other", [], 1_000, 30_000)).kind).toBe("claimed");
      const instead = { provider: "d" as const, scope: { batchId: "b1" }, poolsOf: (job: { id: string }) => (job.id === "job_busy" ? null : []) };

      // Without `instead`, a claim on a job already taken is only gone.
      expect(await store.claimForSubmit("job_taken", "me", [], 1_000, 30_000)).toEqual({ kind: "gone" });
      const claim = await store.claimForSubmit("job_taken", "me", [], 1_000, 30_000, instead);
      expect(claim).toMatchObject({ kind: "claimed", instead: true, job: { id: "job_next", state: "submitting", leaseOwner: "me", attempts: 1 } });
      expect((await store.getJob("job_taken"))!.leaseOwner).toBe("other");
      // Left: job_busy (refused by the engine), job_later (not due), job_e-first (E's queue), job_other-batch (batch b2).
      expect(await store.claimForSubmit("job_taken", "me", [], 1_000, 30_000, instead)).toEqual({ kind: "gone" });
      expect(await store.claimForSubmit("job_taken", "me", [], 1_000, 30_000, { ...instead, poolsOf: () => [] })).toMatchObject({ kind: "claimed", instead: true, job: { id: "job_busy" } });
      // A job considered instead that cannot have a slot is refused as such, and stays queued.
      const full = await store.claimForSubmit("job_taken", "me", [], 20_000, 30_000, { ...instead, poolsOf: () => [{ key: "d:account", capacity: 0 }] });
      expect(full).toEqual({ kind: "no_slot", poolKey: "d:account", retryAt: null, instead: true });
      expect((await store.getJob("job_later"))!.state).toBe("queued");
    });

    it("a settled charge is written once, with its ledger entry and an event; settling it again or settling a computed charge changes nothing", async () => {
      await jobIn("pending", "succeeded", "o", { chargeState: "pending", chargeMicroUsd: null });
      await jobIn("computed", "succeeded", "o", { chargeState: "computed", chargeMicroUsd: 30_000 });
      const settled = await store.settleCharge("job_pending", { microUsd: 41_250, source: "settled by B" }, 9_000);
      expect(settled).toMatchObject({ chargeState: "settled", chargeMicroUsd: 41_250, chargeSource: "settled by B", state: "succeeded" });
      expect(await store.ledgerTotal()).toBe(41_250);
      expect((await store.events("job_pending")).at(-1)).toMatchObject({ fromState: "succeeded", toState: "succeeded", at: 9_000, reason: expect.stringMatching(/charge settled: 41250 micro-USD/) });

      expect(await store.settleCharge("job_pending", { microUsd: 99_999, source: "settled twice" }, 10_000)).toBeNull();
      expect(await store.settleCharge("job_computed", { microUsd: 99_999, source: "not settling" }, 10_000)).toBeNull();
      expect(await store.ledgerTotal()).toBe(41_250);
      expect((await store.getJob("job_pending"))!.chargeMicroUsd).toBe(41_250);
      expect((await store.getJob("job_computed"))!.chargeMicroUsd).toBe(30_000);
    });

    it("dueSettlements offers finished jobs whose charge is pending or unavailable once due, earliest first; never an unfinished or a settled one", async () => {
      await jobIn("pending", "failed", "o", { chargeState: "pending", nextAttemptAt: 5_000 });
      await jobIn("unavailable", "succeeded", "o", { chargeState: "unavailable", nextAttemptAt: 4_000 });
      await jobIn("later", "succeeded", "o", { chargeState: "pending", nextAttemptAt: 20_000 });
      await jobIn("running", "running", "o", { chargeState: "pending", nextAttemptAt: 1_000 });
      await jobIn("computed", "succeeded", "o", { chargeState: "computed", nextAttemptAt: 1_000 });
      const due = async (now: number, limit = 10) => (await store.dueSettlements(now, limit)).map((job) => job.ref);
      expect(await due(3_999)).toEqual([]);
      expect(await due(6_000)).toEqual(["unavailable", "pending"]);
      expect(await due(6_000, 1)).toEqual(["unavailable"]);
      await store.settleCharge("job_unavailable", { microUsd: 1, source: "settled" }, 6_000);
      expect(await due(30_000)).toEqual(["pending", "later"]);
    });

    it("a webhook delivery id is recorded once per provider; the same id at another provider is its own; rejected deliveries without an id are all kept", async () => {
      const delivery = { provider: "b" as const, deliveryId: "msg_1", jobId: "job_x", outcome: "applied" as const, reason: "verified", at: 1_000 };
      expect(await store.recordDelivery(delivery)).toBe("recorded");
      expect(await store.recordDelivery({ ...delivery, at: 2_000, reason: "again" })).toBe("duplicate");
      expect(await store.recordDelivery({ ...delivery, provider: "f", at: 3_000 })).toBe("recorded");
      const rejected = { provider: "b" as const, deliveryId: null, jobId: null, outcome: "rejected" as const, reason: "bad signature", at: 4_000 };
      expect(await store.recordDelivery(rejected)).toBe("recorded");
      expect(await store.recordDelivery({ ...rejected, at: 5_000 })).toBe("recorded");

      expect((await store.deliveries()).map((row) => [row.provider, row.deliveryId, row.outcome, row.at])).toEqual([
        ["b", "msg_1", "applied", 1_000],
        ["f", "msg_1", "applied", 3_000],
        ["b", null, "rejected", 4_000],
        ["b", null, "rejected", 5_000],
      ]);
      expect((await store.deliveries({ provider: "f" })).map((row) => row.at)).toEqual([3_000]);
      expect((await store.deliveries({ jobId: "job_x" })).map((row) => row.provider)).toEqual(["b", "f"]);
      expect((await store.deliveries({ jobId: "job_x" }))[0]!.reason).toBe("verified");
    });

    it("renewLeases extends only this owner's unfinished jobs; releaseLeases frees them so another engine adopts them at once, before the lease would have expired", async () => {
      await jobIn("submitting", "submitting", "one");
      await jobIn("running", "running", "one");
      await jobIn("capturing", "capturing", "one");
      await jobIn("other", "running", "two");
      await jobIn("done", "succeeded", "one", { leaseOwner: "one", leaseExpiresAt: 31_000 });
      await store.renewLeases("one", 90_000);
      const lease = async (ref: string) => {
        const job = (await store.findJob(ref))!;
        return [job.leaseOwner, job.leaseExpiresAt];
      };
      for (const ref of ["submitting", "running", "capturing"]) expect(await lease(ref)).toEqual(["one", 90_000]);
      expect(await lease("other")).toEqual(["two", 31_000]);
      expect(await lease("done")).toEqual(["one", 31_000]);

      // Long before 90 s a live engine's valid lease is not taken...
      expect(await store.adoptOrphans("three", 10_000, 30_000, () => false)).toEqual([]);
      await store.releaseLeases("one");
      for (const ref of ["submitting", "running", "capturing", "done"]) expect(await lease(ref)).toEqual([null, null]);
      expect(await lease("other")).toEqual(["two", 31_000]);
      // ...but once released, another engine takes them at the same moment.
      const adopted = await store.adoptOrphans("three", 10_000, 30_000, () => false);
      expect(adopted.map((job) => job.ref).sort()).toEqual(["capturing", "running", "submitting"]);
      for (const job of adopted) expect([job.leaseOwner, job.leaseExpiresAt, job.nextAttemptAt]).toEqual(["three", 40_000, 10_000]);
    });

    it("jobOutcomes gives what a summary needs of each job, as the whole job has it (state, reason, tries, charge, estimate, blockage, error without its detail); unknown ids are left out; more than 1,000 ids a call is refused", async () => {
      const done = await jobIn("done", "succeeded", "me", { chargeMicroUsd: 30_000, chargeSource: "D price", chargeState: "computed" });
      const failed = await jobIn("failed", "failed", "me", { error: { code: "provider_failed", message: "D said no", detail: { big: "x".repeat(1_000) } } });
      const blocked = await jobIn("blocked", "queued", "me", { blockedCode: "over_budget", reason: "over budget", attempts: 2 });
      const outcomes = await store.jobOutcomes([done.id, failed.id, blocked.id, "job_nobody"]);
      const byId = new Map(outcomes.map((outcome) => [outcome.id, outcome]));
      expect(outcomes).toHaveLength(3);
      for (const whole of [done, failed, blocked]) {
        const stored = (await store.getJob(whole.id))!;
        expect(byId.get(whole.id)).toEqual({
          id: stored.id,
          ref: stored.ref,
          state: stored.state,
          reason: stored.reason,
          attempts: stored.attempts,
          providerJobId: stored.providerJobId,
          estimateMicroUsd: stored.estimateMicroUsd,
          chargeMicroUsd: stored.chargeMicroUsd,
          chargeState: stored.chargeState,
          blockedCode: stored.blockedCode,
          error: stored.error ? { code: stored.error.code, message: stored.error.message } : null,
        });
      }
      expect(byId.get(done.id)).toMatchObject({ state: "succeeded", chargeMicroUsd: 30_000, chargeState: "computed", providerJobId: "p_done", error: null });
      expect(byId.get(failed.id)!.error).toEqual({ code: "provider_failed", message: "D said no" });
      expect(byId.get(blocked.id)).toMatchObject({ state: "queued", blockedCode: "over_budget", attempts: 2, estimateMicroUsd: 30_000 });
      expect(await store.jobOutcomes([])).toEqual([]);
      await expect(store.jobOutcomes(Array.from({ length: 1_001 }, (_, index) => `job_${index}`))).rejects.toThrow(/at most 1000/);
    });

    it("nextDueAt is the earliest future due time of queued jobs (of providers not skipped), this owner's running or capturing jobs and settling charges; and of the queued jobs alone", async () => {
      expect(await store.nextDueAt("me", [], 0)).toEqual({ at: null, queuedAt: null });
      await jobIn("queued-d", "queued", "me", { nextAttemptAt: 50_000 });
      await jobIn("queued-c", "queued", "me", { nextAttemptAt: 8_000 }, { provider: "c", model: "m" });
      await jobIn("mine", "running", "me", { nextAttemptAt: 40_000 });
      await jobIn("mine-capturing", "capturing", "me", { nextAttemptAt: 30_000 });
      await jobIn("theirs", "running", "them", { nextAttemptAt: 6_000 });
      await jobIn("settling", "succeeded", "me", { chargeState: "pending", nextAttemptAt: 20_000 });
      await jobIn("past", "queued", "me", { nextAttemptAt: 4_000 });
      expect(await store.nextDueAt("me", [], 5_000)).toEqual({ at: 8_000, queuedAt: 8_000 });
      expect(await store.nextDueAt("me", ["c"], 5_000)).toEqual({ at: 20_000, queuedAt: 50_000 });
      expect(await store.nextDueAt("me", ["c"], 5_000, null, false)).toEqual({ at: 30_000, queuedAt: 50_000 });
      expect(await store.nextDueAt("me", ["c"], 20_000)).toEqual({ at: 30_000, queuedAt: 50_000 });
      expect(await store.nextDueAt("me", ["c"], 30_000)).toEqual({ at: 40_000, queuedAt: 50_000 });
      expect(await store.nextDueAt("me", ["c"], 40_000)).toEqual({ at: 50_000, queuedAt: 50_000 });
      expect(await store.nextDueAt("me", ["c", "d"], 40_000)).toEqual({ at: null, queuedAt: null });
      expect(await store.nextDueAt("them", ["c", "d"], 5_000)).toEqual({ at: 6_000, queuedAt: null });
      expect(await store.nextDueAt("me", ["c", "d"], 5_000)).toEqual({ at: 20_000, queuedAt: null });
      // Without an owner (an engine that knows its own jobs' due times): no one's running or capturing jobs count.
      expect(await store.nextDueAt(null, ["c"], 20_000)).toEqual({ at: 50_000, queuedAt: 50_000 });
      expect(await store.nextDueAt(null, ["c"], 5_000)).toEqual({ at: 20_000, queuedAt: 50_000 });
      expect(await store.nextDueAt(null, ["c", "d"], 20_000)).toEqual({ at: null, queuedAt: null });
      // Every provider skipped and no settlements asked for: nothing to read.
      expect(await store.nextDueAt(null, ["a", "b", "c", "d", "e", "f"], 0, null, false)).toEqual({ at: null, queuedAt: null });
    });

    it("recentRenderSamples are this provider's and model's newest finished jobs, submit to done, with the last pending poll", async () => {
      const finished = async (ref: string, submittedAt: number, doneAt: number, pendingMs: number | null, overrides: Partial<NewJob> = {}) => {
        await jobIn(ref, "running", "o", {}, overrides);
        await store.updateJob(`job_${ref}`, { state: "running" }, { submittedAt, providerDoneAt: doneAt, lastPendingElapsedMs: pendingMs }, doneAt);
      };
      await finished("old", 10_000, 17_000, 6_000);
      await finished("newest", 30_000, 39_000, null);
      await finished("middle", 20_000, 28_000, 7_500);
      await finished("other-model", 20_000, 50_000, 1_000, { model: "gen-2-max" });
      await finished("other-provider", 20_000, 50_000, 1_000, { provider: "c", model: "gen-2-pro" });
      await jobIn("still-running", "running", "o");
      // The submit's send and the saving are known where they were written (the eta's slot hold and total, issue 37).
      await store.updateJob("job_newest", { state: "running" }, { submitSentAt: 29_500, finishedAt: 40_000 }, 40_000);
      expect(await store.recentRenderSamples("d", "gen-2-pro", 10)).toEqual([
        { doneElapsedMs: 9_000, pendingElapsedMs: null, finishedElapsedMs: 10_000, sentToDoneMs: 9_500 },
        { doneElapsedMs: 8_000, pendingElapsedMs: 7_500, finishedElapsedMs: null, sentToDoneMs: null },
        { doneElapsedMs: 7_000, pendingElapsedMs: 6_000, finishedElapsedMs: null, sentToDoneMs: null },
      ]);
      expect(await store.recentRenderSamples("d", "gen-2-pro", 2)).toHaveLength(2);
      expect(await store.recentRenderSamples("d", "gen-2-max", 10)).toEqual([{ doneElapsedMs: 30_000, pendingElapsedMs: 1_000, finishedElapsedMs: null, sentToDoneMs: null }]);
      expect(await store.recentRenderSamples("a", "gen-2-pro", 10)).toEqual([]);
    });
  });
}

import { describe, expect, it } from "vitest";
import type { NewJob, Store } from "../../src/store/store.js";
import { freshStoreEachTest, newDJob, storeFactories } from "../helpers/stores.js";

function newJob(ref: string, overrides: Partial<NewJob> = {}): NewJob {
  return newDJob(ref, { batchId: "batch_1", budgetId: "budget_1", ...overrides });
}

for (const factory of storeFactories) {
  describe(`budgets held in the store (${factory.name})`, () => {
    let store: Store;
    freshStoreEachTest(factory, (opened) => (store = opened));

    it("a claim that would commit more than the budget's ceiling is refused, and the job stays queued and unsent", async () => {
      await store.setBudget("budget_1", 70_000, 1);
      await store.insertJobs([newJob("a"), newJob("b"), newJob("c")], 1);
      expect((await store.claimForSubmit("job_a", "w", [], 2, 30_000)).kind).toBe("claimed");
      expect((await store.claimForSubmit("job_b", "w", [], 2, 30_000)).kind).toBe("claimed");
      const third = await store.claimForSubmit("job_c", "w", [], 2, 30_000);
      expect(third).toEqual({ kind: "over_budget", budget: { id: "budget_1", ceilingMicroUsd: 70_000, committedMicroUsd: 60_000 } });
      expect((await store.getJob("job_c"))!.state).toBe("queued");
      expect((await store.getJob("job_a"))!.budgetHeldMicroUsd).toBe(30_000);
    });

    it("an unpriced job (--allow-unpriced) commits nothing and is sent while the ceiling is not reached; once the counted charges reach it, it is held back too", async () => {
      await store.setBudget("budget_1", 60_000, 1);
      await store.insertJobs([newJob("a"), newJob("b"), newJob("u1", { estimateMicroUsd: null }), newJob("u2", { estimateMicroUsd: null })], 1);
      expect((await store.claimForSubmit("job_a", "w", [], 2, 30_000)).kind).toBe("claimed");
      expect((await store.claimForSubmit("job_u1", "w", [], 2, 30_000)).kind).toBe("claimed");
      expect((await store.getJob("job_u1"))!.budgetHeldMicroUsd).toBe(0);
      expect((await store.claimForSubmit("job_b", "w", [], 2, 30_000)).kind).toBe("claimed");
      expect((await store.budget("budget_1"))!.committedMicroUsd).toBe(60_000);
      expect((await store.claimForSubmit("job_u2", "w", [], 2, 30_000)).kind).toBe("over_budget");
      expect((await store.getJob("job_u2"))!.state).toBe("queued");
    });

    it("a submit refused (never accepted) gives its estimate back; one pushed back to the queue keeps it for its next send; a known charge replaces it", async () => {
      await store.setBudget("budget_1", 1_000_000, 1);
      await store.insertJobs([newJob("a"), newJob("b"), newJob("c")], 1);
      for (const id of ["job_a", "job_b", "job_c"]) await store.claimForSubmit(id, "w", [], 2, 30_000);
      expect((await store.budget("budget_1"))!.committedMicroUsd).toBe(90_000);
      // a: pushed back (429): nothing was created; it will be sent again, and holds its estimate until then.
      await store.transition("job_a", { state: "submitting" }, "queued", {}, "pushed back", 3);
      // b: refused at submit (402): nothing was created, nothing is owed.
      await store.transition("job_b", { state: "submitting" }, "failed", { error: { code: "insufficient_credits", message: "no" } }, "refused", 3);
      expect((await store.budget("budget_1"))!.committedMicroUsd).toBe(60_000);
      // c: accepted, then charged less than its estimate.
      await store.transition("job_c", { state: "submitting" }, "running", { providerJobId: "p_c" }, "accepted", 4);
      await store.transition("job_c", { state: "running" }, "capturing", {}, "done", 5);
      await store.transition("job_c", { state: "capturing" }, "succeeded", { chargeMicroUsd: 25_000, chargeSource: "test", chargeState: "computed" }, "saved", 6);
      expect((await store.budget("budget_1"))!.committedMicroUsd).toBe(55_000);
      expect((await store.getJob("job_a"))!.budgetHeldMicroUsd).toBe(30_000);
      expect((await store.getJob("job_b"))!.budgetHeldMicroUsd).toBe(0);
      expect((await store.getJob("job_c"))!.budgetHeldMicroUsd).toBe(25_000);
      // a, sent again: its claim commits nothing more.
      await store.claimForSubmit("job_a", "w", [], 7, 30_000);
      expect((await store.budget("budget_1"))!.committedMicroUsd).toBe(55_000);
    });

    it("an unknown submission keeps its estimate committed (it may have been charged); a charge settled later replaces the estimate once", async () => {
      await store.setBudget("budget_1", 1_000_000, 1);
      await store.insertJobs([newJob("a"), newJob("b")], 1);
      await store.claimForSubmit("job_a", "w", [], 2, 30_000);
      await store.claimForSubmit("job_b", "w", [], 2, 30_000);
      await store.transition("job_a", { state: "submitting" }, "unknown_submission", { error: { code: "submit_outcome_unknown", message: "?" } }, "unknown", 3);
      await store.transition("job_b", { state: "submitting" }, "running", { providerJobId: "p_b" }, "accepted", 3);
      await store.transition("job_b", { state: "running" }, "failed", { chargeMicroUsd: null, chargeState: "pending", error: { code: "x", message: "y" } }, "failed at B", 4);
      expect((await store.budget("budget_1"))!.committedMicroUsd).toBe(60_000);
      await store.settleCharge("job_b", { microUsd: 45_000, source: "settled" }, 5);
      await store.settleCharge("job_b", { microUsd: 45_000, source: "settled" }, 6);
      expect((await store.budget("budget_1"))!.committedMicroUsd).toBe(75_000);
    });

    it("engines claiming at once never commit past the ceiling: ten concurrent claims under a 100,000 budget send three", async () => {
      await store.setBudget("budget_1", 100_000, 1);
      const refs = Array.from({ length: 10 }, (_, index) => `j${index}`);
      await store.insertJobs(refs.map((ref) => newJob(ref)), 1);
      const results = await Promise.all(refs.map((ref, index) => store.claimForSubmit(`job_${ref}`, `engine-${index % 3}`, [], 2, 30_000)));
      expect(results.filter((result) => result.kind === "claimed")).toHaveLength(3);
      expect(results.filter((result) => result.kind === "over_budget")).toHaveLength(7);
      expect((await store.budget("budget_1"))!.committedMicroUsd).toBe(90_000);
    });

    it("a job without a budget is claimed whatever other budgets hold, and holds nothing", async () => {
      await store.setBudget("budget_1", 0, 1);
      await store.insertJobs([newJob("free", { budgetId: null })], 1);
      expect((await store.claimForSubmit("job_free", "w", [], 2, 30_000)).kind).toBe("claimed");
      expect((await store.getJob("job_free"))!.budgetHeldMicroUsd).toBe(0);
    });

    it("assignBudget puts still-queued jobs under a budget and leaves jobs already sent where they are", async () => {
      await store.setBudget("budget_2", 1_000_000, 1);
      await store.insertJobs([newJob("a", { budgetId: null }), newJob("b", { budgetId: null })], 1);
      await store.claimForSubmit("job_b", "w", [], 2, 30_000);
      await store.assignBudget("budget_2", ["job_a", "job_b"], 3);
      expect((await store.getJob("job_a"))!.budgetId).toBe("budget_2");
      expect((await store.getJob("job_b"))!.budgetId).toBeNull();
    });

    it("a command's scope: dueQueued, nextDueAt and adoptOrphans see only the jobs of its batch or its ids", async () => {
      await store.insertJobs([newJob("mine", { batchId: "batch_mine" }), newJob("other", { batchId: "batch_other" }), newJob("single", { batchId: null })], 1);
      expect((await store.dueQueued(10, 10, [], { batchId: "batch_mine" })).map((job) => job.ref)).toEqual(["mine"]);
      expect((await store.dueQueued(10, 10, [], { jobIds: ["job_single"] })).map((job) => job.ref)).toEqual(["single"]);
      expect((await store.dueQueued(10, 10, [])).map((job) => job.ref).sort()).toEqual(["mine", "other", "single"]);
      await store.updateJob("job_other", { state: "queued" }, { nextAttemptAt: 50 }, 2);
      await store.updateJob("job_mine", { state: "queued" }, { nextAttemptAt: 80 }, 2);
      expect(await store.nextDueAt("me", [], 10, { batchId: "batch_mine" })).toEqual({ at: 80, queuedAt: 80 });
      expect(await store.nextDueAt("me", [], 10)).toEqual({ at: 50, queuedAt: 50 });
      // An orphan of another batch (its engine died) is not adopted by a command scoped to its own batch.
      await store.claimForSubmit("job_other", "dead-engine", [], 60, 1);
      expect(await store.adoptOrphans("me", 1_000, 30_000, () => true, { batchId: "batch_mine" })).toEqual([]);
      expect((await store.adoptOrphans("me", 1_000, 30_000, () => true)).map((job) => job.ref)).toEqual(["other"]);
    });
  });
}

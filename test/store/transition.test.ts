import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobOutput } from "../../src/core/job.js";
import type { Store } from "../../src/store/store.js";
import { newDJob, storeFactories } from "../helpers/stores.js";

/**
 * A transition changes the job, appends its event, releases its slots and
 * writes its outputs and ledger line together, or does nothing. On
 * PostgreSQL it is one statement (issue 10: each statement is a round trip,
 * and a transaction took four or more); a job under a budget takes the
 * transaction, where what it holds is worked out from the row.
 */

const POOL = [{ key: "d:account", capacity: 1 }];

function output(index: number): JobOutput {
  return { index, path: `/tmp/out/${index}.png`, url: `https://d.example/r/${index}`, contentType: "image/png", bytes: 1_000 + index, sha256: `${index}`.repeat(64), metadata: { seed: index }, media: { width: 64 + index, height: 48 } };
}

interface Opened {
  store: Store;
  statements: string[];
  cleanup(): Promise<void>;
}

for (const { name, open } of storeFactories) {
  describe(`transitions (${name})`, () => {
    let opened: Opened;
    beforeEach(async () => {
      const statements: string[] = [];
      opened = { ...(await open({ onQuery: (text) => statements.push(text) })), statements };
    });
    afterEach(async () => opened.cleanup());

    it("a transition out of the slot-holding states releases the job's slots (counted once) with its event; one that stays in them keeps them", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("a"), newDJob("b")], 1_000);
      expect((await store.claimForSubmit("job_a", "me", POOL, 1_000, 30_000)).kind).toBe("claimed");
      const releases = store.slotReleases;
      const running = await store.transition("job_a", { state: "submitting", leaseOwner: "me" }, "running", { providerJobId: "p_a", submittedAt: 2_000 }, "accepted", 2_000, { task: "p_a" });
      expect(running).toMatchObject({ state: "running", providerJobId: "p_a", slotsHeld: ["d:account"], updatedAt: 2_000 });
      expect(store.slotReleases).toBe(releases);
      expect((await store.claimForSubmit("job_b", "me", POOL, 2_000, 30_000)).kind).toBe("no_slot");

      const capturing = await store.transition("job_a", { state: "running", leaseOwner: "me" }, "capturing", { nextAttemptAt: 3_000 }, "done at D", 3_000);
      expect(capturing).toMatchObject({ state: "capturing", slotsHeld: [], nextAttemptAt: 3_000 });
      expect(store.slotReleases).toBe(releases + 1);
      expect((await store.poolStatus()).find((pool) => pool.key === "d:account")?.held).toBe(0);
      expect((await store.claimForSubmit("job_b", "me", POOL, 3_000, 30_000)).kind).toBe("claimed");

      const events = (await store.events("job_a")).map(({ fromState, toState, reason, detail, at }) => ({ fromState, toState, reason, detail, at }));
      expect(events.slice(-2)).toEqual([
        { fromState: "submitting", toState: "running", reason: "accepted", detail: { task: "p_a" }, at: 2_000 },
        { fromState: "running", toState: "capturing", reason: "done at D", detail: null, at: 3_000 },
      ]);
    });

    it("a success writes its outputs and its ledger line with the change; a second write of an output replaces it, the ledger keeps its first line", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("a")], 1_000);
      await store.claimForSubmit("job_a", "me", POOL, 1_000, 30_000);
      await store.transition("job_a", { state: "submitting" }, "running", {}, "accepted", 2_000);
      await store.transition("job_a", { state: "running" }, "capturing", {}, "done", 3_000, undefined, { outputs: [output(0)] });
      const done = await store.transition("job_a", { state: "capturing" }, "succeeded", { leaseOwner: null, chargeMicroUsd: 30_000, chargeState: "computed" }, "saved", 4_000, undefined, {
        outputs: [{ ...output(0), bytes: 5 }, output(1)],
        ledger: { microUsd: 30_000, source: "price" },
      });
      expect(done).toMatchObject({ state: "succeeded", finishedAt: 4_000, leaseOwner: null, chargeMicroUsd: 30_000, blockedCode: null });
      expect(await store.outputs("job_a")).toEqual([{ ...output(0), bytes: 5 }, output(1)]);
      expect(await store.ledgerTotal()).toBe(30_000);
      await store.transition("job_a", { state: "succeeded" }, "succeeded", {}, "again", 5_000, undefined, { ledger: { microUsd: 99_000, source: "again" } });
      expect(await store.ledgerTotal()).toBe(30_000);
    });

    it("a transition whose job is not in the expected state or lease changes nothing: no event, no slot released, no output or ledger line", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("a")], 1_000);
      await store.claimForSubmit("job_a", "me", POOL, 1_000, 30_000);
      const before = await store.getJob("job_a");
      const eventsBefore = await store.events("job_a");
      const releases = store.slotReleases;
      const extras = { outputs: [output(0)], ledger: { microUsd: 1, source: "x" } };
      expect(await store.transition("job_a", { state: "running" }, "succeeded", {}, "wrong state", 2_000, undefined, extras)).toBeNull();
      expect(await store.transition("job_a", { state: "submitting", leaseOwner: "other" }, "failed", {}, "wrong owner", 2_000, undefined, extras)).toBeNull();
      expect(await store.transition("job_a", { state: "submitting", leaseOwner: null }, "failed", {}, "owned", 2_000, undefined, extras)).toBeNull();
      expect(await store.transition("job_none", { state: "submitting" }, "failed", {}, "no job", 2_000)).toBeNull();
      expect(await store.getJob("job_a")).toEqual(before);
      expect(await store.events("job_a")).toEqual(eventsBefore);
      expect(store.slotReleases).toBe(releases);
      expect(await store.outputs("job_a")).toEqual([]);
      expect(await store.ledgerTotal()).toBe(0);
      // Any of several states, and no lease expected: taken.
      expect(await store.transition("job_a", { state: ["running", "submitting"] }, "queued", { leaseOwner: null }, "back", 2_000)).toMatchObject({ state: "queued", slotsHeld: [] });
      expect(store.slotReleases).toBe(releases + 1);
    });

    it("a job under a budget keeps what it holds when it goes back to the queue (its next claim commits nothing more), gives it back when it ends unsent, and holds its charge once known", async () => {
      const { store } = opened;
      const budget = await store.setBudget("budget_1", 100_000, 1_000);
      await store.insertJobs([newDJob("a", { budgetId: budget.id }), newDJob("b", { budgetId: budget.id })], 1_000);
      await store.claimForSubmit("job_a", "me", [], 1_000, 30_000);
      await store.claimForSubmit("job_b", "me", [], 1_000, 30_000);
      expect((await store.budget(budget.id))?.committedMicroUsd).toBe(60_000);
      const back = await store.transition("job_a", { state: "submitting" }, "queued", { leaseOwner: null }, "not sent", 2_000);
      expect(back).toMatchObject({ state: "queued", budgetHeldMicroUsd: 30_000 });
      expect((await store.budget(budget.id))?.committedMicroUsd).toBe(60_000);
      await store.claimForSubmit("job_a", "me", [], 2_500, 30_000);
      expect((await store.budget(budget.id))?.committedMicroUsd).toBe(60_000);
      await store.transition("job_a", { state: "submitting" }, "queued", { leaseOwner: null }, "not sent", 2_600);
      const cancelled = await store.transition("job_a", { state: "queued" }, "cancelled", { reason: "cancelled" }, "cancelled", 2_700);
      expect(cancelled).toMatchObject({ state: "cancelled", budgetHeldMicroUsd: 0 });
      expect((await store.budget(budget.id))?.committedMicroUsd).toBe(30_000);
      await store.transition("job_b", { state: "submitting" }, "running", { providerJobId: "p_b" }, "accepted", 2_000);
      const done = await store.transition("job_b", { state: "running" }, "succeeded", { chargeMicroUsd: 20_000 }, "saved", 3_000);
      expect(done).toMatchObject({ state: "succeeded", budgetHeldMicroUsd: 20_000 });
      expect((await store.budget(budget.id))?.committedMicroUsd).toBe(20_000);
    });

    if (name === "postgres") {
      it("on PostgreSQL a transition is one statement, whatever it writes; a job under a budget takes a transaction", async () => {
        const { store, statements } = opened;
        const budget = await store.setBudget("budget_1", 100_000, 1_000);
        await store.insertJobs([newDJob("a"), newDJob("b", { budgetId: budget.id })], 1_000);
        const count = async (change: () => Promise<unknown>) => {
          const start = statements.length;
          await change();
          return statements.slice(start);
        };
        // A claim is one statement too, its locks, holds and event included (mediagate_claim_or_next, migrations 15 and 16), with no transaction around it.
        const claim = await count(() => store.claimForSubmit("job_a", "me", POOL, 1_000, 30_000));
        expect(claim).toEqual([expect.stringMatching(/^select mediagate_claim_or_next\(/i)]);
        expect(await store.events("job_a")).toMatchObject([{ toState: "queued" }, { toState: "submitting", reason: "claimed by me", detail: { attempt: 1, slots: [POOL[0]!.key] } }]);
        expect(await count(() => store.transition("job_a", { state: "submitting", leaseOwner: "me" }, "running", {}, "accepted", 2_000))).toHaveLength(1);
        expect(await count(() => store.transition("job_a", { state: "running" }, "capturing", {}, "done", 3_000))).toHaveLength(1);
        expect(await count(() => store.transition("job_a", { state: "capturing" }, "succeeded", {}, "saved", 4_000, undefined, { outputs: [output(0), output(1)], ledger: { microUsd: 1, source: "x" } }))).toHaveLength(1);
        expect(await count(() => store.transition("job_a", { state: "running" }, "failed", {}, "refused", 5_000))).toHaveLength(1);
        await store.claimForSubmit("job_b", "me", [], 1_000, 30_000);
        const withBudget = await count(() => store.transition("job_b", { state: "submitting" }, "queued", {}, "not sent", 2_000));
        expect(withBudget.length).toBeGreaterThan(2);
        expect(withBudget.some((text) => /for update/i.test(text) && !/^with/i.test(text))).toBe(true);
      });
    }
  });
}

import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openPostgresStore } from "../../src/store/postgres.js";
import type { Store } from "../../src/store/store.js";
import { dropSchema, newDJob, storeFactories } from "../helpers/stores.js";

/**
 * Issue 37, part 4, in the store: when a batch's last unfinished job ends,
 * the change that ends it owes one `batch.completed` notification, in the
 * same transaction; never a second one for the batch, whoever ends its jobs.
 */

const HOOK = "https://hooks.example/mediagate?token=t0ken";

const batchJobs = (batch: string, count: number, overrides = {}) =>
  Array.from({ length: count }, (_, index) => newDJob(`${batch}-${index}`, { batchId: batch, notifyUrl: HOOK, ...overrides }));

async function completions(store: Store, jobIds: readonly string[]) {
  const all = await Promise.all(jobIds.map((id) => store.notifications(id)));
  return all.flat().filter((notification) => notification.type === "batch.completed");
}

for (const { name, open } of storeFactories) {
  describe(`batch.completed owed by a batch's last end (${name})`, () => {
    let opened: { store: Store; cleanup(): Promise<void> };
    beforeEach(async () => {
      opened = await open();
    });
    afterEach(async () => opened.cleanup());

    it("the end of a batch's last unfinished job owes one batch.completed (to that job's notify_url, under its batch); the ends before it owe none", async () => {
      const { store } = opened;
      const jobs = batchJobs("b1", 3);
      await store.insertJobs(jobs, 1_000);
      await store.transition(jobs[0]!.id, { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      await store.transition(jobs[1]!.id, { state: "queued" }, "failed", { error: { code: "x", message: "y" } }, "failed", 2_100);
      expect(await completions(store, jobs.map((job) => job.id))).toEqual([]);
      await store.transition(jobs[2]!.id, { state: "queued" }, "cancelled", {}, "cancelled", 3_000);
      const [completed, ...others] = await completions(store, jobs.map((job) => job.id));
      expect(others).toEqual([]);
      expect(completed).toMatchObject({ jobId: jobs[2]!.id, batchId: "b1", type: "batch.completed", url: HOOK, attempts: 0, createdAt: 3_000, nextAttemptAt: 3_000 });
      // The job's own end is owed too.
      expect((await store.notifications(jobs[2]!.id)).map((notification) => notification.type).sort()).toEqual(["batch.completed", "job.cancelled"]);
    });

    it("a batch is told once: a job resubmitted after the batch ended and ending again owes its own notification, not a second batch.completed", async () => {
      const { store } = opened;
      const [only] = batchJobs("b2", 1);
      await store.insertJobs([only!], 1_000);
      await store.claimForSubmit(only!.id, "owner", [], 1_500, 60_000);
      await store.transition(only!.id, { state: "submitting" }, "unknown_submission", {}, "lost", 2_000);
      await store.transition(only!.id, { state: "unknown_submission" }, "queued", {}, "resubmit", 3_000);
      await store.transition(only!.id, { state: "queued" }, "cancelled", {}, "cancelled", 4_000);
      expect((await completions(store, [only!.id])).map((notification) => notification.createdAt)).toEqual([2_000]);
    });

    it("no address, no batch.completed: a batch whose last job has no notify_url owes none unless MEDIAGATE_NOTIFY_URL is set", async () => {
      const { store } = opened;
      const [plain] = batchJobs("b3", 1, { notifyUrl: null });
      await store.insertJobs([plain!], 1_000);
      await store.transition(plain!.id, { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      expect(await completions(store, [plain!.id])).toEqual([]);
      const [later] = batchJobs("b4", 1, { notifyUrl: null });
      await store.insertJobs([later!], 1_000);
      store.setNotificationPolicy({ defaultUrl: "https://default.example/hook", events: "terminal" });
      await store.transition(later!.id, { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      expect(await completions(store, [later!.id])).toMatchObject([{ url: "https://default.example/hook", batchId: "b4" }]);
    });

    it("a job without a batch owes no batch.completed, and a job that ends while others of its batch run owes none", async () => {
      const { store } = opened;
      const [alone] = [newDJob("alone", { notifyUrl: HOOK })];
      const pair = batchJobs("b5", 2);
      await store.insertJobs([alone!, ...pair], 1_000);
      await store.claimForSubmit(pair[1]!.id, "owner", [], 1_500, 60_000);
      await store.transition(alone!.id, { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      await store.transition(pair[0]!.id, { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      expect(await completions(store, [alone!.id, ...pair.map((job) => job.id)])).toEqual([]);
      await store.transition(pair[1]!.id, { state: "submitting" }, "failed", { error: { code: "rejected", message: "no" } }, "rejected", 3_000);
      expect(await completions(store, pair.map((job) => job.id))).toHaveLength(1);
    });
  });
}

const databaseUrl = process.env.DATABASE_URL;

describe.skipIf(!databaseUrl)("batch.completed with several engines on one PostgreSQL store", () => {
  it("PostgreSQL: engines ending a batch's last jobs at the same time (each job its own store, pool and connection) owe exactly one batch.completed, every round", async () => {
    const schema = `mg_test_${randomBytes(6).toString("hex")}`;
    const stores = [await openPostgresStore(databaseUrl!, { schema, maxConnections: 4 })];
    try {
      for (let index = 1; index < 4; index++) stores.push(await openPostgresStore(databaseUrl!, { schema, maxConnections: 4 }));
      for (let round = 0; round < 8; round++) {
        const jobs = batchJobs(`race${round}`, 4);
        await stores[0]!.insertJobs(jobs, 1_000);
        // Every end at once, each by another store object (another process's pool).
        await Promise.all(jobs.map((job, index) => stores[index]!.transition(job.id, { state: "queued" }, "cancelled", {}, "cancelled", 2_000 + index)));
        expect(await completions(stores[0]!, jobs.map((job) => job.id)), `round ${round}`).toHaveLength(1);
      }
    } finally {
      for (const store of stores) await store.close();
      await dropSchema(databaseUrl!, schema);
    }
  });
});

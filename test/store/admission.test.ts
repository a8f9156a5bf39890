import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/core/job.js";
import { openPostgresStore } from "../../src/store/postgres.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Admission, NewJob, Store } from "../../src/store/store.js";
import { dropSchema, newDJob, tempDir } from "../helpers/stores.js";

const T0 = Date.UTC(2026, 10, 1);
const HOUR = 3_600_000;
const databaseUrl = process.env.DATABASE_URL;

/** Two store objects on one store, as two `serve` processes have (PostgreSQL's schema; SQLite: see below). */
interface SharedStore {
  name: "sqlite" | "postgres";
  open(): Promise<{ stores: [Store, Store]; cleanup(): Promise<void> }>;
}

/**
 * SQLite: one store object, given twice. Its transactions take the file's write lock at BEGIN, and better-sqlite3
 * waits for a lock synchronously: a second store object on the file in the same process would block the event loop
 * that the first one's transaction needs to finish. Processes sharing a file each have their own (e2e tests).
 */
const sqliteShared: SharedStore = {
  name: "sqlite",
  async open() {
    const folder = tempDir();
    const store = await openSqliteStore(join(folder.path, "shared.db"));
    return {
      stores: [store, store],
      async cleanup() {
        await store.close();
        folder.remove();
      },
    };
  },
};

function postgresShared(url: string): SharedStore {
  return {
    name: "postgres",
    async open() {
      const schema = `mg_test_${randomBytes(6).toString("hex")}`;
      const first = await openPostgresStore(url, { schema, maxConnections: 8 });
      const stores: [Store, Store] = [first, await openPostgresStore(url, { schema, maxConnections: 8 })];
      return {
        stores,
        async cleanup() {
          for (const store of stores) await store.close();
          await dropSchema(url, schema);
        },
      };
    },
  };
}

const shared: SharedStore[] = databaseUrl ? [sqliteShared, postgresShared(databaseUrl)] : [sqliteShared];

/** One job of `tenant` under `budgetId` (D, $0.03), as the API admits it. */
function admission(ref: string, options: Partial<Admission> & { job?: Partial<NewJob> } = {}): Admission {
  const tenant = options.tenant ?? "tok_a";
  const budgetId = options.budgetId === undefined ? "token:tok_a" : options.budgetId;
  return {
    tenant,
    jobs: [newDJob(ref, { id: `job_${ref}_${randomBytes(4).toString("hex")}`, tenant, tokenId: tenant, budgetId, ...options.job })],
    budgetId,
    differs: (stored: Job, wanted: NewJob) => JSON.stringify(stored.body) !== JSON.stringify(wanted.body),
    idempotency: null,
    batchId: null,
    ...options,
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openShared(kind: SharedStore): Promise<[Store, Store]> {
  const opened = await kind.open();
  cleanups.push(opened.cleanup);
  return opened.stores;
}

for (const kind of shared) {
  describe(`admission (${kind.name}): jobs stored, their estimates reserved and their key taken in one transaction`, () => {
    it("50 concurrent one-job admissions of $0.03 under a $0.09 budget, through two store objects on one store: exactly 3 are admitted and hold $0.09; the other 47 are refused over_budget and write nothing", async () => {
      const [one, two] = await openShared(kind);
      await one.setBudget("token:tok_a", 90_000, T0);
      const outcomes = await Promise.all(Array.from({ length: 50 }, (_, index) => (index % 2 === 0 ? one : two).admit([admission(`j${index}`)], T0 + index)));
      const admitted = outcomes.filter((outcomes) => outcomes[0]!.kind === "admitted");
      expect(admitted).toHaveLength(3);
      const refused = outcomes.map((each) => each[0]!).filter((outcome) => outcome.kind === "over_budget");
      expect(refused).toHaveLength(47);
      for (const outcome of refused) expect(outcome).toMatchObject({ neededMicroUsd: 30_000, budget: { ceilingMicroUsd: 90_000, committedMicroUsd: 90_000 } });
      expect((await one.budget("token:tok_a"))!.committedMicroUsd).toBe(90_000);
      const stored = await one.listJobs({ tenant: "tok_a" });
      expect(stored).toHaveLength(3);
      expect(stored.map((job) => job.budgetHeldMicroUsd)).toEqual([30_000, 30_000, 30_000]);
    });

    it("the same concurrency with two-line admissions (a batch each): 10 at once under $0.09 admit one (two jobs, $0.06); a second would pass the ceiling", async () => {
      const [one, two] = await openShared(kind);
      await one.setBudget("token:tok_a", 90_000, T0);
      const batch = (index: number): Admission => {
        const first = admission(`b${index}-1`);
        return { ...first, jobs: [...first.jobs, ...admission(`b${index}-2`).jobs] };
      };
      const outcomes = (await Promise.all(Array.from({ length: 10 }, (_, index) => (index % 2 === 0 ? one : two).admit([batch(index)], T0)))).map((each) => each[0]!);
      expect(outcomes.filter((outcome) => outcome.kind === "admitted")).toHaveLength(1);
      expect(outcomes.filter((outcome) => outcome.kind === "over_budget")).toHaveLength(9);
      expect((await one.budget("token:tok_a"))!.committedMicroUsd).toBe(60_000);
      expect(await one.listJobs({ tenant: "tok_a" })).toHaveLength(2);
    });

    it("an admission refused for one of its refs (stored with another request) writes nothing of it: no job, no reservation; one in the same write before and after it is admitted", async () => {
      const [store] = await openShared(kind);
      await store.setBudget("token:tok_a", 1_000_000, T0);
      await store.admit([admission("taken", { job: { body: { prompt: "first" } } })], T0);
      const mixed = admission("fresh");
      const conflicting: Admission = { ...mixed, jobs: [...mixed.jobs, ...admission("taken", { job: { body: { prompt: "another" } } }).jobs] };
      const outcomes = await store.admit([admission("before"), conflicting, admission("after")], T0 + 1);
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(["admitted", "ref_conflict", "admitted"]);
      expect(outcomes[1]).toMatchObject({ stored: { ref: "taken", body: { prompt: "first" } } });
      expect((await store.listJobs({ tenant: "tok_a" })).map((job) => job.ref).sort()).toEqual(["after", "before", "taken"]);
      expect((await store.budget("token:tok_a"))!.committedMicroUsd).toBe(90_000);
    });

    it("a ref stored as the same request is that job (created: false), reserving nothing again; under another tenant the same ref is another job", async () => {
      const [store] = await openShared(kind);
      await store.setBudget("token:tok_a", 1_000_000, T0);
      const [first] = await store.admit([admission("same")], T0);
      const [again] = await store.admit([admission("same")], T0 + 1);
      expect(first).toMatchObject({ kind: "admitted", jobs: [{ created: true }] });
      expect(again).toMatchObject({ kind: "admitted", jobs: [{ created: false, job: { id: first!.kind === "admitted" ? first!.jobs[0]!.job.id : "" } }] });
      expect((await store.budget("token:tok_a"))!.committedMicroUsd).toBe(30_000);
      const [other] = await store.admit([admission("same", { tenant: "tok_b", budgetId: null })], T0 + 2);
      expect(other).toMatchObject({ kind: "admitted", jobs: [{ created: true, job: { tenant: "tok_b" } }] });
    });

    it("Idempotency-Key: 20 concurrent admissions under one key (each a job of its own ref) make one job, every other answered with it (replayed, status 201); another request under the key is key_reused; once expired the key is free", async () => {
      const [one, two] = await openShared(kind);
      const keyed = (index: number, sha = "sha-1"): Admission => admission(`k${index}`, { budgetId: null, idempotency: { key: "key-1", requestSha256: sha, keepMs: 24 * HOUR } });
      const outcomes = (await Promise.all(Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? one : two).admit([keyed(index)], T0)))).map((each) => each[0]!);
      const admitted = outcomes.filter((outcome) => outcome.kind === "admitted");
      expect(admitted).toHaveLength(1);
      const id = admitted[0]!.kind === "admitted" ? admitted[0]!.jobs[0]!.job.id : "";
      const replayed = outcomes.filter((outcome) => outcome.kind === "replayed");
      expect(replayed).toHaveLength(19);
      for (const outcome of replayed) expect(outcome).toEqual({ kind: "replayed", status: 201, jobIds: [id], batchId: null });
      expect(await one.listJobs({ tenant: "tok_a" })).toHaveLength(1);
      expect((await one.admit([keyed(99, "sha-2")], T0 + HOUR))[0]).toEqual({ kind: "key_reused", key: "key-1" });
      // A day later the key is free: the same key makes a new job.
      const later = (await one.admit([keyed(100, "sha-2")], T0 + 25 * HOUR))[0]!;
      expect(later).toMatchObject({ kind: "admitted", jobs: [{ created: true, job: { ref: "k100" } }] });
      // The same key under another tenant is that tenant's own.
      const elsewhere = (await two.admit([{ ...keyed(101), tenant: "tok_b", jobs: [newDJob("k101", { tenant: "tok_b" })] }], T0 + HOUR))[0]!;
      expect(elsewhere.kind).toBe("admitted");
    });

    it("a key whose first request was refused (over budget) is not kept: the retry is decided again", async () => {
      const [store] = await openShared(kind);
      await store.setBudget("token:tok_a", 10_000, T0);
      const keyed = admission("r", { idempotency: { key: "key-r", requestSha256: "sha", keepMs: 24 * HOUR } });
      expect((await store.admit([keyed], T0))[0]!.kind).toBe("over_budget");
      await store.setBudget("token:tok_a", 100_000, T0 + 1);
      expect((await store.admit([keyed], T0 + 2))[0]).toMatchObject({ kind: "admitted", jobs: [{ created: true }] });
    });

    it("a reserved job's claim commits nothing more; cancelled before it is sent, it gives its reservation back; an older job (nothing reserved) commits its estimate at its claim", async () => {
      const [store] = await openShared(kind);
      await store.setBudget("token:tok_a", 100_000, T0);
      const [reserved] = await store.admit([admission("reserved")], T0);
      const id = reserved!.kind === "admitted" ? reserved!.jobs[0]!.job.id : "";
      expect((await store.budget("token:tok_a"))!.committedMicroUsd).toBe(30_000);
      expect((await store.claimForSubmit(id, "w", [], T0 + 1, 30_000)).kind).toBe("claimed");
      expect((await store.budget("token:tok_a"))!.committedMicroUsd).toBe(30_000);
      await store.transition(id, { state: "submitting" }, "queued", { leaseOwner: null }, "pushed back", T0 + 2);
      await store.transition(id, { state: "queued" }, "cancelled", { reason: "cancelled" }, "cancelled", T0 + 3);
      expect((await store.budget("token:tok_a"))!.committedMicroUsd).toBe(0);
      await store.insertJobs([newDJob("older", { tenant: "tok_a", budgetId: "token:tok_a" })], T0 + 4);
      expect((await store.getJob("job_older"))!.budgetHeldMicroUsd).toBe(0);
      expect((await store.claimForSubmit("job_older", "w", [], T0 + 5, 30_000)).kind).toBe("claimed");
      expect((await store.budget("token:tok_a"))!.committedMicroUsd).toBe(30_000);
    });

    it("a reserved job is not sent while charges above their estimates hold the budget over its ceiling", async () => {
      const [store] = await openShared(kind);
      await store.setBudget("token:tok_a", 60_000, T0);
      const outcomes = await store.admit([admission("first"), admission("second")], T0);
      const [first, second] = outcomes.map((outcome) => (outcome.kind === "admitted" ? outcome.jobs[0]!.job.id : ""));
      await store.claimForSubmit(first!, "w", [], T0 + 1, 30_000);
      await store.transition(first!, { state: "submitting" }, "running", { providerJobId: "p1" }, "accepted", T0 + 2);
      // Charged $0.05 against its $0.03 estimate: the budget now holds $0.08 of $0.06.
      await store.transition(first!, { state: "running" }, "failed", { chargeMicroUsd: 50_000, error: { code: "x", message: "y" } }, "failed, charged", T0 + 3);
      expect((await store.budget("token:tok_a"))!.committedMicroUsd).toBe(80_000);
      expect(await store.claimForSubmit(second!, "w", [], T0 + 4, 30_000)).toMatchObject({ kind: "over_budget", budget: { committedMicroUsd: 80_000 } });
    });
  });
}

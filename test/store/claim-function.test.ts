import { randomBytes } from "node:crypto";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClaimResult, SlotPoolRequest, Store } from "../../src/store/store.js";
import type { KyselyStore } from "../../src/store/kysely-store.js";
import { openPostgresStore } from "../../src/store/postgres.js";
import { dropSchema, newDJob } from "../helpers/stores.js";

/**
 * Migrations 15 and 16: on PostgreSQL a claim is one call of
 * `mediagate_claim_or_next` (with, in place of a job taken first, the next
 * free job of its model),
 * while SQLite makes the same decision with the store's own statements
 * (`claimByStatements`, `claimLocked`). Two implementations of the store's
 * most money-critical decision must not drift: here each case is set up
 * twice, side by side, one copy claimed through the function and the other
 * through the statements on the same PostgreSQL, and every answer and every
 * row the two claims wrote is compared. Then claims at once, from three
 * stores (three engines' connection pools) on one schema, for slots, for a
 * budget and in place of jobs taken first: none given out twice.
 */

const databaseUrl = process.env.DATABASE_URL;

interface PoolCase {
  /** The pool's row before the claim, or none (the claim creates it). */
  row: { configured: number; learned: number; blockedUntil: number } | null;
  /** Slots already held by other jobs. */
  held: number;
  /** The capacity the claim asks with (it may differ from the row's: a published capacity changed). */
  capacity: number;
}

interface ClaimCase {
  state: "queued" | "submitting" | "succeeded";
  attempts: number;
  estimate: number | null;
  budget: { ceiling: number; committed: number } | "missing" | null;
  notifyUrl: string | null;
  /** The store's notification policy: terminal changes only, or every change (MEDIAGATE_NOTIFY_EVENTS=all). */
  events: "terminal" | "all";
  defaultUrl: string | null;
  pools: PoolCase[];
}

const NOW = 50_000;

const poolCase: fc.Arbitrary<PoolCase> = fc.record({
  row: fc.option(
    fc.record({ configured: fc.integer({ min: 0, max: 4 }), learned: fc.integer({ min: 0, max: 4 }), blockedUntil: fc.constantFrom(0, NOW - 1, NOW, NOW + 5_000) }).map((row) => ({ ...row, learned: Math.min(row.learned, row.configured) })),
    { nil: null },
  ),
  held: fc.integer({ min: 0, max: 4 }),
  capacity: fc.integer({ min: 0, max: 4 }),
});

const claimCase: fc.Arbitrary<ClaimCase> = fc.record({
  state: fc.constantFrom("queued", "queued", "queued", "submitting", "succeeded"),
  attempts: fc.integer({ min: 0, max: 3 }),
  estimate: fc.option(fc.integer({ min: 0, max: 60_000 }), { nil: null }),
  budget: fc.oneof(
    fc.constant(null),
    fc.constant("missing" as const),
    fc.record({ ceiling: fc.integer({ min: 0, max: 100_000 }), committed: fc.integer({ min: 0, max: 100_000 }) }),
  ),
  notifyUrl: fc.constantFrom(null, "https://hooks.example/job"),
  events: fc.constantFrom("terminal", "all"),
  defaultUrl: fc.constantFrom(null, "https://hooks.example/default"),
  pools: fc.array(poolCase, { maxLength: 3 }),
});

describe.runIf(databaseUrl)("a claim on PostgreSQL: mediagate_claim_or_next and the store's own statements decide alike", () => {
  const schema = `mg_claim_${randomBytes(6).toString("hex")}`;
  let store: KyselyStore;
  let client: pg.Client;
  let cases = 0;

  beforeAll(async () => {
    store = await openPostgresStore(databaseUrl!, { schema, maxConnections: 4 });
    client = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${schema}` });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await store?.close();
    await dropSchema(databaseUrl!, schema);
  });

  /** One copy of `c`, its ids suffixed with `tag`: the job `job_<tag>` in a batch of its own, its pools, their holders, its budget. */
  async function setUp(c: ClaimCase, tag: string): Promise<{ jobId: string; pools: SlotPoolRequest[] }> {
    const batchId = `batch_${tag}`;
    const budgetId = c.budget === null ? null : `budget_${tag}`;
    if (c.budget !== null && c.budget !== "missing") {
      await store.setBudget(budgetId!, c.budget.ceiling, 1);
      await client.query("UPDATE budgets SET committed_micro_usd = $1 WHERE id = $2", [c.budget.committed, budgetId]);
    }
    const pools = c.pools.map((pool, index) => ({ key: `pool_${tag}_${index}`, capacity: pool.capacity }));
    const holders = c.pools.flatMap((pool, index) => Array.from({ length: pool.held }, (_, held) => ({ ref: `holder_${tag}_${index}_${held}`, pool: pools[index]!.key })));
    await store.insertJobs(
      [
        newDJob(tag, { batchId, budgetId, estimateMicroUsd: c.estimate, notifyUrl: c.notifyUrl }),
        ...holders.map((holder) => newDJob(holder.ref, { batchId: `holders_${tag}`, estimateMicroUsd: null })),
      ],
      NOW - 10_000,
    );
    await client.query("UPDATE jobs SET state = $1, attempts = $2 WHERE id = $3", [c.state, c.attempts, `job_${tag}`]);
    for (const [index, pool] of c.pools.entries()) {
      if (pool.row) {
        await client.query("INSERT INTO slot_pools (pool_key, configured_capacity, learned_capacity, blocked_until, updated_at) VALUES ($1, $2, $3, $4, 1)", [pools[index]!.key, pool.row.configured, pool.row.learned, pool.row.blockedUntil]);
      }
    }
    for (const holder of holders) await client.query("INSERT INTO slot_holds (pool_key, job_id, acquired_at) VALUES ($1, $2, 1)", [holder.pool, `job_${holder.ref}`]);
    return { jobId: `job_${tag}`, pools };
  }

  /** What a copy's claim left behind, its ids written back to the case's own (`tag` → `T`). */
  async function written(tag: string, jobId: string): Promise<unknown> {
    const rows = async (text: string, values: unknown[]) => (await client.query(text, values)).rows;
    const state = {
      job: await rows("SELECT * FROM jobs WHERE id = $1", [jobId]),
      events: await rows("SELECT at, from_state, to_state, reason, detail_json FROM job_events WHERE job_id = $1 ORDER BY id", [jobId]),
      holds: await rows("SELECT pool_key, acquired_at FROM slot_holds WHERE job_id = $1 ORDER BY pool_key", [jobId]),
      pools: await rows("SELECT * FROM slot_pools WHERE pool_key LIKE $1 ORDER BY pool_key", [`pool\\_${tag}\\_%`]),
      budgets: await rows("SELECT id, ceiling_micro_usd, committed_micro_usd, updated_at FROM budgets WHERE id = $1", [`budget_${tag}`]),
      notifications: await rows("SELECT job_id, batch_id, event_type, url, attempts, created_at, next_attempt_at FROM notifications WHERE job_id = $1", [jobId]),
    };
    return JSON.parse(JSON.stringify(state, withoutRank).replaceAll(tag, "T"));
  }

  /** The two copies of a case are queued one after the other, so their queue ranks differ by design (migration 21). */
  function withoutRank(key: string, value: unknown): unknown {
    return key === "queue_rank" || key === "queueRank" ? undefined : value;
  }

  function answer(result: ClaimResult, tag: string): unknown {
    const { instead: _instead, ...rest } = result as ClaimResult & { instead?: boolean };
    return JSON.parse(JSON.stringify(rest, withoutRank).replaceAll(tag, "T"));
  }

  /**
   * Sets `c` up twice, claims one copy through the function (`claim`) and the other through the statements, asked
   * for a job that is not there and given that copy's batch instead (as the SQLite store claims in place of a job
   * taken first): the answers, and every row each claim wrote, must be the same. Returns the function's answer.
   */
  async function claimedAlike(c: ClaimCase, claim: (copy: { jobId: string; pools: SlotPoolRequest[] }, tag: string) => Promise<ClaimResult>): Promise<ClaimResult> {
    const run = cases++;
    const [viaFunction, viaStatements] = [`f${run}`, `s${run}`];
    const one = await setUp(c, viaFunction);
    const other = await setUp(c, viaStatements);
    store.setNotificationPolicy({ events: c.events, defaultUrl: c.defaultUrl });
    const byFunction = await claim(one, viaFunction);
    const byStatements = await store.claimByStatements(`job_absent_${viaStatements}`, "engine-1", [], NOW, 30_000, { provider: "d", scope: { batchId: `batch_${viaStatements}` }, poolsOf: () => other.pools });
    expect(answer(byFunction, viaFunction)).toEqual(answer(byStatements, viaStatements));
    expect(await written(viaFunction, one.jobId)).toEqual(await written(viaStatements, other.jobId));
    // The job handed back is the job as stored.
    if (byFunction.kind === "claimed") expect(byFunction.job).toEqual(await store.getJob(one.jobId));
    return byFunction;
  }

  it("every case, set up twice: the answer, the job, its event, holds, pools, budget and notification are the same either way", async () => {
    await fc.assert(
      fc.asyncProperty(claimCase, async (c) => {
        // The job asked for, through mediagate_claim_or_next.
        await claimedAlike(c, (copy) => store.claimForSubmit(copy.jobId, "engine-1", copy.pools, NOW, 30_000));
      }),
      { numRuns: 150, seed: 20261127 },
    );
  });

  it("every case again, the function's copy claimed in place of a job taken first (the next of its model): the same answer and rows, said to be in its place", async () => {
    const sameAs = { model: "gen-2-pro", operation: null };
    await fc.assert(
      fc.asyncProperty(claimCase, async (c) => {
        const byFunction = await claimedAlike(c, (copy, tag) =>
          store.claimForSubmit(`job_absent_${tag}`, "engine-1", copy.pools, NOW, 30_000, { provider: "d", scope: { batchId: `batch_${tag}` }, poolsOf: () => null, sameAs }),
        );
        expect("instead" in byFunction && byFunction.instead).toBe(byFunction.kind !== "gone");
      }),
      { numRuns: 60, seed: 20261128 },
    );
  });

  it("in place of a job taken first, the function claims the queue's first due job of the same model and operation that no other engine is claiming: not another model's, batch's, one not yet due or one locked", async () => {
    const pools = [{ key: "pool_next", capacity: 5 }];
    await store.insertJobs(
      [
        newDJob("next_taken", { batchId: "batch_next" }),
        newDJob("next_ctx", { batchId: "batch_next", model: "gen-ctx-max" }),
        newDJob("next_edit", { batchId: "batch_next", operation: "edit" }),
        newDJob("next_locked", { batchId: "batch_next" }),
        newDJob("next_free", { batchId: "batch_next" }),
        newDJob("next_later", { batchId: "batch_next" }),
        newDJob("next_elsewhere", { batchId: "batch_other" }),
      ],
      NOW - 10_000,
    );
    // Queue order: taken, ctx, edit, locked, free, later (due only after NOW); the other batch's job is due first of all.
    for (const [index, ref] of ["next_taken", "next_ctx", "next_edit", "next_locked", "next_free"].entries()) {
      await client.query("UPDATE jobs SET next_attempt_at = $1 WHERE id = $2", [NOW - 5_000 + index, `job_${ref}`]);
    }
    await client.query("UPDATE jobs SET next_attempt_at = $1 WHERE id = 'job_next_later'", [NOW + 1]);
    await client.query("UPDATE jobs SET next_attempt_at = $1 WHERE id = 'job_next_elsewhere'", [NOW - 9_000]);
    await client.query("UPDATE jobs SET state = 'submitting' WHERE id = 'job_next_taken'");
    const instead = { provider: "d" as const, scope: { batchId: "batch_next" }, poolsOf: () => null, sameAs: { model: "gen-2-pro", operation: null } };
    const locker = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${schema}` });
    await locker.connect();
    try {
      // Another engine is mid-claim on job_next_locked.
      await locker.query("BEGIN");
      await locker.query("SELECT id FROM jobs WHERE id = 'job_next_locked' FOR UPDATE");
      const claim = await store.claimForSubmit("job_next_taken", "engine-1", pools, NOW, 30_000, instead);
      expect(claim).toMatchObject({ kind: "claimed", instead: true, job: { id: "job_next_free", state: "submitting", attempts: 1, slotsHeld: ["pool_next"] } });
      // Nothing of that model left free among the first due: gone (the store's statements then offer the others).
      expect(await store.claimForSubmit("job_next_taken", "engine-1", pools, NOW, 30_000, { ...instead, sameAs: { model: "gen-2-max", operation: null } })).toEqual({ kind: "gone" });
      await locker.query("ROLLBACK");
    } finally {
      await locker.end();
    }
    // A pool with no slot left refuses the job in its place as such, and it stays queued.
    await client.query("UPDATE slot_pools SET learned_capacity = 1 WHERE pool_key = 'pool_next'");
    expect(await store.claimForSubmit("job_next_taken", "engine-1", pools, NOW, 30_000, instead)).toEqual({ kind: "no_slot", poolKey: "pool_next", retryAt: null, instead: true });
    expect((await store.getJob("job_next_locked"))!.state).toBe("queued");
  });

  it("cases the draw may miss, by name: each answer kind is reached", async () => {
    const kinds = new Set<string>();
    const base: ClaimCase = { state: "queued", attempts: 0, estimate: 30_000, budget: null, notifyUrl: null, events: "terminal", defaultUrl: null, pools: [] };
    const named: ClaimCase[] = [
      base,
      { ...base, state: "succeeded" },
      { ...base, pools: [{ row: { configured: 2, learned: 2, blockedUntil: NOW + 1 }, held: 0, capacity: 2 }] },
      { ...base, pools: [{ row: null, held: 1, capacity: 1 }] },
      { ...base, budget: { ceiling: 50_000, committed: 30_000 } },
      { ...base, estimate: null, budget: { ceiling: 50_000, committed: 50_000 } },
      { ...base, pools: [{ row: { configured: 4, learned: 3, blockedUntil: 0 }, held: 1, capacity: 2 }], events: "all", defaultUrl: "https://hooks.example/default" },
    ];
    for (const [index, c] of named.entries()) {
      const one = await setUp(c, `n${index}`);
      const result = await store.claimForSubmit(one.jobId, "engine-1", one.pools, NOW, 30_000);
      kinds.add(result.kind);
    }
    expect([...kinds].sort()).toEqual(["claimed", "gone", "no_slot", "over_budget"]);
  });
});

describe.runIf(databaseUrl)("claims at once on PostgreSQL, from three stores on one schema (three engines)", () => {
  const schema = `mg_claim_race_${randomBytes(6).toString("hex")}`;
  let stores: Store[] = [];

  beforeAll(async () => {
    for (let index = 0; index < 3; index++) stores.push(await openPostgresStore(databaseUrl!, { schema, maxConnections: 6 }));
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    stores = [];
    await dropSchema(databaseUrl!, schema);
  });

  it("sixty claims at once for a pool of 7 slots: 7 are claimed, each job once, and the pool holds 7", async () => {
    const pool = [{ key: "race:slots", capacity: 7 }];
    const refs = Array.from({ length: 60 }, (_, index) => `slot_${index}`);
    await stores[0]!.insertJobs(refs.map((ref) => newDJob(ref, { batchId: "batch_slots" })), 1);
    const results = await Promise.all(refs.map((ref, index) => stores[index % 3]!.claimForSubmit(`job_${ref}`, `engine-${index % 3}`, pool, 2, 30_000)));
    const claimed = results.filter((result) => result.kind === "claimed");
    expect(claimed).toHaveLength(7);
    expect(results.filter((result) => result.kind === "no_slot")).toHaveLength(53);
    expect(new Set(claimed.map((result) => result.job.id)).size).toBe(7);
    // The last claim filled it: exactly one answer says so.
    expect(claimed.filter((result) => result.filled.includes("race:slots"))).toHaveLength(1);
    expect((await stores[1]!.claimForSubmit("job_slot_0", "late", pool, 3, 30_000)).kind).toMatch(/^(gone|no_slot)$/);
    const submitting = await stores[2]!.listJobs({ states: ["submitting"] });
    expect(submitting.map((job) => job.id).sort()).toEqual(claimed.map((result) => result.job.id).sort());
  });

  it("sixty claims at once, each asking for one of the queue's first three jobs with the batch's others instead, for a pool of 10 slots: no job claimed twice, the pool never past 10, and claims in place of a job taken first", async () => {
    const pool = [{ key: "race:instead", capacity: 10 }];
    const refs = Array.from({ length: 30 }, (_, index) => `instead_${String(index).padStart(2, "0")}`);
    await stores[0]!.insertJobs(refs.map((ref) => newDJob(ref, { batchId: "batch_instead" })), 1);
    const instead = { provider: "d" as const, scope: { batchId: "batch_instead" }, poolsOf: () => pool, sameAs: { model: "gen-2-pro", operation: null } };
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, index) => stores[index % 3]!.claimForSubmit(`job_${refs[index % 3]!}`, `engine-${index % 3}`, pool, 2, 30_000, instead)),
    );
    // Each answer is a claim, a full pool, or a job taken first with each job read in its place taken too (a claim
    // running at once holds its row): then the engine reads the queue again.
    expect(results.every((result) => ["claimed", "no_slot", "gone"].includes(result.kind))).toBe(true);
    const claimed = results.filter((result) => result.kind === "claimed");
    expect(claimed.length).toBeGreaterThan(3);
    expect(claimed.filter((result) => result.instead).length).toBeGreaterThan(0);
    // One engine after them, claiming in place of the first job until the pool is full: 10 in all, never more. The
    // full pool is told of a job claimed in its place when the first job was taken; when the claims at once filled
    // the pool before any of them took it (they may: each found it locked or the pool full), of the first job itself.
    for (let more = 0; more < 10; more++) {
      const next = await stores[more % 3]!.claimForSubmit(`job_${refs[0]!}`, "late", pool, 3, 30_000, instead);
      if (next.kind !== "claimed") {
        const firstTaken = claimed.some((result) => result.job.id === `job_${refs[0]!}`);
        expect(next).toEqual({ kind: "no_slot", poolKey: "race:instead", retryAt: null, ...(firstTaken ? { instead: true } : {}) });
        break;
      }
      claimed.push(next);
    }
    expect(claimed).toHaveLength(10);
    expect(new Set(claimed.map((result) => result.job.id)).size).toBe(10);
    const submitting = (await stores[2]!.listJobs({ states: ["submitting"] })).filter((job) => job.batchId === "batch_instead");
    expect(submitting.map((job) => job.id).sort()).toEqual(claimed.map((result) => result.job.id).sort());
    expect(submitting.every((job) => job.attempts === 1 && job.slotsHeld.length === 1)).toBe(true);
  });

  it("thirty claims at once under one budget of 100,000 for 30,000 each: 3 are claimed and 90,000 committed", async () => {
    await stores[0]!.setBudget("budget_race", 100_000, 1);
    const refs = Array.from({ length: 30 }, (_, index) => `budget_${index}`);
    await stores[0]!.insertJobs(refs.map((ref) => newDJob(ref, { batchId: "batch_budget", budgetId: "budget_race" })), 1);
    const results = await Promise.all(refs.map((ref, index) => stores[index % 3]!.claimForSubmit(`job_${ref}`, `engine-${index % 3}`, [], 2, 30_000)));
    expect(results.filter((result) => result.kind === "claimed")).toHaveLength(3);
    expect(results.filter((result) => result.kind === "over_budget")).toHaveLength(27);
    expect((await stores[1]!.budget("budget_race"))!.committedMicroUsd).toBe(90_000);
  });
});

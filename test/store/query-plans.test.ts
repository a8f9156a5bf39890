import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KyselyStore } from "../../src/store/kysely-store.js";
import { openPostgresStore } from "../../src/store/postgres.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { NewJob, Store } from "../../src/store/store.js";
import { dropSchema } from "../helpers/stores.js";

/**
 * Issue 10: every query the engine and a waiting command run on each step
 * is served by an index, so none reads in proportion to the jobs in the
 * store or the batch. Each hot store call runs once against a store holding
 * a few thousand jobs; every statement it sent is read back with the
 * database's own plan (SQLite `EXPLAIN QUERY PLAN`, PostgreSQL `EXPLAIN ANALYZE`
 * with sequential scans and sorts priced out, so a plan that still needs
 * one has no index to use, and no node may read rows only to discard them).
 */

const NOW = 10_000_000;
/** Rows a plan node may read and throw away beyond those it keeps: far fewer than the 400 finished jobs or the 3,500 queued. */
const MAX_DISCARDED = 50;
const OWNER = "mg:host:1:abcdef";
// Room for the claims each run of the hot calls makes beside the 20 jobs holding a slot (the plans are read twice).
const D_POOL = [{ key: "d:account", capacity: 64 }];

/** Tables that grow with the jobs (or the requests); the others hold one row per provider, pool or budget. */
const BIG_TABLES = ["jobs", "job_events", "outputs", "ledger", "rate_events", "webhook_deliveries", "slot_holds", "notifications"];

/**
 * Orderings allowed to sort, each bounded by something other than the jobs:
 * an engine's own jobs in flight (its lease), or one rate window's requests.
 */
const BOUNDED_SORTS: Array<{ statement: RegExp; why: string }> = [
  { statement: /"lease_owner" = \S+ and "state" in/, why: "an engine's own jobs in flight, bounded by its slots and in-flight limit" },
  { statement: /from "rate_events"/, why: "the requests of one rate window, bounded by its limit" },
  { statement: /as "head_a" union all/, why: "the heads of the providers' queues, each limited: at most six times the limit" },
  { statement: /"charge_state" in/, why: "charges awaiting the provider's settlement (B), read through jobs_settling: never the finished jobs" },
];

function job(id: string, overrides: Partial<NewJob> = {}): NewJob {
  return {
    id,
    ref: id,
    batchId: "batch_big",
    provider: "d",
    model: "gen-2-pro",
    operation: null,
    body: { prompt: id },
    facts: {},
    warnings: [],
    estimateMicroUsd: 30_000,
    estimateSource: "test",
    outDir: "/tmp/out",
    ...overrides,
  };
}

/** A store as it looks mid-run: a big queue, a finished past, a few jobs in flight, charges settling. */
async function fill(store: Store): Promise<void> {
  const jobs: NewJob[] = [];
  // The jobs that will be sent ask to be notified when they end.
  // Two API tokens' jobs (a token's search by ref reads its own refs only).
  for (let index = 0; index < 3_000; index++) jobs.push(job(`job_q${String(index).padStart(5, "0")}`, { tokenId: "tok_q", tenant: "tok_q", ...(index < 420 ? { notifyUrl: "https://hooks.example/done" } : {}) }));
  for (let index = 0; index < 500; index++) jobs.push(job(`job_o${String(index).padStart(5, "0")}`, { batchId: "batch_other", provider: "e", model: "v3", tokenId: "tok_o" }));
  // Common requests with a route, queued for D behind its native queue.
  const route = { current: "d/gen-2-pro", next: [], tried: [], fallbackOnFailure: false, failingSince: null };
  for (let index = 0; index < 20; index++) jobs.push(job(`job_r${String(index).padStart(5, "0")}`, { route }));
  await store.insertJobs(jobs, NOW - 60_000);
  // 420 sent: 20 running under this engine's lease, 400 finished (5 of them with a charge still to settle).
  for (let index = 0; index < 420; index++) {
    const id = `job_q${String(index).padStart(5, "0")}`;
    await store.claimForSubmit(id, OWNER, D_POOL, NOW - 50_000, 600_000);
    await store.transition(id, { state: "submitting" }, "running", { providerJobId: `p${index}`, nextAttemptAt: NOW - 1_000 }, "accepted", NOW - 49_000);
    if (index >= 20) {
      await store.transition(id, { state: "running" }, "capturing", {}, "done", NOW - 48_000);
      const charge = index >= 415 ? { chargeState: "pending" as const, chargeMicroUsd: null, nextAttemptAt: NOW - 1_000 } : { chargeState: "computed" as const, chargeMicroUsd: 30_000 };
      await store.transition(id, { state: "capturing" }, "succeeded", { ...charge, leaseOwner: null, leaseExpiresAt: null }, "saved", NOW - 47_000);
    }
  }
  // Their 400 notifications: most delivered long ago, five due for a retry now.
  const sent = await store.claimDueNotifications(NOW - 46_000, 1_000, 60_000);
  for (const [index, notification] of sent.entries()) {
    const outcome = index < 5 ? { kind: "retry" as const, nextAttemptAt: NOW - 1_000 } : { kind: "delivered" as const };
    await store.recordNotificationAttempt({ id: notification.id, attempt: 1, at: NOW - 45_000, status: index < 5 ? 500 : 200, error: null, outcome, event: { reason: "attempt", detail: null } });
  }
}

/** The hot calls: what an engine runs on every tick and every job step, and what a waiting command runs every second. */
const HOT_CALLS: Array<{ name: string; run: (store: Store) => Promise<unknown> }> = [
  { name: "dueQueued, whole store", run: (store) => store.dueQueued(NOW, 128, [], null) },
  { name: "queuedPastDeadline, whole store (the loop's look at deadlines)", run: (store) => store.queuedPastDeadline(NOW, 200) },
  { name: "queuedPastDeadline, one batch", run: (store) => store.queuedPastDeadline(NOW, 200, { batchId: "batch_big" }) },
  { name: "dueQueued, one batch", run: (store) => store.dueQueued(NOW, 128, [], { batchId: "batch_big" }) },
  { name: "dueQueued, skipping a halted provider", run: (store) => store.dueQueued(NOW, 128, ["e"], null) },
  { name: "nextDueAt, whole store", run: (store) => store.nextDueAt(OWNER, [], NOW, null) },
  { name: "nextDueAt, other work than the engine's own jobs (the loop's read)", run: (store) => store.nextDueAt(null, [], NOW, null, false) },
  { name: "nextDueAt, a command's other work, delivering notifications", run: (store) => store.nextDueAt(null, [], NOW, { batchId: "batch_big" }, false, true) },
  { name: "nextDueAt, one batch", run: (store) => store.nextDueAt(OWNER, [], NOW, { batchId: "batch_big" }) },
  { name: "claimForSubmit", run: (store) => store.claimForSubmit("job_q02000", OWNER, D_POOL, NOW, 600_000) },
  {
    name: "claimForSubmit of a job taken first: the next due one instead",
    run: (store) => store.claimForSubmit("job_q00000", OWNER, D_POOL, NOW, 600_000, { provider: "d", scope: { batchId: "batch_big" }, poolsOf: () => D_POOL, sameAs: { model: "gen-2-pro", operation: null } }),
  },
  {
    name: "claimForSubmit of a job taken first, none of its model free: the statements offer the others",
    run: (store) => store.claimForSubmit("job_q00000", OWNER, D_POOL, NOW, 600_000, { provider: "d", scope: { batchId: "batch_big" }, poolsOf: () => D_POOL, sameAs: { model: "no-such-model", operation: null } }),
  },
  { name: "dueOwned", run: (store) => store.dueOwned(OWNER, NOW, 256) },
  { name: "nextDueAt, an engine that delivers notifications", run: (store) => store.nextDueAt(OWNER, [], NOW, null, true, true) },
  { name: "claimDueNotifications", run: (store) => store.claimDueNotifications(NOW, 32, 60_000) },
  // A command's engine under MEDIAGATE_NOTIFY_URL: its own batch's (or its one job's) only.
  { name: "nextDueAt, a command's engine that delivers notifications", run: (store) => store.nextDueAt(OWNER, [], NOW, { batchId: "batch_big" }, true, true) },
  { name: "claimDueNotifications, one batch", run: (store) => store.claimDueNotifications(NOW, 32, 60_000, { batchId: "batch_big" }) },
  { name: "claimDueNotifications, a command's one job", run: (store) => store.claimDueNotifications(NOW, 32, 60_000, { jobIds: ["job_q00021"] }) },
  { name: "notificationsOwed, one batch", run: (store) => store.notificationsOwed({ batchId: "batch_big" }) },
  { name: "dueSettlements, whole store", run: (store) => store.dueSettlements(NOW, 64, null) },
  { name: "dueSettlements, one batch", run: (store) => store.dueSettlements(NOW, 64, { batchId: "batch_big" }) },
  { name: "updateJob", run: (store) => store.updateJob("job_q00001", { state: "running", leaseOwner: OWNER }, { nextAttemptAt: NOW + 5_000 }, NOW) },
  {
    name: "transition running → capturing",
    run: (store) => store.transition("job_q00002", { state: "running", leaseOwner: OWNER }, "capturing", {}, "done", NOW),
  },
  // A batch's job that ends looks for an unfinished job left in its batch (batch.completed, migration 23): one range of jobs_batch_queue.
  {
    name: "transition running → failed of a batch's job (its batch's end looked for)",
    run: (store) => store.transition("job_q00004", { state: "running", leaseOwner: OWNER }, "failed", { error: { code: "x", message: "y" }, leaseOwner: null }, "failed", NOW),
  },
  // The dashboard's batch page and a batch's cancel: a page of one state of a batch, never the batch.
  { name: "batchJobsInState, a page of a batch's queued jobs (its cancel)", run: (store) => store.batchJobsInState("batch_big", "queued", 200, "tok_q") },
  { name: "batchJobsInState, a batch's failures", run: (store) => store.batchJobsInState("batch_big", "failed", 20, "tok_q") },
  { name: "getJob", run: (store) => store.getJob("job_q00003") },
  // Every job read through the API or the dashboard estimates its start (issue 37): the tenants' lines, never the queue.
  { name: "queueShapes (queue positions)", run: (store) => store.queueShapes(["d", "e"]) },
  { name: "nextQueueRank (a job queued, or moved to its next target)", run: (store) => store.nextQueueRank("d", "local") },
  { name: "recentRenderSamples (a model's pace)", run: (store) => store.recentRenderSamples("d", "gen-2-pro", 50) },
  { name: "jobByProviderJobId (a webhook)", run: (store) => store.jobByProviderJobId("d", "p4") },
  { name: "renewLeases", run: (store) => store.renewLeases(OWNER, NOW + 600_000) },
  { name: "changedBriefs, one batch", run: (store) => store.changedBriefs({ batchId: "batch_big" }, NOW - 5_000, 1_000) },
  { name: "openCounts, one batch", run: (store) => store.openCounts({ batchId: "batch_big" }) },
  { name: "takeRateToken and answerRateToken", run: async (store) => {
    const take = await store.takeRateToken([{ key: "a:standard", limit: 180, windowMs: 60_000 }], NOW);
    if (take.granted) await store.answerRateToken(take.token, NOW + 100);
  } },
  { name: "releaseLeases", run: (store) => store.releaseLeases(OWNER) },
  // Not on every tick, but once per halt: it must not walk a halted provider's whole native queue to find the routed jobs.
  { name: "routedQueued (D halted)", run: (store) => store.routedQueued("d", 100, null) },
  { name: "routedQueued (D halted), one batch, next page", run: (store) => store.routedQueued("d", 100, { batchId: "batch_big" }, { nextAttemptAt: NOW - 60_000, id: "job_r00005" }) },
];

/**
 * What a `/metrics` scrape reads of the growing tables: every job counted, so
 * it cannot be bounded like the hot calls, but it is an aggregate read from
 * an index alone (a covering index, PostgreSQL's index-only scan), never
 * from the rows.
 */
const SCRAPE_CALLS: Array<{ name: string; run: (store: Store) => Promise<unknown> }> = [{ name: "jobCounts (jobs by provider and state)", run: (store) => store.jobCounts() }];

/**
 * The dashboard's and the API's search by the start of a ref (`ref_prefix`):
 * 100 of the 3,520 refs start with `job_q020` (all of them queued jobs of
 * token tok_q but the one claimForSubmit took). Each search reads those 100
 * from a range of an index on ref (a token's: on its token and ref) and
 * checks its other filters on them; a search that followed another index (the
 * jobs in creation order, a token's 3,000, every queued job) would read far more.
 */
const SEARCH_PREFIX = "job_q020";
const SEARCH_MATCHES = 100;
const SEARCH_CALLS: Array<{ name: string; run: (store: Store) => Promise<unknown>; index: { sqlite: RegExp; postgres: readonly string[] } }> = [
  {
    name: "every job (admin), newest first, one page",
    run: (store) => store.listJobs({ refPrefix: SEARCH_PREFIX, newestFirst: true, limit: 51 }),
    index: { sqlite: /^SEARCH jobs USING INDEX jobs_ref \(ref>\? AND ref<\?\)$/, postgres: ["jobs_ref_prefix"] },
  },
  {
    name: "one tenant's jobs, newest first, one page",
    run: (store) => store.listJobs({ refPrefix: SEARCH_PREFIX, tenant: "tok_q", newestFirst: true, limit: 51 }),
    // Where the tenant holds most of the refs, reading the range of every tenant's refs (jobs_ref_prefix) costs the
    // planner about the same: either reads the matches alone.
    index: { sqlite: /^SEARCH jobs USING INDEX jobs_tenant_ref \(tenant=\? AND ref>\? AND ref<\?\)$/, postgres: ["jobs_tenant_ref", "jobs_ref_prefix"] },
  },
  {
    name: "queued D jobs created in the last hour, the page after a cursor",
    run: (store) => store.listJobs({ refPrefix: SEARCH_PREFIX, states: ["queued"], provider: "d", createdAfter: NOW - 3_600_000, olderThan: { createdAt: NOW - 60_000, id: "job_q02050" }, newestFirst: true, limit: 51 }),
    index: { sqlite: /^SEARCH jobs USING INDEX jobs_ref \(ref>\? AND ref<\?\)$/, postgres: ["jobs_ref_prefix"] },
  },
];

interface PlanProblem {
  call: string;
  statement: string;
  plan: string;
}

/** Runs each hot call and collects the statements it sent. */
async function statementsOf(store: Store, listen: (sink: Array<{ sql: string; parameters: readonly unknown[] }> | null) => void, calls = HOT_CALLS) {
  const byCall: Array<{ call: string; statements: Array<{ sql: string; parameters: readonly unknown[] }> }> = [];
  for (const call of calls) {
    const statements: Array<{ sql: string; parameters: readonly unknown[] }> = [];
    listen(statements);
    await call.run(store);
    listen(null);
    byCall.push({ call: call.name, statements: statements.filter((statement) => !/^(begin|commit|rollback|select pg_advisory)/i.test(statement.sql.trim())) });
  }
  return byCall;
}

function boundedSort(sql: string): boolean {
  return BOUNDED_SORTS.some((allowed) => allowed.statement.test(sql));
}

describe("query plans of the hot path (SQLite)", () => {
  let folder: string;
  let store: KyselyStore;
  let sink: Array<{ sql: string; parameters: readonly unknown[] }> | null = null;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), "mediagate-plans-"));
    store = await openSqliteStore(join(folder, "plans.db"), { onQuery: (sql, parameters) => sink?.push({ sql, parameters }) });
    await fill(store);
  });
  afterAll(async () => {
    await store.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("every statement of every hot call searches an index: no table scanned, no full index walked, no ORDER BY sorted outside its bound", async () => {
    const calls = await statementsOf(store, (next) => (sink = next));
    // No ANALYZE: the store never runs it, so these are the plans it gets (with statistics, SQLite rightly scans a 20-row table).
    const database = new BetterSqlite3(join(folder, "plans.db"), { readonly: true });
    const problems: PlanProblem[] = [];
    let explained = 0;
    try {
      for (const { call, statements } of calls) {
        expect(statements.length, call).toBeGreaterThan(0);
        for (const statement of statements) {
          const rows = database.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`).all(...(statement.parameters as unknown[])) as Array<{ detail: string }>;
          explained++;
          for (const { detail } of rows) {
            const scanned = BIG_TABLES.find((table) => new RegExp(`^SCAN ${table}\\b`).test(detail));
            const sorted = /USE TEMP B-TREE FOR (ORDER BY|RIGHT PART OF ORDER BY)/.test(detail) && !boundedSort(statement.sql);
            if (scanned || sorted) problems.push({ call, statement: statement.sql, plan: rows.map((row) => row.detail).join(" | ") });
          }
        }
      }
    } finally {
      database.close();
    }
    expect(problems).toEqual([]);
    expect(explained).toBeGreaterThan(HOT_CALLS.length);
  });

  it("a search by the start of a ref reads one range of an index on ref (the matches only), then sorts those matches: the jobs table is never scanned, nor another index followed", async () => {
    const calls = await statementsOf(store, (next) => (sink = next), SEARCH_CALLS);
    const database = new BetterSqlite3(join(folder, "plans.db"), { readonly: true });
    try {
      for (const [index, { call, statements }] of calls.entries()) {
        expect(statements, call).toHaveLength(1);
        const statement = statements[0]!;
        const plan = (database.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`).all(...(statement.parameters as unknown[])) as Array<{ detail: string }>).map((row) => row.detail);
        expect(plan.filter((detail) => /^(SEARCH|SCAN) /.test(detail)), `${call}: ${plan.join(" | ")}`).toEqual([expect.stringMatching(SEARCH_CALLS[index]!.index.sqlite)]);
      }
      expect(await SEARCH_CALLS[0]!.run(store)).toHaveLength(51);
      expect(await SEARCH_CALLS[2]!.run(store)).toHaveLength(49);
    } finally {
      database.close();
    }
  });

  it("a search by prompt text reads one tenant's newest jobs from jobs_tenant_created, at most its window, then those rows by id: the jobs table is never scanned (a bounded scan, app/prompt-search.ts)", async () => {
    const calls = await statementsOf(store, (next) => (sink = next), [
      { name: "searchRecentBodies, one tenant", run: (store) => store.searchRecentBodies({ text: "job_q0200", tenant: "tok_q", window: 2_000, limit: 51 }) },
      { name: "searchRecentBodies, one tenant, after a cursor", run: (store) => store.searchRecentBodies({ text: "job_q0200", tenant: "tok_q", window: 2_000, limit: 51, olderThan: { createdAt: NOW, id: "job_q02005" } }) },
    ]);
    const database = new BetterSqlite3(join(folder, "plans.db"), { readonly: true });
    try {
      for (const { call, statements } of calls) {
        expect(statements, call).toHaveLength(1);
        const statement = statements[0]!;
        const plan = (database.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`).all(...(statement.parameters as unknown[])) as Array<{ detail: string }>).map((row) => row.detail);
        expect(plan.some((detail) => /^SEARCH jobs USING (COVERING )?INDEX jobs_tenant_created \(tenant=\?\)$/.test(detail)), `${call}: ${plan.join(" | ")}`).toBe(true);
        expect(plan.filter((detail) => /^SCAN jobs\b/.test(detail)), `${call}: ${plan.join(" | ")}`).toEqual([]);
      }
      expect(((await store.searchRecentBodies({ text: "job_q0200", tenant: "tok_q", window: 2_000, limit: 51 })) as Array<{ id: string }>).map((job) => job.id)).toEqual(
        Array.from({ length: 10 }, (_, index) => `job_q0200${9 - index}`),
      );
    } finally {
      database.close();
    }
  });

  it("no partial index compares a column with a value: a statement that binds that column would be planned again on every run", async () => {
    // To know whether a partial index can serve a statement, SQLite compares the statement's terms with the index's
    // predicate; a bound value compared with a constant there (`state = ?` against `state = 'queued'`) marks the
    // statement to be planned again whenever new values are bound, that is on every run. A predicate made only of
    // IS NULL and IS NOT NULL tests compares no bound value. (Migration 14: the queue's heads took 576 µs a call, 176 µs after.)
    const database = new BetterSqlite3(join(folder, "plans.db"), { readonly: true });
    try {
      const indexes = database.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'").all() as Array<{ name: string; sql: string }>;
      expect(indexes.map((index) => index.name).sort()).toEqual(["jobs_deadline", "jobs_queue_rank", "jobs_routed_queue", "notifications_batch_due", "notifications_due"]);
      const comparing = indexes.filter(({ sql }) => !sql.replace(/^.*? WHERE /s, "").split(/\s+AND\s+/i).every((term) => /^"?\w+"?\s+IS\s+(NOT\s+)?NULL;?$/i.test(term.trim())));
      expect(comparing).toEqual([]);
    } finally {
      database.close();
    }
  });

  it("a /metrics scrape counts the jobs from a covering index: no row of a growing table is read, nothing is sorted", async () => {
    const calls = await statementsOf(store, (next) => (sink = next), SCRAPE_CALLS);
    const database = new BetterSqlite3(join(folder, "plans.db"), { readonly: true });
    const problems: PlanProblem[] = [];
    try {
      for (const { call, statements } of calls) {
        expect(statements.length, call).toBeGreaterThan(0);
        for (const statement of statements) {
          const rows = database.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`).all(...(statement.parameters as unknown[])) as Array<{ detail: string }>;
          for (const { detail } of rows) {
            const rowsRead = BIG_TABLES.some((table) => new RegExp(`^(SCAN|SEARCH) ${table}\\b`).test(detail)) && !/USING COVERING INDEX/.test(detail);
            if (rowsRead || /USE TEMP B-TREE/.test(detail)) problems.push({ call, statement: statement.sql, plan: rows.map((row) => row.detail).join(" | ") });
          }
        }
      }
    } finally {
      database.close();
    }
    expect(problems).toEqual([]);
  });
});

const databaseUrl = process.env.DATABASE_URL;

describe.runIf(databaseUrl)("query plans of the hot path (PostgreSQL)", () => {
  const schema = `mg_plans_${randomBytes(6).toString("hex")}`;
  let store: KyselyStore;
  let sink: Array<{ sql: string; parameters: readonly unknown[] }> | null = null;
  beforeAll(async () => {
    store = await openPostgresStore(databaseUrl!, { schema, maxConnections: 2, onQuery: (sql, parameters) => sink?.push({ sql, parameters }) });
    await fill(store);
  });
  afterAll(async () => {
    await store.close();
    await dropSchema(databaseUrl!, schema);
  });

  /**
   * Explains every statement of the hot calls with sequential scans and sorts priced out; `generic` explains the plan
   * a named statement settles on (planned once for any values: the store prepares its hot statements by name) instead
   * of one planned for these values.
   */
  async function hotPlanProblems(generic: boolean): Promise<{ problems: PlanProblem[]; explained: number }> {
    const calls = await statementsOf(store, (next) => (sink = next));
    const client = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${schema}` });
    await client.connect();
    const problems: PlanProblem[] = [];
    let explained = 0;
    try {
      await client.query("ANALYZE");
      // Priced out, not forbidden: a plan that still scans or sorts has no index that would do.
      await client.query("SET enable_seqscan = off");
      await client.query("SET enable_sort = off");
      if (generic) await client.query("SET plan_cache_mode = force_generic_plan");
      for (const { call, statements } of calls) {
        expect(statements.length, call).toBeGreaterThan(0);
        for (const statement of statements) {
          // An insert reads nothing, and run again it would only collide with the row it made; so would a statement that
          // holds a slot beside its update, whose plan is explained without running it.
          const collides = /^\s*insert/i.test(statement.sql) || /insert into "slot_holds"/i.test(statement.sql);
          const options = `${collides ? "" : "ANALYZE, "}FORMAT JSON`;
          // A statement that writes is explained inside a transaction that is rolled back.
          await client.query("BEGIN");
          try {
            let plans: unknown[];
            if (/^select mediagate_claim_or_next\(/i.test(statement.sql)) {
              // The job asked for is put back and claimed again; one taken first is not, and the job in its place is
              // claimed, or none of its model is free (the statements then offer the others).
              const noneFree = /none of its model free/.test(call);
              plans = await nestedPlans(client, statement, generic, !/taken first/.test(call), noneFree ? "gone" : "claimed");
              // The function's statements (lock the job, the queue in its place, lock and count the pool, hold, update,
              // event) were each explained.
              expect(plans.length, call).toBeGreaterThanOrEqual(noneFree ? 2 : 6);
            } else if (generic) {
              await client.query(`PREPARE hot AS ${statement.sql}`);
              plans = [(await client.query(`EXPLAIN (${options}) EXECUTE hot(${statement.parameters.map((value) => literal(client, value)).join(", ")})`)).rows[0]!["QUERY PLAN"]];
            } else plans = [(await client.query(`EXPLAIN (${options}) ${statement.sql}`, [...statement.parameters])).rows[0]!["QUERY PLAN"]];
            for (const plan of plans) {
              explained++;
              const nodes = planNodes(plan);
              for (const node of nodes) {
                const scanned = node["Node Type"] === "Seq Scan" && BIG_TABLES.includes(String(node["Relation Name"]));
                const sorted = node["Node Type"] === "Sort" && !boundedSort(statement.sql);
                // An index that finds the rows only to throw most of them away (the finished jobs, say) is a scan by another name.
                const thrownAway = Number(node["Rows Removed by Filter"] ?? 0) + Number(node["Rows Removed by Index Recheck"] ?? 0);
                const discarded = thrownAway > MAX_DISCARDED && thrownAway > Number(node["Actual Rows"] ?? 0);
                if (scanned || sorted || discarded) problems.push({ call, statement: statement.sql, plan: nodes.map((item) => `${item["Node Type"]}${item["Relation Name"] ? ` on ${item["Relation Name"]}` : ""}${item["Index Name"] ? ` using ${item["Index Name"]}` : ""}${item["Rows Removed by Filter"] ? ` (${item["Rows Removed by Filter"]} discarded)` : ""}`).join(" > ") });
              }
            }
          } finally {
            await client.query("ROLLBACK");
            // A prepared statement outlives the transaction it was made in.
            if (generic) await client.query("DEALLOCATE ALL");
          }
        }
      }
    } finally {
      await client.end();
    }
    return { problems, explained };
  }

  it("every statement of every hot call is planned on an index even with sequential scans and sorts priced out", async () => {
    const { problems, explained } = await hotPlanProblems(false);
    expect(problems).toEqual([]);
    expect(explained).toBeGreaterThan(HOT_CALLS.length);
  });

  it("so is the generic plan of each (planned once for any values), which a named statement of the store settles on", async () => {
    const { problems, explained } = await hotPlanProblems(true);
    expect(problems).toEqual([]);
    expect(explained).toBeGreaterThan(HOT_CALLS.length);
  });

  it("a search by the start of a ref reads one range of jobs_ref_prefix or, for a tenant, jobs_tenant_ref (compared as \"C\"): the rows of jobs it reads are the matches, sorted; with sequential scans priced out, nothing else is read", async () => {
    const calls = await statementsOf(store, (next) => (sink = next), SEARCH_CALLS);
    const client = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${schema}` });
    await client.connect();
    try {
      await client.query("ANALYZE");
      // Sorting the matches is the plan wanted (the page is the newest of them): only scans are priced out.
      await client.query("SET enable_seqscan = off");
      for (const [index, { call, statements }] of calls.entries()) {
        expect(statements, call).toHaveLength(1);
        const statement = statements[0]!;
        const result = await client.query<{ "QUERY PLAN": unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`, [...statement.parameters]);
        const nodes = planNodes(result.rows[0]!["QUERY PLAN"]);
        const shown = `${call}: ${nodes.map((node) => `${node["Node Type"]}${node["Index Name"] ? ` using ${node["Index Name"]}` : ""} (${node["Actual Rows"]} rows${node["Rows Removed by Filter"] ? `, ${node["Rows Removed by Filter"]} discarded` : ""})`).join(" > ")}`;
        const indexes = nodes.filter((node) => node["Index Name"] !== undefined).map((node) => node["Index Name"]);
        expect(indexes, shown).toHaveLength(1);
        expect(SEARCH_CALLS[index]!.index.postgres, shown).toContain(indexes[0]);
        // The rows of jobs read, kept or discarded by the other filters, are the matches (an index may also point at
        // row versions an update left behind, which the heap skips).
        for (const node of nodes.filter((each) => each["Relation Name"] === "jobs")) {
          expect(Number(node["Actual Rows"]) + Number(node["Rows Removed by Filter"] ?? 0) + Number(node["Rows Removed by Index Recheck"] ?? 0), shown).toBeLessThanOrEqual(SEARCH_MATCHES);
        }
        expect(nodes.some((node) => node["Node Type"] === "Seq Scan"), shown).toBe(false);
      }
    } finally {
      await client.end();
    }
  });

  it("a /metrics scrape counts the jobs by an index-only scan: no sequential scan, no sort, no heap read once the table is vacuumed", async () => {
    const calls = await statementsOf(store, (next) => (sink = next), SCRAPE_CALLS);
    const client = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${schema}` });
    await client.connect();
    const problems: PlanProblem[] = [];
    try {
      // Autovacuum keeps the visibility map current in production; here it is made current at once.
      await client.query("VACUUM ANALYZE jobs");
      await client.query("SET enable_seqscan = off");
      await client.query("SET enable_sort = off");
      for (const { call, statements } of calls) {
        expect(statements.length, call).toBeGreaterThan(0);
        for (const statement of statements) {
          const result = await client.query<{ "QUERY PLAN": unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`, [...statement.parameters]);
          const nodes = planNodes(result.rows[0]!["QUERY PLAN"]);
          for (const node of nodes) {
            const onBigTable = BIG_TABLES.includes(String(node["Relation Name"]));
            const rowsRead = onBigTable && node["Node Type"] !== "Index Only Scan";
            const heapRead = Number(node["Heap Fetches"] ?? 0) > MAX_DISCARDED;
            if (rowsRead || heapRead || node["Node Type"] === "Sort") {
              problems.push({ call, statement: statement.sql, plan: nodes.map((item) => `${item["Node Type"]}${item["Relation Name"] ? ` on ${item["Relation Name"]}` : ""}${item["Index Name"] ? ` using ${item["Index Name"]}` : ""}${item["Heap Fetches"] !== undefined ? ` (${item["Heap Fetches"]} heap fetches)` : ""}`).join(" > ") });
            }
          }
        }
      }
    } finally {
      await client.end();
    }
    expect(problems).toEqual([]);
  });
});

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/**
 * The plans of the statements a call of `mediagate_claim_or_next` (migrations 15 and 16) runs inside it, as
 * PostgreSQL's auto_explain reports them (analysed, each nested statement, sent to this client as LOG messages), with
 * the jobs asked for put back as they were before the store claimed one, so that the call takes every step of a claim
 * again.
 * Run inside the caller's transaction, which rolls it all back. `generic`: each statement's generic plan (PL/pgSQL
 * keeps its statements prepared, as the store does its own).
 */
async function nestedPlans(client: pg.Client, statement: { sql: string; parameters: readonly unknown[] }, generic: boolean, putBack: boolean, answered: "claimed" | "gone"): Promise<unknown[]> {
  // The function's parameters: the five of the job in place of one taken first, then the job asked for.
  const jobId = statement.parameters[5] as string;
  if (putBack) {
    await client.query("UPDATE jobs SET state = 'queued', lease_owner = NULL, attempts = 0 WHERE id = $1", [jobId]);
    await client.query("DELETE FROM slot_holds WHERE job_id = $1", [jobId]);
  }
  await client.query("LOAD 'auto_explain'");
  for (const setting of ["auto_explain.log_min_duration = 0", "auto_explain.log_nested_statements = on", "auto_explain.log_analyze = on", "auto_explain.log_format = json", "auto_explain.log_level = log", "client_min_messages = log"]) {
    await client.query(`SET LOCAL ${setting}`);
  }
  if (generic) await client.query("SET LOCAL plan_cache_mode = force_generic_plan");
  const plans: unknown[] = [];
  const onNotice = (notice: { message?: string }) => {
    const at = notice.message?.indexOf("{") ?? -1;
    const plan = at >= 0 ? (JSON.parse(notice.message!.slice(at)) as { Plan: PlanNode; "Query Text"?: string }) : null;
    // The call's own plan (a Result) is reported last; the nested statements' before it.
    if (plan && !/mediagate_claim_or_next\(/.test(plan["Query Text"] ?? "")) plans.push([plan]);
  };
  client.on("notice", onNotice);
  try {
    const [answer] = (await client.query<{ claim: { kind: string } }>(statement.sql, [...statement.parameters])).rows;
    expect(answer!.claim.kind).toBe(answered);
  } finally {
    client.off("notice", onNotice);
  }
  return plans;
}

/** A statement's parameter written into SQL (EXECUTE takes its values as expressions). */
function literal(client: pg.Client, value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  if (Array.isArray(value)) return value.length === 0 ? "'{}'" : `ARRAY[${value.map((item) => literal(client, item)).join(", ")}]`;
  return client.escapeLiteral(String(value));
}

function planNodes(explained: unknown): PlanNode[] {
  const root = (explained as Array<{ Plan: PlanNode }>)[0]!.Plan;
  const nodes: PlanNode[] = [];
  const visit = (node: PlanNode) => {
    nodes.push(node);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(root);
  return nodes;
}

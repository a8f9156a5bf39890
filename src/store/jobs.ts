import { type SqlBool, sql } from "kysely";
import type { Job, JobOutput } from "../core/job.js";
import type { ProviderId } from "../core/provider-id.js";
import { LOCAL_TENANT } from "../core/tenant.js";
import type { Db, StoreContext } from "./context.js";
import { refRange } from "./ref-prefix.js";
import { literalLimit } from "./reusable.js";
import { eventRow, rowToJob, rowToOutput, rowWithRequestToJob } from "./rows.js";
import { IDS_PER_STATEMENT, scopeParts } from "./scope.js";
import type { JobFilter, NewJob, RenderSample } from "./store.js";

/** Jobs as stored: queued with their first events, and read by id, ref, the provider's id or a filter, with their outputs. */

/** New jobs inserted per statement on SQLite: about 40 columns each, far inside its limit on bound parameters. */
const INSERT_CHUNK = 500;
/**
 * New jobs inserted per statement on PostgreSQL, where a column of them is one
 * array parameter (`unnest`): bounded only to keep each statement's text a few
 * megabytes.
 */
const INSERT_CHUNK_POSTGRES = 5_000;
/** The columns of a new job's row that PostgreSQL stores as integers (`unnest` needs each array's type). */
const INTEGER_JOB_COLUMNS: ReadonlySet<string> = new Set([
  "attempts",
  "estimate_micro_usd",
  "charge_micro_usd",
  "lease_expires_at",
  "next_attempt_at",
  "created_at",
  "updated_at",
  "submitted_at",
  "submit_sent_at",
  "provider_done_at",
  "finished_at",
  "tracking_deadline_at",
  "deadline_at",
  "queue_rank",
  "last_pending_elapsed_ms",
  "poll_failures",
  "budget_held_micro_usd",
]);

/**
 * New jobs and their first events in one PostgreSQL statement: each column an
 * array parameter (`unnest`), not a parameter per value (a chunk of 500 rows was
 * 21,000 parameters to send and parse), the events written by a data-modifying
 * WITH. Every column of `newJobRow` is written, so the two stay in step.
 * A ref its tenant stored meanwhile in another transaction (two clients sending one ref at
 * once) is skipped, not an error: `ON CONFLICT` waits for that transaction
 * and keeps its row. Returns the ids of the jobs this statement created.
 */
async function insertJobsWithEventsPostgres(trx: Db, rows: ReadonlyArray<ReturnType<typeof newJobRow>>, events: ReadonlyArray<ReturnType<typeof eventRow>>): Promise<Set<string>> {
  const columns = Object.keys(rows[0]!) as Array<keyof ReturnType<typeof newJobRow>>;
  const arrays = columns.map((column) => sql`${rows.map((row) => row[column])}::${sql.raw(INTEGER_JOB_COLUMNS.has(column) ? "bigint" : "text")}[]`);
  const eventColumns = Object.keys(events[0]!) as Array<keyof ReturnType<typeof eventRow>>;
  const eventArrays = eventColumns.map((column) => sql`${events.map((row) => row[column])}::${sql.raw(column === "at" ? "bigint" : "text")}[]`);
  const created = await sql<{ job_id: string }>`
    with added as (
      insert into jobs (${sql.join(columns.map((column) => sql.ref(column)))})
      select * from unnest(${sql.join(arrays)})
      on conflict (tenant, ref) do nothing
      returning id
    )
    insert into job_events (${sql.join(eventColumns.map((column) => sql.ref(column)))})
    select * from unnest(${sql.join(eventArrays)}) as event (${sql.join(eventColumns.map((column) => sql.ref(column)))})
    where event.job_id in (select id from added)
    returning job_id
  `.execute(trx);
  return new Set(created.rows.map((row) => row.job_id));
}

/** The row of a job just validated and queued; `reserved`: it holds its estimate in its budget from now (an admission's). */
function newJobRow(job: NewJob, now: number, reserved: boolean) {
  return {
    id: job.id,
    ref: job.ref,
    batch_id: job.batchId,
    provider: job.provider,
    model: job.model,
    operation: job.operation,
    body_json: JSON.stringify(job.body),
    facts_json: JSON.stringify(job.facts),
    warnings_json: JSON.stringify(job.warnings),
    state: "queued" as const,
    reason: null,
    attempts: 0,
    idempotency_key: null,
    provider_job_id: null,
    handles_json: null,
    provider_status: null,
    estimate_micro_usd: job.estimateMicroUsd,
    estimate_source: job.estimateSource,
    charge_micro_usd: null,
    charge_source: null,
    charge_state: "none" as const,
    error_code: null,
    error_message: null,
    error_detail_json: null,
    out_dir: job.outDir,
    lease_owner: null,
    lease_expires_at: null,
    next_attempt_at: now,
    created_at: now,
    updated_at: now,
    submitted_at: null,
    submit_sent_at: null,
    provider_done_at: null,
    finished_at: null,
    tracking_deadline_at: null,
    deadline_at: job.deadlineAt ?? null,
    queue_rank: null as number | null,
    slots_held_json: "[]",
    last_pending_elapsed_ms: null,
    poll_failures: 0,
    budget_id: job.budgetId ?? null,
    budget_held_micro_usd: reserved && job.budgetId ? (job.estimateMicroUsd ?? 0) : 0,
    blocked_code: null,
    route_json: job.route ? JSON.stringify(job.route) : null,
    token_id: job.tokenId ?? null,
    notify_url: job.notifyUrl ?? null,
    tenant: job.tenant ?? LOCAL_TENANT,
    trace_id: job.trace?.traceId ?? null,
    trace_span_id: job.trace?.spanId ?? null,
    trace_parent_span_id: job.trace?.parentSpanId ?? null,
  };
}

/**
 * Each new job's queue rank (migration 21): one more than the last rank
 * queued for its tenant at its provider (one seek of jobs_queue_rank per
 * pair), then in the order given.
 */
async function queueRanksFor(trx: Db, jobs: readonly NewJob[]): Promise<number[]> {
  const next = new Map<string, number>();
  const ranks: number[] = [];
  for (const job of jobs) {
    const tenant = job.tenant ?? LOCAL_TENANT;
    const key = `${job.provider}\u0000${tenant}`;
    let rank = next.get(key);
    rank ??= await nextQueueRank(trx, job.provider, tenant);
    ranks.push(rank);
    next.set(key, rank + 1);
  }
  return ranks;
}

/** One more than the last rank queued for `tenant` at `provider` (one seek of jobs_queue_rank, migration 21); 1 for an empty line. */
export async function nextQueueRank(db: Db, provider: string, tenant: string): Promise<number> {
  const last = await db
    .selectFrom("jobs")
    .select("queue_rank")
    .where("state", "=", "queued")
    .where("provider", "=", provider)
    .where("tenant", "=", tenant)
    .where("queue_rank", "is not", null)
    .where("blocked_code", "is", null)
    .orderBy("queue_rank", "desc")
    .limit(1)
    .executeTakeFirst();
  return Number(last?.queue_rank ?? 0) + 1;
}

/** A ref as its tenant knows it: refs are unique per tenant (migration 17), so a lookup key holds both. */
function tenantRef(job: Pick<NewJob, "tenant" | "ref">): string {
  return `${job.tenant ?? LOCAL_TENANT}\u0000${job.ref}`;
}

export async function insertJobs(context: StoreContext, jobs: NewJob[], now: number): Promise<Array<{ job: Job; created: boolean }>> {
  return context.db.transaction().execute(async (trx) => {
    const results = await insertJobsIn(context, trx, jobs, now, false);
    if (results.some((result) => result.created)) await context.announce(trx);
    return results;
  });
}

/**
 * insertJobs inside a transaction of the caller's (an admission's). With
 * `reserved`, each job created holds its estimate in its budget from now (the
 * caller commits their sum to the budget in the same transaction).
 */
export async function insertJobsIn(context: StoreContext, trx: Db, jobs: readonly NewJob[], now: number, reserved: boolean): Promise<Array<{ job: Job; created: boolean }>> {
  const results: Array<{ job: Job; created: boolean }> = [];
  // A ref given twice in one call is created once; the second gets the first's job, as a ref stored before would.
  const createdHere = new Map<string, Job>();
  // A few hundred jobs per statement (a 20,000-line batch is queued in seconds, not one statement per column of work).
  const chunkSize = context.dialect === "postgres" ? INSERT_CHUNK_POSTGRES : INSERT_CHUNK;
  for (let start = 0; start < jobs.length; start += chunkSize) {
    const chunk = jobs.slice(start, start + chunkSize);
    // PostgreSQL's insert skips a ref stored already (on conflict) and says which it made, so only those refs are read
    // (below); SQLite's is told beforehand.
    const stored = new Map(context.dialect === "postgres" ? [] : (await jobsWithTenantRefs(context, trx, chunk)).map((job) => [tenantRef(job), job]));
    const fresh: NewJob[] = [];
    const pendingRefs = new Set<string>();
    for (const job of chunk) {
      const key = tenantRef(job);
      if (stored.has(key) || createdHere.has(key) || pendingRefs.has(key)) continue;
      pendingRefs.add(key);
      fresh.push(job);
    }
    if (fresh.length > 0) {
      // Every column is set here, so the rows as written are the rows as stored: not read back (a 20,000-line
      // batch would otherwise send 70 MB back from PostgreSQL to be parsed).
      const ranks = await queueRanksFor(trx, fresh);
      const rows = fresh.map((job, index) => ({ ...newJobRow(job, now, reserved), queue_rank: ranks[index]! }));
      const events = fresh.map((job) =>
        eventRow(job.id, now, null, "queued", "validated, estimated and queued", { estimateMicroUsd: job.estimateMicroUsd, estimateSource: job.estimateSource }),
      );
      let createdIds: Set<string> | null = null;
      if (context.dialect === "postgres") createdIds = await insertJobsWithEventsPostgres(trx, rows, events);
      else {
        // SQLite's write transactions run one at a time: no other can have stored a ref since the look above.
        await trx.insertInto("jobs").values(rows).execute();
        await trx.insertInto("job_events").values(events).execute();
      }
      // A ref stored already (PostgreSQL, which did not look first) or by another transaction since the look: its job.
      const taken = createdIds === null ? [] : fresh.filter((job) => !createdIds.has(job.id));
      if (taken.length > 0) for (const job of await jobsWithTenantRefs(context, trx, taken)) stored.set(tenantRef(job), job);
      // Handed back as stored, its body, facts and warnings the objects given (not parsed again from the row).
      fresh.forEach((job, index) => {
        if (!stored.has(tenantRef(job))) createdHere.set(tenantRef(job), rowWithRequestToJob(rows[index]!, job));
      });
    }
    const reported = new Set<string>();
    for (const job of chunk) {
      const key = tenantRef(job);
      const existing = stored.get(key);
      if (existing) results.push({ job: existing, created: false });
      else {
        const created = createdHere.get(key)!;
        // The first mention of a ref created here is its creation; a repeat is an existing job.
        const first = job.id === created.id && !reported.has(key);
        reported.add(key);
        results.push({ job: created, created: first });
      }
    }
  }
  return results;
}

export async function getJob(context: StoreContext, id: string): Promise<Job | null> {
  const [row] = await context.reusable(context.db, "getJob", (slot) => context.db.selectFrom("jobs").selectAll().where("id", "=", slot<string>("id")), { id });
  return row ? rowToJob(row) : null;
}

export async function findJob(context: StoreContext, idOrRef: string, tenant: string = LOCAL_TENANT): Promise<Job | null> {
  const row =
    (await context.db.selectFrom("jobs").selectAll().where("id", "=", idOrRef).executeTakeFirst()) ??
    (await context.db.selectFrom("jobs").selectAll().where("tenant", "=", tenant).where("ref", "=", idOrRef).executeTakeFirst());
  return row ? rowToJob(row) : null;
}

export async function jobByProviderJobId(context: StoreContext, provider: ProviderId, providerJobId: string): Promise<Job | null> {
  const row = await context.db
    .selectFrom("jobs")
    .selectAll()
    .where("provider", "=", provider)
    .where("provider_job_id", "=", providerJobId)
    .executeTakeFirst();
  return row ? rowToJob(row) : null;
}

export async function listJobs(context: StoreContext, filter: JobFilter = {}): Promise<Job[]> {
  if (filter.ids !== undefined && filter.ids.length > IDS_PER_STATEMENT) {
    // In parts, then in the order one statement would have given.
    const jobs: Job[] = [];
    for (const part of scopeParts({ jobIds: filter.ids })) jobs.push(...(await listJobs(context, { ...filter, ids: "jobIds" in part ? part.jobIds : [], limit: undefined })));
    const sign = filter.newestFirst ? -1 : 1;
    jobs.sort((left, right) => sign * (left.createdAt - right.createdAt || (left.id < right.id ? -1 : left.id > right.id ? 1 : 0)));
    return filter.limit !== undefined ? jobs.slice(0, filter.limit) : jobs;
  }
  // A search by the start of a ref reads that range of refs (one tenant's: jobs_tenant_ref), then checks the other filters
  // on the rows found. SQLite, without statistics, would rather follow an index of any other filter (every queued job,
  // the cursor's creation order) and check the ref of every row it reads: there those terms are written with a unary +,
  // which keeps a term out of the choice of index (https://sqlite.org/optoverview.html#uplus).
  const searching = filter.refPrefix !== undefined && context.dialect === "sqlite";
  const checked = <T>(column: "batch_id" | "state" | "provider" | "created_at") => (searching ? sql<T>`+${sql.ref(column)}` : sql<T>`${sql.ref(column)}`);
  let query = context.db.selectFrom("jobs").selectAll();
  if (filter.batchId !== undefined) query = query.where(checked<string>("batch_id"), "=", filter.batchId);
  if (filter.states?.length) query = query.where(checked<string>("state"), "in", [...filter.states]);
  if (filter.provider !== undefined) query = query.where(checked<string>("provider"), "=", filter.provider);
  if (filter.tenant !== undefined) query = query.where("tenant", "=", filter.tenant);
  if (filter.ref !== undefined) query = query.where("ref", "=", filter.ref);
  if (filter.refPrefix !== undefined) {
    // A range of the refs in code point order (see ref-prefix.ts), compared as PostgreSQL's "C" collation in the indexes of migrations 12 and 17.
    const range = refRange(filter.refPrefix);
    const ref = context.dialect === "postgres" ? sql<string>`ref collate "C"` : sql<string>`ref`;
    query = query.where(ref, ">=", range.from);
    if (range.below !== null) query = query.where(ref, "<", range.below);
  }
  if (filter.createdAfter !== undefined) query = query.where(checked<number>("created_at"), ">=", filter.createdAfter);
  if (filter.createdBefore !== undefined) query = query.where(checked<number>("created_at"), "<", filter.createdBefore);
  if (filter.olderThan !== undefined) {
    const { createdAt, id } = filter.olderThan;
    const createdAtColumn = checked<number>("created_at");
    query = query.where((eb) => eb.or([eb(createdAtColumn, "<", createdAt), eb.and([eb(createdAtColumn, "=", createdAt), eb("id", "<", id)])]));
  }
  if (filter.ids !== undefined) {
    if (filter.ids.length === 0) return [];
    query = query.where("id", "in", [...filter.ids]);
  }
  query = query.orderBy("created_at", filter.newestFirst ? "desc" : "asc").orderBy("id", filter.newestFirst ? "desc" : "asc");
  if (filter.limit !== undefined) query = query.limit(filter.limit);
  return (await query.execute()).map(rowToJob);
}

export async function jobsByRefs(context: StoreContext, tenant: string, refs: readonly string[]): Promise<Job[]> {
  return jobsWithRefs(context, context.db, tenant, refs);
}

/** The stored jobs of these jobs' tenants and refs (one read per tenant among them: usually one). */
async function jobsWithTenantRefs(context: StoreContext, db: Db, jobs: ReadonlyArray<Pick<NewJob, "tenant" | "ref">>): Promise<Job[]> {
  const byTenant = new Map<string, string[]>();
  for (const job of jobs) {
    const tenant = job.tenant ?? LOCAL_TENANT;
    const refs = byTenant.get(tenant);
    if (refs) refs.push(job.ref);
    else byTenant.set(tenant, [job.ref]);
  }
  const found: Job[] = [];
  for (const [tenant, refs] of byTenant) found.push(...(await jobsWithRefs(context, db, tenant, refs)));
  return found;
}

async function jobsWithRefs(context: StoreContext, db: Db, tenant: string, refs: readonly string[]): Promise<Job[]> {
  const unique = [...new Set(refs)];
  if (context.dialect === "postgres") {
    // One array parameter, however many refs.
    const rows = await db.selectFrom("jobs").selectAll().where("tenant", "=", tenant).where(sql<SqlBool>`ref = any(${unique}::text[])`).execute();
    return rows.map(rowToJob);
  }
  const jobs: Job[] = [];
  for (let start = 0; start < unique.length; start += IDS_PER_STATEMENT) {
    const rows = await db.selectFrom("jobs").selectAll().where("tenant", "=", tenant).where("ref", "in", unique.slice(start, start + IDS_PER_STATEMENT)).execute();
    jobs.push(...rows.map(rowToJob));
  }
  return jobs;
}

export async function outputs(context: StoreContext, jobId: string): Promise<JobOutput[]> {
  const rows = await context.db.selectFrom("outputs").selectAll().where("job_id", "=", jobId).orderBy("idx").execute();
  return rows.map(rowToOutput);
}

export async function outputsOfJobs(context: StoreContext, jobIds: readonly string[]): Promise<Map<string, JobOutput[]>> {
  const byJob = new Map<string, JobOutput[]>();
  const unique = [...new Set(jobIds)];
  for (let start = 0; start < unique.length; start += IDS_PER_STATEMENT) {
    const rows = await context.db.selectFrom("outputs").selectAll().where("job_id", "in", unique.slice(start, start + IDS_PER_STATEMENT)).orderBy("job_id").orderBy("idx").execute();
    for (const row of rows) {
      const list = byJob.get(row.job_id) ?? [];
      list.push(rowToOutput(row));
      byJob.set(row.job_id, list);
    }
  }
  return byJob;
}

export async function recentRenderSamples(context: StoreContext, provider: string, model: string, limit: number): Promise<RenderSample[]> {
  const rows = await context.db
    .selectFrom("jobs")
    .select(["submitted_at", "submit_sent_at", "provider_done_at", "last_pending_elapsed_ms", "finished_at"])
    .where("provider", "=", provider)
    .where("model", "=", model)
    .where("provider_done_at", "is not", null)
    .where("submitted_at", "is not", null)
    .orderBy("provider_done_at", "desc")
    .limit(literalLimit(limit))
    .execute();
  return rows.map((row) => ({
    doneElapsedMs: Number(row.provider_done_at) - Number(row.submitted_at),
    pendingElapsedMs: row.last_pending_elapsed_ms === null ? null : Number(row.last_pending_elapsed_ms),
    finishedElapsedMs: row.finished_at === null ? null : Number(row.finished_at) - Number(row.submitted_at),
    sentToDoneMs: row.submit_sent_at === null ? null : Number(row.provider_done_at) - Number(row.submit_sent_at),
  }));
}

import { randomBytes } from "node:crypto";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { Kysely, PostgresDialect, sql, SqliteDialect } from "kysely";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { migrate } from "../../src/store/migrate.js";
import { MIGRATIONS } from "../../src/store/migrations/index.js";
import { openPostgresStore } from "../../src/store/postgres.js";
import type { Database } from "../../src/store/schema.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/store.js";
import { newDJob, tempDir } from "../helpers/stores.js";

const BEFORE_TENANTS = MIGRATIONS.filter((migration) => migration.version < 17);
const T0 = Date.UTC(2026, 10, 1);

/** Two jobs as a store of the version before kept them: the local operator's `job-1` (with its event, an output and its ledger line) and token tok_a's `job-2`. */
async function storeBeforeTenants(db: Kysely<Database>): Promise<void> {
  const row = (id: string, ref: string, tokenId: string | null) => sql`
    INSERT INTO jobs (id, ref, provider, model, body_json, facts_json, warnings_json, state, estimate_micro_usd, estimate_source, out_dir, next_attempt_at, created_at, updated_at, token_id)
    VALUES (${id}, ${ref}, 'd', 'gen-2-pro', '{}', '{}', '[]', 'succeeded', 30000, 'test', '/tmp/out', ${T0}, ${T0}, ${T0}, ${tokenId})`;
  await row("job_a", "job-1", null).execute(db);
  await row("job_b", "job-2", "tok_a").execute(db);
  await sql`INSERT INTO job_events (job_id, at, from_state, to_state, reason) VALUES ('job_a', ${T0}, NULL, 'queued', 'queued')`.execute(db);
  await sql`INSERT INTO outputs (job_id, idx, path, url, content_type, bytes, sha256, metadata_json, saved_at) VALUES ('job_a', 0, '/tmp/out/job-1.png', 'https://d.example/1', 'image/png', 10, 'ab', '{}', ${T0})`.execute(db);
  await sql`INSERT INTO ledger (job_id, provider, model, micro_usd, source, at) VALUES ('job_a', 'd', 'gen-2-pro', 30000, 'test', ${T0})`.execute(db);
}

/** What migration 17 must keep and allow, checked through the store of this version. */
async function checkMigrated(store: Store): Promise<void> {
  const local = await store.findJob("job-1");
  expect(local).toMatchObject({ id: "job_a", ref: "job-1", tenant: "local", tokenId: null });
  expect((await store.jobsByRefs("tok_a", ["job-2"])).map((job) => job.id)).toEqual(["job_b"]);
  expect(await store.events("job_a")).toHaveLength(1);
  expect((await store.outputs("job_a")).map((output) => output.path)).toEqual(["/tmp/out/job-1.png"]);
  expect(await store.ledgerTotal()).toBe(30_000);
  // The same ref under another tenant is another job; under its own tenant, the job stored before.
  const [other] = await store.insertJobs([newDJob("job-1", { id: "job_c", tokenId: "tok_b" })], T0 + 1);
  expect(other).toMatchObject({ created: true, job: { id: "job_c", tenant: "tok_b" } });
  const [again] = await store.insertJobs([newDJob("job-1", { id: "job_d" })], T0 + 2);
  expect(again).toMatchObject({ created: false, job: { id: "job_a" } });
  expect((await store.listJobs({ tenant: "tok_b" })).map((job) => job.id)).toEqual(["job_c"]);
}

describe("migration 17: a ref is unique per tenant, and a store of the version before keeps every ref", () => {
  it("SQLite: the jobs table is rebuilt with its rows, events, outputs and ledger lines kept; job-1 of the local operator stays its, and another tenant may use job-1", async () => {
    const folder = tempDir();
    try {
      const path = join(folder.path, "old.db");
      const database = new BetterSqlite3(path);
      database.pragma("foreign_keys = ON");
      const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
      await migrate(db, "sqlite", T0, BEFORE_TENANTS);
      await storeBeforeTenants(db);
      await db.destroy();
      const store = await openSqliteStore(path);
      try {
        await checkMigrated(store);
      } finally {
        await store.close();
      }
      // Foreign keys are on again and hold: a job's event must name a job.
      const reopened = new BetterSqlite3(path);
      try {
        reopened.pragma("foreign_keys = ON");
        expect(reopened.pragma("foreign_key_check")).toEqual([]);
        expect(() => reopened.prepare("INSERT INTO job_events (job_id, at, to_state, reason) VALUES ('no_such_job', 0, 'queued', 'x')").run()).toThrow(/FOREIGN KEY/);
      } finally {
        reopened.close();
      }
    } finally {
      folder.remove();
    }
  });

  it.skipIf(!process.env.DATABASE_URL)("PostgreSQL: the unique constraint on ref becomes (tenant, ref); every row keeps its ref under the tenant that made it", async () => {
    const schema = `mg_test_${randomBytes(6).toString("hex")}`;
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, options: `-c search_path=${schema}`, max: 1 });
      const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
      await migrate(db, "postgres", T0, BEFORE_TENANTS);
      await storeBeforeTenants(db);
      await db.destroy();
      const store = await openPostgresStore(process.env.DATABASE_URL!, { schema });
      try {
        await checkMigrated(store);
      } finally {
        await store.close();
      }
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
  });
});

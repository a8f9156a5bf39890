import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KyselyStore } from "../../src/store/kysely-store.js";
import { openPostgresStore } from "../../src/store/postgres.js";
import { tsxLoader } from "../helpers/cli.js";
import { dropSchema, newDJob } from "../helpers/stores.js";

const databaseUrl = process.env.DATABASE_URL;
const OWNER = "mg:host:1:abcdef";
const idleStoreMain = fileURLToPath(new URL("../helpers/idle-store-main.ts", import.meta.url));
/** pg's pool closes a connection idle this long unless told otherwise. */
const PG_DEFAULT_IDLE_TIMEOUT_MS = 10_000;

/**
 * Issue 10, "statements prepared once": on SQLite the driver keeps each
 * statement prepared; on PostgreSQL the store's hot statements go as named
 * statements, parsed and planned once per connection. Read back from the
 * connection's own pg_prepared_statements (one connection, so every call
 * runs on the session that is read).
 */
describe.runIf(databaseUrl)("PostgreSQL: the store's hot statements are prepared once per connection", () => {
  let schema: string;
  let store: KyselyStore;
  beforeEach(async () => {
    schema = `mg_test_${randomBytes(6).toString("hex")}`;
    store = await openPostgresStore(databaseUrl!, { schema, maxConnections: 1 });
    await store.insertJobs([newDJob("one"), newDJob("two"), newDJob("three")], 1_000);
  });
  afterEach(async () => {
    await store.close();
    await dropSchema(databaseUrl!, schema);
  });

  const prepared = async () =>
    (await sql<{ name: string; statement: string; runs: number }>`select name, statement, generic_plans + custom_plans as runs from pg_prepared_statements`.execute(store.db)).rows;

  it("a hot statement run three times is one named statement of the connection, run three times by its name; a list of ids of any length is not kept", async () => {
    for (const ref of ["one", "two", "three"]) {
      await store.getJob(`job_${ref}`);
      await store.updateJob(`job_${ref}`, { state: "queued" }, { nextAttemptAt: 2_000 }, 1_500);
      await store.dueOwned(OWNER, 5_000, 256);
    }
    await store.listJobs({ ids: ["job_one", "job_two"] });
    const statements = await prepared();
    expect(statements.length).toBeGreaterThanOrEqual(3);
    for (const statement of statements) expect(statement.name).toMatch(/^mg_[0-9a-f]{32}$/);
    // Each text once: parsed once, not once a call.
    expect(new Set(statements.map((statement) => statement.statement)).size).toBe(statements.length);
    const getJob = statements.filter((statement) => /^select \* from "jobs" where "id" = \$1$/.test(statement.statement));
    expect(getJob).toHaveLength(1);
    expect(Number(getJob[0]!.runs)).toBe(3);
    const dueOwned = statements.filter((statement) => /"lease_owner" = \$1/.test(statement.statement) && /limit/.test(statement.statement));
    expect(dueOwned).toHaveLength(1);
    expect(Number(dueOwned[0]!.runs)).toBe(3);
    expect(statements.some((statement) => /"id" in \(\$1, \$2\)/.test(statement.statement))).toBe(false);
  });

  it("a named statement whose table changed shape under it (a newer version migrated the store) is run unnamed from then on, not failed", async () => {
    expect((await store.getJob("job_one"))?.ref).toBe("one");
    const other = new pg.Client({ connectionString: databaseUrl });
    await other.connect();
    await other.query(`ALTER TABLE ${schema}.jobs ADD COLUMN added_later text`);
    await other.end();
    // Without the fallback: "cached plan must not change result type".
    expect((await store.getJob("job_one"))?.ref).toBe("one");
    expect((await store.getJob("job_two"))?.ref).toBe("two");
  });

  it("an idle connection is kept with its named statements: a job queued after the store idled past pg's default 10 s finds them ready", async () => {
    await store.getJob("job_one");
    const before = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store.db)).rows[0]!.pid;
    await new Promise((resolve) => setTimeout(resolve, PG_DEFAULT_IDLE_TIMEOUT_MS + 1_000));
    const after = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store.db)).rows[0]!.pid;
    // The same session: not closed and opened again (which cost a job queued to an idle worker 16 ms at its start).
    expect(after).toBe(before);
    expect((await prepared()).some((statement) => /^select \* from "jobs" where "id" = \$1$/.test(statement.statement))).toBe(true);
  }, 30_000);

  it("a process that opened a store and never closed it still ends by itself once the store is idle", async () => {
    const child = spawn(process.execPath, ["--import", tsxLoader, idleStoreMain, schema], { env: { ...process.env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let killer: NodeJS.Timeout | undefined;
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      // Ended well before pg's default idle timeout would have let it go (and never, with kept connections held open).
      killer ??= setTimeout(() => child.kill("SIGKILL"), PG_DEFAULT_IDLE_TIMEOUT_MS - 2_000);
    });
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("exit", (...ended) => resolve(ended)));
    clearTimeout(killer);
    expect(stderr).toBe("");
    expect(stdout).toBe("read\n");
    expect(signal).toBeNull();
    expect(code).toBe(0);
  }, 60_000);
});

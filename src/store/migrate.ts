import { type Kysely, sql, type Transaction } from "kysely";
import { type Migration, MIGRATIONS } from "./migrations/index.js";
import type { Database } from "./schema.js";

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Applies numbered migrations in order, safely when several processes open a
 * new store at once (two `mediagate batch` commands started together):
 * PostgreSQL runs them all in one transaction under an advisory lock;
 * SQLite applies each in its own transaction whose first statement inserts
 * the version row, so a second migrator waits for the first one's write lock,
 * then finds the version taken and skips it.
 */
export async function migrate(db: Kysely<Database>, dialect: "sqlite" | "postgres", now: number = Date.now(), migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  if (dialect === "postgres") {
    return db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext('mediagate:migrate'))`.execute(trx);
      await createVersionTable(trx);
      const applied = await appliedVersions(trx);
      const ran: number[] = [];
      for (const migration of migrations) {
        if (applied.has(migration.version)) continue;
        await apply(trx, migration, "postgres", now);
        ran.push(migration.version);
      }
      return ran;
    });
  }
  await createVersionTable(db);
  const applied = await appliedVersions(db);
  const ran: number[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.version)) continue;
    // PRAGMA foreign_keys is a no-op inside a transaction: it is switched around it (https://sqlite.org/lang_altertable.html#otheralter).
    if (migration.sqliteForeignKeysOff) await sql`PRAGMA foreign_keys = OFF`.execute(db);
    try {
      await db.transaction().execute(async (trx) => {
        await apply(trx, migration, "sqlite", now);
        if (!migration.sqliteForeignKeysOff) return;
        const broken = await sql<{ table: string; parent: string }>`PRAGMA foreign_key_check`.execute(trx);
        if (broken.rows.length > 0) throw new Error(`migration ${migration.version} (${migration.name}) would leave ${broken.rows.length} broken reference(s), the first from ${broken.rows[0]!.table} to ${broken.rows[0]!.parent}; nothing was changed`);
      });
    } catch (error) {
      // Another process applied it while this one waited for the lock.
      if ((await appliedVersions(db)).has(migration.version)) continue;
      throw error;
    } finally {
      if (migration.sqliteForeignKeysOff) await sql`PRAGMA foreign_keys = ON`.execute(db);
    }
    ran.push(migration.version);
  }
  return ran;
}

async function createVersionTable(db: Db): Promise<void> {
  await sql`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`.execute(db);
}

async function appliedVersions(db: Db): Promise<Set<number>> {
  return new Set((await db.selectFrom("schema_migrations").select("version").execute()).map((row) => Number(row.version)));
}

async function apply(trx: Transaction<Database>, migration: Migration, dialect: "sqlite" | "postgres", now: number): Promise<void> {
  // First statement: the version row (for SQLite, it takes the write lock before anything is read).
  await trx.insertInto("schema_migrations").values({ version: migration.version, name: migration.name, applied_at: now }).execute();
  const script = dialect === "sqlite" ? migration.sqlite : migration.postgres;
  // A script is statements split at each semicolon; a list is its statements as they are (a function's body holds semicolons).
  const statements = typeof script === "string" ? script.split(";") : script;
  for (const statement of statements.map((part) => part.trim()).filter(Boolean)) {
    await sql.raw(statement).execute(trx);
  }
}

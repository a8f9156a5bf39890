import { type Kysely, sql } from "kysely";
import { MIGRATIONS } from "./migrations/index.js";
import type { Database } from "./schema.js";

/**
 * Applies numbered migrations in order. The version row is inserted first in
 * the migration's own transaction, so two migrators racing on one database
 * collide on the primary key instead of both applying it.
 */
export async function migrate(db: Kysely<Database>, dialect: "sqlite" | "postgres", now: number = Date.now()): Promise<number[]> {
  await sql`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`.execute(db);
  const applied = new Set((await db.selectFrom("schema_migrations").select("version").execute()).map((row) => Number(row.version)));
  const ran: number[] = [];
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    await db.transaction().execute(async (trx) => {
      await trx.insertInto("schema_migrations").values({ version: migration.version, name: migration.name, applied_at: now }).execute();
      const script = dialect === "sqlite" ? migration.sqlite : migration.postgres;
      for (const statement of script.split(";").map((part) => part.trim()).filter(Boolean)) {
        await sql.raw(statement).execute(trx);
      }
    });
    ran.push(migration.version);
  }
  return ran;
}

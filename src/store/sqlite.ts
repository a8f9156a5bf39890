import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { KyselyStore } from "./kysely-store.js";
import { migrate } from "./migrate.js";
import type { Database } from "./schema.js";

/**
 * The embedded default store: one SQLite file in WAL mode. One engine process
 * at a time drives it (other processes may read and enqueue).
 */
export async function openSqliteStore(path: string): Promise<KyselyStore> {
  const file = path === ":memory:" ? path : resolve(path);
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const database = new BetterSqlite3(file);
  database.pragma("journal_mode = WAL");
  database.pragma("synchronous = NORMAL");
  database.pragma("busy_timeout = 5000");
  database.pragma("foreign_keys = ON");
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  await migrate(db, "sqlite");
  return new KyselyStore(db, "sqlite");
}

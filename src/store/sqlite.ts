import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { CompiledQuery, type DatabaseConnection, type Driver, Kysely, SqliteDialect, type SqliteDialectConfig, SqliteDriver } from "kysely";
import { KyselyStore } from "./kysely-store.js";
import { migrate } from "./migrate.js";
import type { Database } from "./schema.js";

/**
 * The embedded default store: one SQLite file in WAL mode. Several processes
 * may use it at once (two batches started together): transactions take the
 * write lock at BEGIN and wait for each other (busy timeout).
 */
export async function openSqliteStore(path: string): Promise<KyselyStore> {
  const file = path === ":memory:" ? path : resolve(path);
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const database = new BetterSqlite3(file);
  // First, so that every later statement (switching to WAL included) waits for another process's lock.
  database.pragma("busy_timeout = 5000");
  database.pragma("journal_mode = WAL");
  database.pragma("synchronous = NORMAL");
  database.pragma("foreign_keys = ON");
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database }) });
  await migrate(db, "sqlite");
  return new KyselyStore(db, "sqlite");
}

/**
 * Transactions begin IMMEDIATE: the write lock is taken at BEGIN, where
 * SQLite's busy timeout applies. A deferred transaction that reads and then
 * writes fails at once with SQLITE_BUSY when another process (a second
 * `mediagate batch` on the same file) committed in between; this one waits.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.settings);
  }
}

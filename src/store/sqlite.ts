import { resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { CompiledQuery, type DatabaseConnection, type Driver, Kysely, SqliteDialect, type SqliteDatabase, type SqliteDialectConfig, SqliteDriver } from "kysely";
import { KyselyStore, type QueryListener, queryLog } from "./kysely-store.js";
import { migrate } from "./migrate.js";
import type { Database } from "./schema.js";

/**
 * The embedded default store: one SQLite file in WAL mode. Several processes
 * may use it at once (two batches started together): transactions take the
 * write lock at BEGIN and wait for each other (busy timeout). Its folder
 * must exist: creating one for a mistyped path would quietly start a second,
 * empty queue beside the real one.
 */
export async function openSqliteStore(path: string, options: { onQuery?: QueryListener } = {}): Promise<KyselyStore> {
  const file = path === ":memory:" ? path : resolve(path);
  const database = new BetterSqlite3(file);
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: preparedOnce(database) }), ...queryLog(options.onQuery) });
  try {
    // First, so that every later statement (switching to WAL included) waits for another process's lock.
    database.pragma("busy_timeout = 5000");
    database.pragma("journal_mode = WAL");
    database.pragma("synchronous = NORMAL");
    database.pragma("foreign_keys = ON");
    database.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    await migrate(db, "sqlite");
  } catch (error) {
    // Nothing may outlive a store that failed to open (not a database, locked, read-only).
    await db.destroy().catch(() => undefined);
    if (database.open) database.close();
    throw error;
  }
  return new KyselyStore(db, "sqlite");
}

/**
 * SQLite's page cache, in KiB. better-sqlite3 builds SQLite with a 16 MB
 * default, which a store of 20,000 jobs (70 MB) fills: memory that grows
 * with the store, for pages the loop reads rarely (its queue heads and the
 * jobs it works on are a few hundred pages). Pages outside it are read from
 * the operating system's cache.
 */
const PAGE_CACHE_KIB = 4_096;

/** Distinct statements kept prepared; the store runs a few dozen shapes, `IN` lists of many lengths aside. */
const PREPARED_STATEMENTS = 256;

/**
 * The database as Kysely sees it, with each statement prepared once and
 * reused (least recently used out): preparing is about a tenth of the
 * engine's CPU when every call prepares again.
 */
function preparedOnce(database: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => database.close(),
    prepare(sql: string) {
      let statement = cache.get(sql);
      if (statement) {
        cache.delete(sql);
      } else {
        statement = database.prepare(sql);
        if (cache.size >= PREPARED_STATEMENTS) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
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

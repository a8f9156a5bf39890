import { createHash } from "node:crypto";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { DEFAULT_STORE_POOL_SIZE } from "../core/config.js";
import { KyselyStore, type QueryListener, queryLog } from "./kysely-store.js";
import { migrate } from "./migrate.js";
import { postgresWorkSignals } from "./work-signals.js";
import type { Database } from "./schema.js";

/** BIGINT columns hold milliseconds and micro-USD, all far below 2^53: read them as numbers. */
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * Opening a connection waits at most this long: an unreachable server (packets
 * dropped, not refused) fails a step that the engine retries, instead of
 * hanging it and the engine's stop with it.
 */
const CONNECT_TIMEOUT_MS = 15_000;

/** See the pool's listeners below: the failure is seen where it matters, by the query that needed the connection. */
function ignoreConnectionError(): void {}

export interface PostgresStoreOptions {
  /** Use this schema (created if missing) instead of `public`: tests get one each. */
  schema?: string;
  /** The most pooled connections (MEDIAGATE_STORE_POOL_SIZE; DEFAULT_STORE_POOL_SIZE by default). LISTEN has one more of its own. */
  maxConnections?: number;
  /** Sees every statement the store runs (the query-plan tests read them back with EXPLAIN). */
  onQuery?: QueryListener;
}

/**
 * The distributed store: any number of engines on any number of machines
 * share one database; claims use row locks with SKIP LOCKED.
 */
export async function openPostgresStore(connectionString: string, options: PostgresStoreOptions = {}): Promise<KyselyStore> {
  const schema = options.schema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new RangeError(`bad schema name ${schema}`);
  if (schema) {
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    client.on("error", ignoreConnectionError);
    await client.connect();
    try {
      // Under the migration lock: two stores creating one schema at once would otherwise collide in pg_namespace.
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock(hashtext('mediagate:migrate'))");
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      await client.end();
    }
  }
  const pool = new pg.Pool({
    connectionString,
    max: options.maxConnections ?? DEFAULT_STORE_POOL_SIZE,
    // Connections are kept once opened (pg drops an idle one after 10 s by default): a worker idle longer had to open
    // them again, and prepare its named statements on them again, for the next job queued, which then reached the
    // provider 30 ms after its insert instead of 14 (median, one worker idle 12 s before each job). Kept, they must not
    // keep a process alive that has nothing else to do (a script that never closes its store).
    idleTimeoutMillis: 0,
    allowExitOnIdle: true,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A peer that vanished without a word (failover, a cut link) is noticed by TCP, not only at the next query.
    keepAlive: true,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  // A restart, failover or pg_terminate_backend ends connections with an 'error' event, and an 'error'
  // event nobody listens to ends the process: every worker of a deployment would die on a routine
  // database restart. The query in flight (if any) fails by itself and the engine retries its step;
  // the pool drops the broken connection and opens a new one for the next query.
  pool.on("error", ignoreConnectionError);
  pool.on("connect", (client) => client.on("error", ignoreConnectionError));
  const prepare = namedStatements(pool);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), ...queryLog(options.onQuery) });
  try {
    await migrate(db, "postgres");
  } catch (error) {
    // Nothing may outlive a store that failed to open (the command ends with a configuration error).
    await db.destroy().catch(() => undefined);
    throw error;
  }
  return new KyselyStore(db, "postgres", async () => db.destroy(), postgresWorkSignals(connectionString, schema, CONNECT_TIMEOUT_MS), prepare);
}

/**
 * A named statement the server could not run as prepared: its tables changed
 * shape under it (another process migrated the store), or the server it was
 * prepared on is not the one that got it (a pooler such as PgBouncer in
 * transaction mode, before its version 1.21).
 */
function cannotRunPrepared(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return (code === "0A000" && /cached plan must not change result type/.test(message ?? "")) || code === "26000";
}

/**
 * The store's hot statements (those its `reusable` compiles once, reusable.ts:
 * a few dozen fixed shapes, run several times a job) sent as named prepared
 * statements, so that each connection parses and plans them once rather
 * than on every call. Unnamed, a claim's statement cost PostgreSQL 1.6 ms
 * to parse and 3.2 ms to bind (plan) for 2.8 ms of execution. Every other
 * statement (lists of ids of any length, cold paths) stays unnamed. A
 * connection whose named statement cannot be run (see `cannotRunPrepared`)
 * stops naming and runs unnamed from then on; the statement that failed is
 * run again unnamed at once (inside a transaction that fails too, and the
 * engine retries its step, as for any store error).
 */
function namedStatements(pool: pg.Pool): (sql: string) => void {
  const names = new Map<string, string>();
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    let naming = true;
    const named = async (name: string, text: string, values: unknown[]) => {
      try {
        return await query({ name, text, values });
      } catch (error) {
        if (!cannotRunPrepared(error)) throw error;
        naming = false;
        return query(text, values);
      }
    };
    // Anything else (a cursor, a callback) goes through as it came, and gets back what pg gives it.
    (client as { query: unknown }).query = (text: unknown, values?: unknown, ...rest: unknown[]) => {
      const name = typeof text === "string" && naming && Array.isArray(values) && rest.length === 0 ? names.get(text) : undefined;
      return name === undefined ? query(text, values, ...rest) : named(name, text as string, values as unknown[]);
    };
  });
  return (sql) => {
    if (!names.has(sql)) names.set(sql, `mg_${createHash("sha256").update(sql).digest("hex").slice(0, 32)}`);
  };
}

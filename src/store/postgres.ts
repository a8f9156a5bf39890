import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
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
    max: options.maxConnections ?? 10,
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
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), ...queryLog(options.onQuery) });
  try {
    await migrate(db, "postgres");
  } catch (error) {
    // Nothing may outlive a store that failed to open (the command ends with a configuration error).
    await db.destroy().catch(() => undefined);
    throw error;
  }
  return new KyselyStore(db, "postgres", async () => db.destroy(), postgresWorkSignals(connectionString, schema, CONNECT_TIMEOUT_MS));
}

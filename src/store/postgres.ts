import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { KyselyStore } from "./kysely-store.js";
import { migrate } from "./migrate.js";
import type { Database } from "./schema.js";

/** BIGINT columns hold milliseconds and micro-USD, all far below 2^53: read them as numbers. */
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface PostgresStoreOptions {
  /** Use this schema (created if missing) instead of `public`: tests get one each. */
  schema?: string;
  maxConnections?: number;
}

/**
 * The distributed store: any number of engines on any number of machines
 * share one database; claims use row locks with SKIP LOCKED.
 */
export async function openPostgresStore(connectionString: string, options: PostgresStoreOptions = {}): Promise<KyselyStore> {
  const schema = options.schema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new RangeError(`bad schema name ${schema}`);
  if (schema) {
    const client = new pg.Client({ connectionString });
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
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  await migrate(db, "postgres");
  return new KyselyStore(db, "postgres");
}

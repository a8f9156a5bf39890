import { randomBytes } from "node:crypto";
import pg from "pg";
import { openPostgresStore } from "../../src/store/postgres.js";
import type { Store } from "../../src/store/store.js";

export interface CliPostgresStore {
  /** MEDIAGATE_STORE for a CLI process: this test's own schema, tagged with `applicationName`. */
  address: string;
  /** Every connection of the CLI process carries this, so a test can find (and terminate) only its own. */
  applicationName: string;
  /** The test's own view of the same schema (its connections are not tagged). */
  store: Store;
  /** Terminates every backend tagged with this store's application name; returns how many. */
  terminateCliConnections(): Promise<number>;
  cleanup(): Promise<void>;
}

/**
 * A fresh schema in DATABASE_URL's database for a CLI process to use as its
 * store, migrated by the test's own store first. `password` goes into the
 * address (trust authentication ignores it), so tests can check it is never
 * shown. `viaPort` sends the CLI's connections through a loopback proxy on
 * that port (see tcp-proxy.ts); the test's own store connects directly.
 */
export async function cliPostgresStore(databaseUrl: string, options: { password?: string; viaPort?: number } = {}): Promise<CliPostgresStore> {
  const schema = `mg_test_${randomBytes(6).toString("hex")}`;
  const applicationName = `mg_h1_${randomBytes(6).toString("hex")}`;
  const store = await openPostgresStore(databaseUrl, { schema, maxConnections: 4 });
  const url = new URL(databaseUrl);
  if (options.password) url.password = options.password;
  if (options.viaPort !== undefined) {
    url.hostname = "127.0.0.1";
    url.port = String(options.viaPort);
  }
  url.searchParams.set("application_name", applicationName);
  url.searchParams.set("options", `-c search_path=${schema}`);
  const admin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  return {
    address: url.toString(),
    applicationName,
    store,
    terminateCliConnections: () =>
      admin(async (client) => {
        const result = await client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [applicationName]);
        return result.rowCount ?? 0;
      }),
    async cleanup() {
      await store.close();
      await admin((client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
    },
  };
}

/**
 * Counts the connections tagged `applicationName` every 5 ms from a connection of its own, until `stop`, which
 * resolves with the most seen at once.
 */
export async function watchConnections(databaseUrl: string, applicationName: string): Promise<{ stop(): Promise<number> }> {
  const watcher = new pg.Client({ connectionString: databaseUrl });
  await watcher.connect();
  let most = 0;
  let running = true;
  const watching = (async () => {
    while (running) {
      const { rows } = await watcher.query<{ n: string }>("select count(*) as n from pg_stat_activity where application_name = $1", [applicationName]);
      most = Math.max(most, Number(rows[0]!.n));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      await watching;
      await watcher.end();
      return most;
    },
  };
}

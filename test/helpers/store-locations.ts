import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";

/** Where a runtime (the library, a CLI process) keeps its jobs: a SQLite file, or (with DATABASE_URL) a PostgreSQL schema of its own. */
export interface StoreLocation {
  name: string;
  /** A MEDIAGATE_STORE for a store in `folder` (SQLite) or a fresh schema (PostgreSQL); the same address on every call. */
  address(folder: string): Promise<string>;
  cleanup(): Promise<void>;
}

function sqliteLocation(): StoreLocation {
  return { name: "sqlite", address: async (folder) => `sqlite:${join(folder, "mediagate.db")}`, cleanup: async () => undefined };
}

function postgresLocation(url: string): StoreLocation {
  const schema = `mg_test_${randomBytes(6).toString("hex")}`;
  let created: Promise<string> | null = null;
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(statement);
    await client.end();
  };
  return {
    name: "postgres",
    address() {
      created ??= run(`CREATE SCHEMA ${schema}`).then(() => {
        const located = new URL(url);
        located.searchParams.set("options", `-c search_path=${schema}`);
        return located.toString();
      });
      return created;
    },
    cleanup: async () => {
      if (created) await run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    },
  };
}

/** SQLite always, PostgreSQL when DATABASE_URL is set (as test/helpers/stores.ts picks them). */
export function storeLocations(): Array<() => StoreLocation> {
  const databaseUrl = process.env.DATABASE_URL;
  return databaseUrl ? [sqliteLocation, () => postgresLocation(databaseUrl)] : [sqliteLocation];
}

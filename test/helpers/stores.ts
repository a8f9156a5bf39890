import { afterEach, beforeEach } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { openPostgresStore } from "../../src/store/postgres.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { QueryListener } from "../../src/store/kysely-store.js";
import type { NewJob, Store } from "../../src/store/store.js";

export interface StoreFactory {
  name: string;
  /** `onQuery` sees each statement the store sends. */
  open(options?: { onQuery?: QueryListener }): Promise<{ store: Store; cleanup(): Promise<void> }>;
}

/** A queued D job as a test inserts it (`job_<ref>`, a $0.03 estimate); `overrides` win. */
export function newDJob(ref: string, overrides: Partial<NewJob> = {}): NewJob {
  return {
    id: `job_${ref}`,
    ref,
    batchId: null,
    provider: "d",
    model: "gen-2-pro",
    operation: null,
    body: { prompt: ref },
    facts: {},
    warnings: [],
    estimateMicroUsd: 30_000,
    estimateSource: "test",
    outDir: "/tmp/out",
    // A token's job is its tenant's, as the API stores it.
    ...(overrides.tokenId ? { tenant: overrides.tokenId } : {}),
    ...overrides,
  };
}

/** A fresh SQLite file per call, in its own temporary folder. */
export const sqliteFactory: StoreFactory = {
  name: "sqlite",
  async open(options = {}) {
    const folder = mkdtempSync(join(tmpdir(), "mediagate-test-"));
    const store = await openSqliteStore(join(folder, "test.db"), options);
    return {
      store,
      async cleanup() {
        await store.close();
        rmSync(folder, { recursive: true, force: true });
      },
    };
  },
};

/** A fresh schema per call in the database of DATABASE_URL, dropped afterwards. */
export function postgresFactory(databaseUrl: string): StoreFactory {
  return {
    name: "postgres",
    async open(options = {}) {
      const schema = `mg_test_${randomBytes(6).toString("hex")}`;
      const store = await openPostgresStore(databaseUrl, { schema, maxConnections: 4, ...options });
      return {
        store,
        async cleanup() {
          await store.close();
          await dropSchema(databaseUrl, schema);
        },
      };
    },
  };
}

/** Drops a test's own schema in the database of `databaseUrl`, with everything in it. */
export async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl && !process.env.MEDIAGATE_PG_SKIP_NOTICE_SHOWN) {
  process.env.MEDIAGATE_PG_SKIP_NOTICE_SHOWN = "1";
  console.warn("DATABASE_URL is not set: PostgreSQL store tests are skipped (.ci/run sets it)");
}

/** Every store the suite runs against: SQLite always, PostgreSQL when DATABASE_URL is set. */
export const storeFactories: StoreFactory[] = databaseUrl ? [sqliteFactory, postgresFactory(databaseUrl)] : [sqliteFactory];

export function tempDir(prefix = "mediagate-test-"): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * Opens a fresh store from `factory` before each test of the enclosing
 * describe and closes it after; `use` receives it (tests keep it in a local).
 */
export function freshStoreEachTest(factory: StoreFactory, use: (store: Store) => void): void {
  let cleanup: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    const opened = await factory.open();
    cleanup = opened.cleanup;
    use(opened.store);
  });
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });
}

/**
 * The real store, whose next `failures` calls of the methods `fails` names are
 * refused with `message` (as while a database restarts or is locked), and
 * answered as usual after that.
 */
export function failingStore(store: Store, failures: number, options: { fails: (method: string) => boolean; message: string }): { store: Store; failed(): number } {
  let failed = 0;
  const flaky = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (failed < failures && options.fails(String(property))) {
          failed++;
          return Promise.reject(new Error(options.message));
        }
        return (value as (...parameters: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: flaky, failed: () => failed };
}

/**
 * A D job (`job_<ref>`) that was sent at `at`, rendered `renderMs` and was
 * saved `captureMs` later: what a model's pace is learned from (issue 37).
 */
export async function finishedDJob(store: Store, ref: string, at: number, renderMs: number, captureMs: number, overrides: Partial<NewJob> = {}): Promise<void> {
  await store.insertJobs([newDJob(ref, overrides)], at);
  const id = `job_${ref}`;
  await store.transition(id, { state: "queued" }, "submitting", {}, "claimed", at);
  await store.transition(id, { state: "submitting" }, "running", { submittedAt: at }, "accepted", at);
  await store.transition(id, { state: "running" }, "capturing", { providerDoneAt: at + renderMs }, "done", at + renderMs);
  await store.transition(id, { state: "capturing" }, "succeeded", { finishedAt: at + renderMs + captureMs }, "saved", at + renderMs + captureMs);
}

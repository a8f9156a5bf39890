import { Writable } from "node:stream";
import { expect } from "vitest";
import type { FastifyInstance } from "fastify";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import { createLogger } from "../../src/engine/logger.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { buildServer } from "../../src/server/app.js";
import { cliPostgresStore } from "./pg-cli-store.js";
import { startWorld, type World } from "./world.js";

/** Where a served test keeps its store: what MEDIAGATE_STORE the server gets, and how it is dropped afterwards. */
export interface ServedStore {
  name: "sqlite" | "postgres";
  /** `options` shape a PostgreSQL address (a password trust authentication ignores, a proxy's port); SQLite ignores them. */
  open(options?: { password?: string; viaPort?: number }): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }>;
}

/** The world's own SQLite file (its environment already names it). */
export const sqliteServed: ServedStore = {
  name: "sqlite",
  async open() {
    return { env: {}, cleanup: async () => undefined };
  },
};

/** A fresh schema in DATABASE_URL's database, dropped afterwards. */
export function postgresServed(databaseUrl: string): ServedStore {
  return {
    name: "postgres",
    async open(options = {}) {
      const database = await cliPostgresStore(databaseUrl, options);
      return { env: { MEDIAGATE_STORE: database.address }, cleanup: () => database.cleanup() };
    },
  };
}

const databaseUrl = process.env.DATABASE_URL;

/** Every store a served test runs on: SQLite always, PostgreSQL when DATABASE_URL is set. */
export const servedStores: ServedStore[] = databaseUrl ? [sqliteServed, postgresServed(databaseUrl)] : [sqliteServed];

export interface Served {
  world: World;
  runtime: Runtime;
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The environment the server was configured from: the world's, with the store's MEDIAGATE_STORE. */
  env: Record<string, string>;
  emulators: ReturnType<typeof createAllEmulators>;
  /** Every line the server's logger wrote (level info), as JSON text. */
  logLines: string[];
  close(): Promise<void>;
}

/**
 * `mediagate serve`'s server (API and dashboard) over real HTTP on loopback,
 * its engine running unless told not to, the sandbox behind it with short
 * renders (D 300–500 ms, C 1 s), its store SQLite unless `store` says
 * otherwise (`env` is applied last: a test may name its own store).
 */
export async function serveSandbox(
  options: { engine?: boolean; emulators?: Parameters<typeof createAllEmulators>[0]; store?: ServedStore; env?: Record<string, string> } = {},
): Promise<Served> {
  const emulators = createAllEmulators({ d: { renderTimeMs: { minMs: 300, maxMs: 500 } }, c: { renderMs: 1_000 }, ...options.emulators });
  const world = await startWorld(emulators.list);
  const closers: Array<() => Promise<void>> = [() => world.close()];
  // Each part is closed whatever the others do: a test may have closed the store, or cut its connection, itself.
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  };
  try {
    const database = await (options.store ?? sqliteServed).open();
    closers.push(database.cleanup);
    const env = { ...world.env, ...database.env, ...options.env };
    const runtime = createRuntime({ overrides: env });
    closers.push(() => runtime.close());
    const store = await runtime.store();
    const engine = await runtime.engine();
    const logLines: string[] = [];
    const log = createLogger({ level: "info", secrets: runtime.secrets, destination: new Writable({ write: (chunk, _encoding, done) => (logLines.push(String(chunk)), done()) }) });
    const app = await buildServer({ store, engine, providers: runtime.providers, log, now: () => Date.now() }, { runtime, log });
    closers.push(() => app.close());
    const url = await app.listen({ port: 0, host: "127.0.0.1" });
    if (options.engine !== false) engine.start();
    return { world, runtime, app, url, env, emulators, logLines, close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * Reads a dashboard stream (`/events…`) until `done` says so, or fails after
 * `timeoutMs` saying what came; `onOpen` runs once its first message (the
 * retry line) has arrived, so a change made then is one the stream follows.
 */
export async function readEvents(served: Served, path: string, cookie: string | undefined, done: (events: Array<{ event: string; data: any }>) => boolean, timeoutMs = 15_000, onOpen?: () => void) {
  let opened = false;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const events: Array<{ event: string; data: any }> = [];
  try {
    const response = await fetch(`${served.url}${path}`, { headers: cookie ? { cookie } : {}, signal: abort.signal });
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of response.body!) {
      buffered += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (!opened) {
          opened = true;
          onOpen?.();
        }
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) events.push({ event, data: JSON.parse(data) });
      }
      if (done(events)) return events;
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  throw new Error(`the stream did not say what was expected within ${timeoutMs} ms; it said ${JSON.stringify(events.map((each) => [each.event, each.data.state]))}`);
}

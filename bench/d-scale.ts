/**
 * Issue 10's benchmark: the engine's cost per job must not grow with the
 * batch. Sandbox D (24 slots, fixed render time) in a child process; the
 * engine and a batch-scoped wait in this process, on SQLite and on
 * PostgreSQL (when DATABASE_URL is set), for N = 200, 2,000 and 20,000.
 *
 * Reports per run: engine CPU per job (target ≤ 10 ms, and the largest N
 * within 1.3× the smallest), makespan ÷ lower bound ceil(N/24) × T (target
 * ≤ 1.05), peak RSS of this process (target < 150 MB with 20,000 queued),
 * store bytes per job, and D's requests per job.
 *
 * BENCH_SIZES (default 200,2000,20000), BENCH_STORES (sqlite,postgres),
 * BENCH_RENDER_MS (500).
 */
import { statSync } from "node:fs";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { loadConfig } from "../src/core/config.js";
import { Engine } from "../src/engine/engine.js";
import { waitForJobs } from "../src/engine/wait.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import type { KyselyStore } from "../src/store/kysely-store.js";
import { openPostgresStore } from "../src/store/postgres.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import type { NewJob } from "../src/store/store.js";
import { dBenchJobs, recordResult, startSandboxChild, tempFolder } from "./harness.js";

const SIZES = (process.env.BENCH_SIZES ?? "200,2000,20000").split(",").map(Number);
const STORES = (process.env.BENCH_STORES ?? "sqlite,postgres").split(",").filter((kind) => kind !== "postgres" || process.env.DATABASE_URL);
const RENDER_MS = Number(process.env.BENCH_RENDER_MS ?? 500);
const SLOTS = 24;

interface Row {
  store: string;
  jobs: number;
  succeeded: number;
  makespanMs: number;
  boundMs: number;
  cpuMsPerJob: number;
  peakRssMb: number;
  rssAtStartMb: number;
  storeBytesPerJob: number;
  requestsPerJob: number;
  peakActive: number;
  rejected429: number;
}

interface SandboxStats {
  requests: Array<{ provider: string | null }>;
  d: { rejected429: number; peakActive: number };
}

async function runOne(kind: string, jobsWanted: number): Promise<Row> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: RENDER_MS } });
  const schema = `mg_bench_${randomBytes(4).toString("hex")}`;
  // BENCH_QUERY_STATS=1: time spent per statement, printed after the run.
  const queryStats = new Map<string, { count: number; ms: number }>();
  const onQuery = process.env.BENCH_QUERY_STATS
    ? (sql: string, _parameters: readonly unknown[], ms: number) => {
        const key = sql.replace(/\?(, \?)+/g, "?…").slice(0, 160);
        const entry = queryStats.get(key) ?? { count: 0, ms: 0 };
        entry.count++;
        entry.ms += ms;
        queryStats.set(key, entry);
      }
    : undefined;
  const store: KyselyStore =
    kind === "sqlite"
      ? await openSqliteStore(`${folder.path}/bench.db`, onQuery ? { onQuery } : {})
      : await openPostgresStore(process.env.DATABASE_URL!, { schema, ...(onQuery ? { onQuery } : {}) });
  try {
    const config = loadConfig({
      env: { MEDIAGATE_D_BASE_URL: `${sandbox.url}/d`, MEDIAGATE_D_API_KEY: "sandbox-d-key", MEDIAGATE_OUTPUT_DIR: `${folder.path}/out` },
      cwd: folder.path,
    });
    const providers = createProviderRegistry(config);
    const adapter = providers.get("d")!.adapter!;
    let jobs: NewJob[] = await dBenchJobs(adapter, jobsWanted, {
      idPrefix: "job_scale_",
      refPrefix: "scale-",
      prompt: "scale image",
      batchId: "bench",
      outDir: config.outputDir,
      idDigits: 6,
    });
    await store.insertJobs(jobs, Date.now());
    const ids = jobs.map((job) => job.id);
    jobs = [];
    global.gc?.();
    const rssAtStart = process.memoryUsage().rss;
    let peakRss = rssAtStart;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 100);
    const engine = new Engine({ store, providers, secrets: () => ["sandbox-d-key"] });
    engine.restrictTo({ batchId: "bench" });
    const cpuBefore = process.cpuUsage();
    const started = Date.now();
    engine.start();
    // BENCH_GIVE_UP_S: stop waiting after that long (profiling a run that does not finish).
    const giveUp = process.env.BENCH_GIVE_UP_S ? AbortSignal.timeout(Number(process.env.BENCH_GIVE_UP_S) * 1000) : undefined;
    const outcome = await waitForJobs(engine, store, ids, { scope: { batchId: "bench" }, ...(giveUp ? { signal: giveUp } : {}) });
    const makespanMs = Date.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    clearInterval(sampler);
    await engine.stop();
    const stats = await sandbox.stats<SandboxStats>();
    for (const [sql, entry] of [...queryStats.entries()].sort((left, right) => right[1].ms - left[1].ms).slice(0, 25)) {
      process.stderr.write(`  ${entry.ms.toFixed(0).padStart(6)} ms ${String(entry.count).padStart(7)}× ${sql}\n`);
    }
    process.stderr.write(`  engine iterations: ${engine.iterations} (${(engine.iterations / jobsWanted).toFixed(1)} per job)\n`);
    const storeBytes = await storeSize(kind, store, folder.path, schema);
    return {
      store: kind,
      jobs: jobsWanted,
      succeeded: outcome.jobs.filter((job) => job.state === "succeeded").length,
      makespanMs,
      boundMs: Math.ceil(jobsWanted / SLOTS) * RENDER_MS,
      cpuMsPerJob: (cpu.user + cpu.system) / 1000 / jobsWanted,
      peakRssMb: peakRss / 1e6,
      rssAtStartMb: rssAtStart / 1e6,
      storeBytesPerJob: storeBytes / jobsWanted,
      requestsPerJob: stats.requests.filter((request) => request.provider === "d").length / jobsWanted,
      peakActive: stats.d.peakActive,
      rejected429: stats.d.rejected429,
    };
  } finally {
    await store.close();
    await sandbox.stop();
    if (kind === "postgres") await dropSchema(schema);
    folder.remove();
  }
}

async function storeSize(kind: string, store: KyselyStore, folder: string, schema: string): Promise<number> {
  if (kind === "sqlite") {
    await store.close();
    return statSync(`${folder}/bench.db`).size;
  }
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    const result = await client.query<{ bytes: string }>(
      "select coalesce(sum(pg_total_relation_size(format('%I.%I', schemaname, tablename))), 0) as bytes from pg_tables where schemaname = $1",
      [schema],
    );
    return Number(result.rows[0]!.bytes);
  } finally {
    await client.end();
  }
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}

export async function runDScale(): Promise<void> {
  const rows: Row[] = [];
  for (const kind of STORES) {
    for (const size of SIZES) {
      process.stderr.write(`d-scale: ${kind}, ${size} jobs…\n`);
      const row = await runOne(kind, size);
      process.stderr.write(`  ${JSON.stringify(row)}\n`);
      rows.push(row);
    }
  }
  const lines = [
    `## D at scale: cost per job flat from ${SIZES[0]} to ${SIZES.at(-1)} jobs (issue 10)`,
    ``,
    `Run ${new Date().toISOString()} on ${process.version}; sandbox D in a child process over loopback, ${SLOTS} slots, render T = ${RENDER_MS} ms; the engine restricted to the batch and a batch-scoped wait in the bench process.`,
    ``,
    `| store | jobs | succeeded | makespan | bound ceil(N/24)×T | makespan ÷ bound (≤ 1.05) | engine CPU per job (≤ 10 ms) | peak RSS (< 150 MB at 20,000) | store bytes per job | D requests per job | peak at D | 429s |`,
    `|---|---|---|---|---|---|---|---|---|---|---|---|`,
    ...rows.map(
      (row) =>
        `| ${row.store} | ${row.jobs} | ${row.succeeded} | ${(row.makespanMs / 1000).toFixed(1)} s | ${(row.boundMs / 1000).toFixed(1)} s | ${(row.makespanMs / row.boundMs).toFixed(3)} | ${row.cpuMsPerJob.toFixed(2)} ms | ${row.peakRssMb.toFixed(0)} MB (${row.rssAtStartMb.toFixed(0)} at start) | ${row.storeBytesPerJob.toFixed(0)} | ${row.requestsPerJob.toFixed(2)} | ${row.peakActive} | ${row.rejected429} |`,
    ),
    ``,
  ];
  for (const kind of STORES) {
    const ofStore = rows.filter((row) => row.store === kind);
    if (ofStore.length >= 2) {
      const ratio = ofStore.at(-1)!.cpuMsPerJob / ofStore[0]!.cpuMsPerJob;
      lines.push(`- ${kind}: CPU per job at ${ofStore.at(-1)!.jobs} ÷ at ${ofStore[0]!.jobs}: ${ratio.toFixed(2)} (target ≤ 1.3)`);
    }
  }
  const markdown = lines.join("\n");
  process.stdout.write(`${markdown}\n`);
  recordResult("d-scale", markdown);
  if (rows.some((row) => row.succeeded !== row.jobs)) process.exitCode = 1;
}

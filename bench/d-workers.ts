/**
 * Issue 10's scale-out: 1, 2 and 4 `mediagate worker` processes (the built
 * CLI, each its own process) on one PostgreSQL store, against sandbox D with
 * its real 24-slot cap and a fixed 500 ms render. N jobs are queued through
 * the store first (no engine), then the workers start.
 *
 * Reports per worker count: jobs per second and D's span ÷ the bound
 * ceil(N/24) × T (target ≤ 1.05), peak tasks at D (≤ 24), submits and
 * downloads per job (each exactly 1: no job claimed twice, no result fetched
 * twice), CPU per job summed over the workers and per worker, claims lost to
 * another worker (target < 5% of claims). Then, with the workers idle, jobs
 * queued one at a time from this process: the time from queueing to D
 * receiving the submit, p50 / p99 (target ≤ 100 ms, by LISTEN/NOTIFY).
 *
 * `d-workers-raised` (BENCH_SLOTS, default 400),
 * sandbox D's cap and the workers' MEDIAGATE_D_CONCURRENCY are raised to it,
 * so no provider cap binds and the run measures what coordination costs:
 * jobs per second, CPU per job in the workers, PostgreSQL and the sandbox.
 *
 * BENCH_WORKERS (default 1,2,4), BENCH_JOBS (1200), BENCH_LATENCY_SAMPLES (20), BENCH_SLOTS (24),
 * BENCH_ROUNDS (default 1; 3 for d-workers-raised): each worker count run that many times, the counts alternated
 * round by round, every run in the table and the CPU ratio taken within each round, then its median.
 * BENCH_APART (d-workers-raised only, default on; 0 skips): each round also runs 2 and 4 workers apart, each on a
 * database of its own, as the control for what coordination costs. BENCH_LATENCY_GAP_MS (300): the workers' idle time
 * before each start-latency sample.
 * Needs DATABASE_URL and `npm run build`.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { loadConfig } from "../src/core/config.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import { openPostgresStore } from "../src/store/postgres.js";
import { benchNodeFlags, checkBuiltCli, cliEnvironment, dBenchJobs, median, quantile, recordResult, startSandboxChild, tempFolder, withDatabase } from "./harness.js";

const WORKER_COUNTS = (process.env.BENCH_WORKERS ?? "1,2,4").split(",").map(Number);
const JOBS = Number(process.env.BENCH_JOBS ?? 1_200);
const LATENCY_SAMPLES = Number(process.env.BENCH_LATENCY_SAMPLES ?? 20);
/** The workers' idle time before each latency sample (BENCH_LATENCY_GAP_MS, default 300). */
const LATENCY_GAP_MS = Number(process.env.BENCH_LATENCY_GAP_MS ?? 300);
/**
 * Jobs per worker the started workers run before the measured backlog (BENCH_WARMUP_JOBS, default 0; four
 * workers run four times as many): V8 compiles each process's hot code once, as it runs, so four fresh workers pay
 * four times what one pays; with a warm-up of as many jobs each, the backlog measures their steady state.
 */
const WARMUP_JOBS = Number(process.env.BENCH_WARMUP_JOBS ?? 0);
const RENDER_MS = 500;
const D_PUBLISHED_SLOTS = 24;
/** D's cap in this run (set by the entry point): the published 24, or raised. */
let SLOTS = D_PUBLISHED_SLOTS;
let RAISED = false;
/** Whether each round also runs the control: as many workers, each on a database of its own (BENCH_APART; d-workers-raised only). */
let APART = false;
const CLI = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const USAGE_REPORT = fileURLToPath(new URL("./usage-report.mjs", import.meta.url));

interface Row {
  workers: number;
  /**
   * The control: each worker on a database of its own with its share of the jobs (same PostgreSQL server, same
   * sandbox, same processes), so nothing is coordinated; the CPU it takes beside the run on one store is what
   * coordination costs, and what it takes beside one worker is what the machine's sharing costs.
   */
  apart: boolean;
  succeeded: number;
  spanMs: number;
  jobsPerSecond: number;
  peakActive: number;
  rejected429: number;
  submitsPerJob: number;
  downloadsPerJob: number;
  mostDownloadsOfOneResult: number;
  /** The workers' CPU over the backlog (from all idle to its end), per backlog job. */
  cpuMsPerJob: number;
  cpuMsPerJobByWorker: number[];
  /** The backlog workers' whole lives (start-up, backlog, stop), per backlog job. */
  lifetimeCpuMsPerJob: number;
  claimsWon: number;
  claimsLost: number;
  /** Claims lost while the latency samples were queued one at a time (every idle worker is told of each). */
  latencyClaimsLost: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  postgresCpuMsPerJob: number;
  sandboxCpuMsPerJob: number;
  /** PostgreSQL's own counts (pg_stat_database) per backlog job, over the backlog workers' lives: transactions, rows written. */
  transactionsPerJob: number;
  rowsWrittenPerJob: number;
}

interface DatabaseWork {
  transactions: number;
  rowsWritten: number;
}

/** This database's transactions and rows inserted, updated and deleted so far (backends report theirs at exit). */
async function databaseWork(client: pg.Client): Promise<DatabaseWork> {
  const row = (
    await client.query<{ xacts: string; written: string }>(
      "select xact_commit + xact_rollback as xacts, tup_inserted + tup_updated + tup_deleted as written from pg_stat_database where datname = current_database()",
    )
  ).rows[0]!;
  return { transactions: Number(row.xacts), rowsWritten: Number(row.written) };
}

interface SandboxStats {
  cpuMs: number;
  requests: Array<{ provider: string | null; method: string; url: string; realAt: number }>;
  d: { rejected429: number; peakActive: number };
}

interface Worker {
  /** Resolves once the worker says it started (it is idle then: the backlog is queued after). */
  ready: Promise<void>;
  /** Its CPU so far (Linux /proc). */
  cpuMs(): number;
  stop(): Promise<{ cpuMs: number; stderr: string }>;
}

/** User + system CPU milliseconds of a live process and its ended children (Linux /proc). */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14-17 of stat (utime, stime, cutime, cstime) are 11-14 after the name; 100 ticks a second.
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
}

function startWorker(store: string, env: NodeJS.ProcessEnv, cwd: string, index: number): Worker {
  const usageFile = join(cwd, `usage-${index}.json`);
  const child = spawn(process.execPath, [...benchNodeFlags(), "--import", USAGE_REPORT, CLI, "--store", store, "worker"], { cwd, env: { ...env, BENCH_USAGE_FILE: usageFile }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  let started: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (started = resolve));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
    if (/ started on /.test(stderr)) started();
  });
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return {
    ready,
    cpuMs: () => processCpuMs(child.pid!),
    async stop() {
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(killer);
      const usage = existsSync(usageFile) ? (JSON.parse(readFileSync(usageFile, "utf8")) as { userMs: number; systemMs: number }) : null;
      rmSync(usageFile, { force: true });
      return { cpuMs: usage ? usage.userMs + usage.systemMs : Number.NaN, stderr };
    },
  };
}

/**
 * CPU milliseconds spent so far by the PostgreSQL server: its live processes, and the
 * backends that already ended (counted in the postmaster's children's time). Linux /proc only.
 */
function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).startsWith("postgres")) total += processCpuMs(Number(entry));
    } catch {
      // Ended meanwhile.
    }
  }
  return total;
}

function runOne(workers: number, apart: boolean): Promise<Row> {
  return withDatabases(apart ? workers : 1, (addresses) => runOnDatabases(workers, addresses.map((address) => new URL(address))));
}

/** `count` fresh databases, each dropped after `run`. */
function withDatabases<T>(count: number, run: (addresses: string[]) => Promise<T>, made: string[] = []): Promise<T> {
  if (made.length === count) return run(made);
  return withDatabase((address) => withDatabases(count, run, [...made, address]));
}

/** `items` dealt in turn to `count` hands. */
function dealt<T>(items: T[], count: number): T[][] {
  return Array.from({ length: count }, (_, hand) => items.filter((_item, index) => index % count === hand));
}

/**
 * One run: `workers` workers, on one store when `addresses` holds one database, or each on its own (the control,
 * `apart`) when it holds one per worker; the jobs dealt to the stores in turn.
 */
async function runOnDatabases(workers: number, addresses: URL[]): Promise<Row> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: RENDER_MS, concurrencyLimit: SLOTS } });
  const stores = await Promise.all(addresses.map((address) => openPostgresStore(address.toString(), { maxConnections: 2 })));
  const store = stores[0]!;
  const readers: pg.Client[] = [];
  try {
    const env = { ...cliEnvironment(sandbox.url, join(folder.path, "out")), ...(RAISED ? { MEDIAGATE_D_CONCURRENCY: String(SLOTS) } : {}) };
    const config = loadConfig({ env: env as Record<string, string>, cwd: folder.path });
    const adapter = createProviderRegistry(config).get("d")!.adapter!;
    const options = { idPrefix: "job_w_", refPrefix: "w-", prompt: "worker image", batchId: "workers", outDir: config.outputDir, idDigits: 6 };
    const backlogJobs = await dBenchJobs(adapter, JOBS, options);
    // The workers start first and go idle, so their start-up is not counted in the backlog's CPU; the
    // backlog then arrives as a batch queued elsewhere does (one insert, announced to listening workers).
    const running = Array.from({ length: workers }, (_, index) => startWorker(addresses[index % addresses.length]!.toString(), env, folder.path, index));
    await Promise.all(running.map((worker) => worker.ready));
    // The backlog's end is read by this process every 200 ms (the bench's own look, not the workers').
    for (const each of addresses) {
      const reader = new pg.Client({ connectionString: each.toString() });
      await reader.connect();
      readers.push(reader);
    }
    const counted = async (sql: string) => (await Promise.all(readers.map(async (each) => Number((await each.query<{ n: string }>(sql)).rows[0]!.n)))).reduce((sum, n) => sum + n, 0);
    const unfinished = () => counted("select count(*) as n from jobs where state not in ('succeeded','failed','cancelled','expired','unknown_submission')");
    const allWork = async (): Promise<DatabaseWork> => {
      const works = await Promise.all(readers.map(databaseWork));
      return { transactions: works.reduce((sum, work) => sum + work.transactions, 0), rowsWritten: works.reduce((sum, work) => sum + work.rowsWritten, 0) };
    };
    // Jobs queued in one insert per store, the stores' shares dealt in turn.
    const queue = async (jobs: Awaited<ReturnType<typeof dBenchJobs>>) => {
      const at = Date.now();
      await Promise.all(dealt(jobs, stores.length).map((share, index) => stores[index]!.insertJobs(share, at)));
    };
    const warmUpJobs = WARMUP_JOBS * running.length;
    const deadline = Date.now() + 120_000 + (warmUpJobs + JOBS) * 100;
    if (warmUpJobs > 0) {
      await queue(await dBenchJobs(adapter, warmUpJobs, { ...options, idPrefix: "job_u_", refPrefix: "u-", prompt: "warm-up image" }));
      while ((await unfinished()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const warmRequests = (await sandbox.stats<SandboxStats>()).requests.length;
    const idleCpu = running.map((worker) => worker.cpuMs());
    const postgresCpuBefore = postgresCpuMs();
    const sandboxCpuBefore = (await sandbox.stats<SandboxStats>()).cpuMs;
    const workBefore = await allWork();
    await queue(backlogJobs);
    while ((await unfinished()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    const backlogCpu = running.map((worker, index) => worker.cpuMs() - idleCpu[index]!);
    const postgresCpu = postgresCpuMs() - postgresCpuBefore;
    const backlog = await sandbox.stats<SandboxStats>();
    backlog.requests = backlog.requests.slice(warmRequests);
    const sandboxCpu = backlog.cpuMs - sandboxCpuBefore;
    // BENCH_DUMP: D's log of the backlog and its jobs, for per-wave analysis (as in d-scale).
    if (process.env.BENCH_DUMP) writeFileSync(`${process.env.BENCH_DUMP}.${workers}`, JSON.stringify(backlog));
    // The backlog's workers stop here (their claims and database work are the backlog's); fresh ones,
    // idle before the first sample, take the latency samples.
    const stopped = await Promise.all(running.map((worker) => worker.stop()));
    const workAfter = await allWork();
    // Start latency on the first store (apart, only its own worker listens there).
    const sampling = Array.from({ length: workers }, (_, index) => startWorker(addresses[index % addresses.length]!.toString(), env, folder.path, workers + index));
    await Promise.all(sampling.map((worker) => worker.ready));
    // Start latency: one job at a time, each after the last was submitted.
    const latencies: number[] = [];
    const more = await dBenchJobs(adapter, LATENCY_SAMPLES, { ...options, idPrefix: "job_l_", refPrefix: "l-", prompt: "latency image" });
    for (const job of more) {
      await new Promise((resolve) => setTimeout(resolve, LATENCY_GAP_MS));
      // Asked every 5 ms for the POSTs since the insert only (the whole log, each time, took a core from the workers).
      const since = await sandbox.now();
      const queuedAt = Date.now();
      await store.insertJobs([job], queuedAt);
      for (;;) {
        const posts = (await sandbox.postsSince("d", since)).filter((realAt) => realAt >= queuedAt);
        if (posts.length > 0) {
          latencies.push(posts[0]! - queuedAt);
          break;
        }
        if (Date.now() - queuedAt > 10_000) {
          latencies.push(Number.POSITIVE_INFINITY);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    process.stderr.write(`  start latencies in order, ms (the first is a fresh worker's first job): ${latencies.join(" ")}\n`);
    while ((await unfinished()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    const sampled = await Promise.all(sampling.map((worker) => worker.stop()));
    const succeeded = await counted("select count(*) as n from jobs where state = 'succeeded'");
    const requests = backlog.requests.filter((request) => request.provider === "d");
    const posts = requests.filter((request) => request.method === "POST" && request.url.startsWith("/d/v1/"));
    const downloads = requests.filter((request) => request.url.startsWith("/d-results/"));
    const perResult = new Map<string, number>();
    for (const download of downloads) perResult.set(download.url.split("?")[0]!, (perResult.get(download.url.split("?")[0]!) ?? 0) + 1);
    const spanMs = Math.max(...requests.map((request) => request.realAt)) - Math.min(...requests.map((request) => request.realAt));
    const claimsOf = (exits: Array<{ stderr: string }>) =>
      exits.map((worker) => /claims: (\d+) won, (\d+) lost/.exec(worker.stderr)).map((match) => (match ? [Number(match[1]), Number(match[2])] : [Number.NaN, Number.NaN]));
    const claims = claimsOf(stopped);
    const sortedLatencies = [...latencies].sort((left, right) => left - right);
    return {
      workers,
      apart: addresses.length > 1,
      succeeded,
      spanMs,
      jobsPerSecond: JOBS / (spanMs / 1000),
      peakActive: backlog.d.peakActive,
      rejected429: backlog.d.rejected429,
      submitsPerJob: posts.length / JOBS,
      downloadsPerJob: downloads.length / JOBS,
      mostDownloadsOfOneResult: Math.max(0, ...perResult.values()),
      cpuMsPerJob: backlogCpu.reduce((sum, ms) => sum + ms, 0) / JOBS,
      cpuMsPerJobByWorker: backlogCpu.map((ms) => ms / JOBS),
      lifetimeCpuMsPerJob: stopped.reduce((sum, worker) => sum + worker.cpuMs, 0) / JOBS,
      claimsWon: claims.reduce((sum, [won]) => sum + won!, 0),
      claimsLost: claims.reduce((sum, [, lost]) => sum + lost!, 0),
      latencyClaimsLost: claimsOf(sampled).reduce((sum, [, lost]) => sum + lost!, 0),
      latencyP50Ms: quantile(sortedLatencies, 0.5),
      latencyP99Ms: quantile(sortedLatencies, 0.99),
      postgresCpuMsPerJob: postgresCpu / JOBS,
      sandboxCpuMsPerJob: sandboxCpu / JOBS,
      transactionsPerJob: (workAfter.transactions - workBefore.transactions) / JOBS,
      rowsWrittenPerJob: (workAfter.rowsWritten - workBefore.rowsWritten) / JOBS,
    };
  } finally {
    for (const reader of readers) await reader.end().catch(() => undefined);
    for (const each of stores) await each.close();
    await sandbox.stop();
    folder.remove();
  }
}

/**
 * The workers' CPU per job at each count ÷ at the fewest, within each round, and the median of the rounds' ratios
 * (target ≤ 1.2 at 4 workers); and, where D's cap binds, span ÷ bound by worker count with its median over the rounds.
 */
function ratioLines(all: Array<Row & { round: number }>): string[] {
  const rows = all.filter((row) => !row.apart);
  const fewest = Math.min(...WORKER_COUNTS);
  const rounds = [...new Set(rows.map((row) => row.round))];
  const lines: string[] = [];
  const ratiosOf = (over: (round: number) => Row | undefined, of: (round: number) => Row | undefined) =>
    rounds.flatMap((round) => {
      const base = over(round);
      const here = of(round);
      return base && here ? [here.cpuMsPerJob / base.cpuMsPerJob] : [];
    });
  const listed = (ratios: number[]) => `${ratios.map((value) => value.toFixed(2)).join(", ")}${ratios.length > 1 ? ` (median ${median(ratios).toFixed(2)})` : ""}`;
  const find = (round: number, workers: number, apart: boolean) => all.find((row) => row.round === round && row.workers === workers && row.apart === apart);
  for (const workers of WORKER_COUNTS) {
    const spans = rows.filter((row) => row.workers === workers).map((row) => row.spanMs / (Math.ceil(JOBS / SLOTS) * RENDER_MS));
    // With the cap raised no cap binds, so the bound says nothing there (the table keeps the figure).
    const spanText = RAISED ? "" : `span ÷ bound ${spans.map((value) => value.toFixed(3)).join(", ")}${spans.length > 1 ? ` (median ${median(spans).toFixed(3)})` : ""}`;
    if (workers === fewest) {
      if (spanText) lines.push(`- ${workers} worker(s): ${spanText}`);
      continue;
    }
    const ratios = ratiosOf((round) => find(round, fewest, false), (round) => find(round, workers, false));
    const ratioText = `engine CPU per job ÷ at ${fewest}: ${listed(ratios)}${RAISED ? " (target ≤ 1.2 at 4)" : ""}`;
    lines.push(`- ${workers} worker(s): ${[spanText, ratioText].filter(Boolean).join("; ")}`);
    const machine = ratiosOf((round) => find(round, fewest, false), (round) => find(round, workers, true));
    const coordination = ratiosOf((round) => find(round, workers, true), (round) => find(round, workers, false));
    if (machine.length > 0) {
      lines.push(`  - ${workers} workers apart (each on its own database, nothing coordinated), CPU per job ÷ 1 worker: ${listed(machine)}`);
      lines.push(`  - coordination, ${workers} workers on one store ÷ ${workers} apart: ${listed(coordination)}`);
    }
  }
  return lines;
}

/** `d-workers-raised`: the same with D's cap raised to BENCH_SLOTS (default 400) on both sides. */
export async function runDWorkersRaised(): Promise<void> {
  await runDWorkers(Number(process.env.BENCH_SLOTS ?? 400));
}

export async function runDWorkers(slots = Number(process.env.BENCH_SLOTS ?? D_PUBLISHED_SLOTS)): Promise<void> {
  SLOTS = slots;
  RAISED = slots !== D_PUBLISHED_SLOTS;
  // Apart, each store would take D's whole cap: only where no cap binds is the control the same work.
  APART = RAISED && process.env.BENCH_APART !== "0";
  if (!process.env.DATABASE_URL) throw new Error("d-workers needs DATABASE_URL (PostgreSQL)");
  checkBuiltCli();
  // On 2 cores shared by every process, one run of a worker count reads up to a third apart from the next: the ratio
  // that decides the target is taken between runs made side by side (one round), and its median over the rounds.
  const rounds = Number(process.env.BENCH_ROUNDS ?? (RAISED ? 3 : 1));
  const rows: Array<Row & { round: number }> = [];
  for (let round = 1; round <= rounds; round++) {
    for (const workers of WORKER_COUNTS) {
      for (const apart of APART && workers > Math.min(...WORKER_COUNTS) ? [false, true] : [false]) {
        process.stderr.write(`d-workers: round ${round} of ${rounds}, ${workers} worker(s)${apart ? " apart" : ""}…\n`);
        const row = await runOne(workers, apart);
        process.stderr.write(`  ${JSON.stringify(row)}\n`);
        rows.push({ ...row, round });
      }
    }
  }
  const title = RAISED
    ? `## D on several workers, no provider cap binding: D raised to ${SLOTS} slots (MEDIAGATE_D_CONCURRENCY), 1, 2 and 4 \`mediagate worker\` processes on one PostgreSQL store (issue 10)`
    : `## D on several workers: 1, 2 and 4 \`mediagate worker\` processes on one PostgreSQL store (issue 10)`;
  const lines = [
    title,
    ``,
    `Run ${new Date().toISOString()} on ${process.version}; the workers started and idle, ${WARMUP_JOBS > 0 ? `then ${WARMUP_JOBS} D jobs per worker queued and run as a warm-up (not measured: each worker's hot code compiled; the claims column counts them), ` : ""}then ${JOBS} D jobs queued through the store in one insert; sandbox D in a child process, ${RAISED ? `its cap raised to ${SLOTS} slots and the workers told so` : `its real ${SLOTS}-slot cap`}, render T = ${RENDER_MS} ms. All processes (workers, PostgreSQL, sandbox, this bench) share the machine's cores. CPU over the backlog, from all workers idle to its last job finished, per job: each worker process's own (from /proc), PostgreSQL's processes' (live and ended backends), the sandbox's process's; the backlog workers' whole lives (start-up, backlog, stop) per job beside it; claims and PostgreSQL's transactions and rows written (pg_stat_database) are the backlog workers'. Start latency: as many fresh workers, idle, then ${LATENCY_SAMPLES} jobs queued from this process one at a time, from the insert to D receiving the submit; each sample is announced to every idle worker, and those that find it taken count a claim lost.${APART ? ` Each round also runs the control, marked apart: as many workers, each on a database of its own on the same PostgreSQL server with the jobs dealt to the databases in turn, the same sandbox, nothing coordinated (no shared rows, no claims to lose, no notices of other workers' jobs); its start latency is the first database's, where one worker listens.` : ""}`,
    ``,
    `| round | workers | succeeded | jobs/s | span ÷ bound${RAISED ? "" : " (≤ 1.05)"} | peak at D (≤ ${SLOTS}) | 429s | submits per job | downloads per job (most of one result) | CPU per job, all workers (whole lives) | CPU per job by worker | PostgreSQL CPU per job | sandbox CPU per job | claims won / lost to another worker (< 5%) | start latency p50 / p99 (≤ 100 ms), claims lost meanwhile | PostgreSQL transactions / rows written per job |`,
    `|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|`,
    ...rows.map(
      (row) =>
        `| ${row.round} | ${row.workers}${row.apart ? " apart" : ""} | ${row.succeeded} / ${WARMUP_JOBS * row.workers + JOBS + LATENCY_SAMPLES} | ${row.jobsPerSecond.toFixed(1)} | ${(row.spanMs / (Math.ceil(JOBS / SLOTS) * RENDER_MS)).toFixed(3)} | ${row.peakActive} | ${row.rejected429} | ${row.submitsPerJob.toFixed(3)} | ${row.downloadsPerJob.toFixed(3)} (${row.mostDownloadsOfOneResult}) | ${row.cpuMsPerJob.toFixed(2)} ms (${row.lifetimeCpuMsPerJob.toFixed(2)} ms) | ${row.cpuMsPerJobByWorker.map((ms) => ms.toFixed(2)).join(" / ")} ms | ${row.postgresCpuMsPerJob.toFixed(2)} ms | ${row.sandboxCpuMsPerJob.toFixed(2)} ms | ${row.claimsWon} / ${row.claimsLost} (${((100 * row.claimsLost) / Math.max(1, row.claimsWon + row.claimsLost)).toFixed(1)}%) | ${row.latencyP50Ms.toFixed(0)} / ${row.latencyP99Ms.toFixed(0)} ms, ${row.latencyClaimsLost} | ${row.transactionsPerJob.toFixed(1)} / ${row.rowsWrittenPerJob.toFixed(1)} |`,
    ),
    ``,
    ...ratioLines(rows),
  ];
  const markdown = lines.join("\n");
  process.stdout.write(`${markdown}\n`);
  recordResult(RAISED ? "d-workers-raised" : "d-workers", markdown);
}

/**
 * Issue 10's benchmark: the engine's cost per job must not grow with the
 * batch. Sandbox D (24 slots, fixed render time) in a child process, and
 * `mediagate batch FILE` run as a user runs it — the built CLI in its own
 * process, on SQLite and on PostgreSQL (when DATABASE_URL is set), for
 * N = 200, 2,000 and 20,000 — so that CPU and memory are the engine
 * process's own, start-up, validation and the wait included.
 *
 * Reports per run: the CLI process's CPU per job (target ≤ 10 ms, and the
 * largest N within 1.3× the smallest), makespan ÷ lower bound ceil(N/24) × T
 * (target ≤ 1.05) both from D's first request to its last and as the
 * command's wall time, the validation step (the command's start to D's first
 * request; target < 3 s at 20,000), the process's peak RSS (target < 150 MB
 * with 20,000 queued), store bytes per job, and D's requests per job.
 *
 * BENCH_SIZES (default 200,2000,20000), BENCH_STORES (sqlite,postgres),
 * BENCH_RENDER_MS (500), BENCH_DUMP (a file: the sandbox's request log and
 * D's jobs of the last run, for per-wave analysis), BENCH_ROUNDS (default 1:
 * each store and size run that many times, the stores and sizes alternated
 * round by round, every run in the table and the median of each's span ÷
 * bound and engine CPU under it; at 200 one run of unchanged code read
 * anywhere from 1.06 to 1.15 on one machine in one hour). Needs `npm run
 * build` first.
 */
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkBuiltCli, cliEnvironment, dBatchFile, median, recordResult, runCli, startSandboxChild, tempFolder, withDatabase } from "./harness.js";

const SIZES = (process.env.BENCH_SIZES ?? "200,2000,20000").split(",").map(Number);
const STORES = (process.env.BENCH_STORES ?? "sqlite,postgres").split(",").filter((kind) => kind !== "postgres" || process.env.DATABASE_URL);
const RENDER_MS = Number(process.env.BENCH_RENDER_MS ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const SLOTS = 24;

interface Row {
  round: number;
  store: string;
  jobs: number;
  succeeded: number;
  spanMs: number;
  wallMs: number;
  validationMs: number;
  boundMs: number;
  cpuMsPerJob: number;
  engineCpuMsPerJob: number;
  peakRssMb: number;
  peakHeapMb: number;
  storeBytesPerJob: number;
  requestsPerJob: number;
  /** Share of first polls that found the job still rendering (each costs it a poll interval). */
  firstPollsPendingShare: number;
  /** Mean time from D's Ready to the poll that found it (ms). */
  meanDetectionLagMs: number;
  peakActive: number;
  rejected429: number;
}

interface SandboxStats {
  requests: Array<{ provider: string | null; realAt: number; at: number; url: string }>;
  d: { rejected429: number; peakActive: number; jobs: Array<{ id: string; readyAt: number | null }> };
}

/** From D's log: how many first polls found their job still rendering, and the mean lag from Ready to the poll that saw it. */
function pollingOf(stats: SandboxStats): { firstPollsPendingShare: number; meanDetectionLagMs: number } {
  const polls = new Map<string, number[]>();
  for (const request of stats.requests) {
    const id = /get_result\?id=([^&]+)/.exec(request.url)?.[1];
    if (id === undefined) continue;
    const list = polls.get(decodeURIComponent(id)) ?? [];
    list.push(request.at);
    polls.set(decodeURIComponent(id), list);
  }
  let pendingFirst = 0;
  let lagSum = 0;
  let seen = 0;
  for (const job of stats.d.jobs) {
    const times = polls.get(job.id);
    if (job.readyAt === null || !times?.length) continue;
    seen++;
    if (times[0]! < job.readyAt) pendingFirst++;
    const found = times.find((at) => at >= job.readyAt!);
    if (found !== undefined) lagSum += found - job.readyAt;
  }
  return { firstPollsPendingShare: seen ? pendingFirst / seen : Number.NaN, meanDetectionLagMs: seen ? lagSum / seen : Number.NaN };
}

async function runOne(kind: string, jobs: number, round: number): Promise<Row> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: RENDER_MS } });
  try {
    const file = join(folder.path, "scale.jsonl");
    writeFileSync(file, dBatchFile(jobs, { refPrefix: "scale-", prompt: (index) => `scale image ${index}`, side: 256 }));
    const env = cliEnvironment(sandbox.url, join(folder.path, "out"));
    // BENCH_GIVE_UP_S: kill a run that does not finish (profiling).
    const deadlineMs = Number(process.env.BENCH_GIVE_UP_S ?? 120 + jobs * 0.1) * 1000;
    let storeBytes = 0;
    const batch = async (store: string) => {
      const started = Date.now();
      const exit = await runCli(["--json", "--store", store, "batch", file], { cwd: folder.path, env, deadlineMs });
      return { exit, started, wallMs: Date.now() - started };
    };
    const run =
      kind === "sqlite"
        ? await batch(`sqlite:${join(folder.path, "bench.db")}`)
        : await withDatabase(batch, (bytes) => (storeBytes = bytes));
    if (kind === "sqlite") {
      storeBytes = readdirSync(folder.path)
        .filter((name) => name.startsWith("bench.db"))
        .reduce((sum, name) => sum + statSync(join(folder.path, name)).size, 0);
    }
    if (run.exit.code !== 0) process.stderr.write(`mediagate batch exited with ${run.exit.code ?? run.exit.signal}:\n${run.exit.stderr.slice(-2_000)}\n`);
    const stats = await sandbox.stats<SandboxStats>();
    if (process.env.BENCH_DUMP) writeFileSync(process.env.BENCH_DUMP, JSON.stringify(stats));
    const requests = stats.requests.filter((request) => request.provider === "d");
    const first = Math.min(...requests.map((request) => request.realAt));
    const last = Math.max(...requests.map((request) => request.realAt));
    const succeeded = run.exit.stdout.split("\n").filter((line) => line.includes('"state":"succeeded"')).length;
    return {
      round,
      store: kind,
      jobs,
      succeeded,
      spanMs: last - first,
      wallMs: run.wallMs,
      validationMs: first - run.started,
      boundMs: Math.ceil(jobs / SLOTS) * RENDER_MS,
      cpuMsPerJob: (run.exit.usage?.cpuMs ?? Number.NaN) / jobs,
      engineCpuMsPerJob: (run.exit.usage?.cpuMsAfter(first) ?? Number.NaN) / jobs,
      peakRssMb: run.exit.usage?.maxRssMb ?? Number.NaN,
      peakHeapMb: run.exit.usage?.peakHeapMb ?? Number.NaN,
      storeBytesPerJob: storeBytes / jobs,
      requestsPerJob: requests.length / jobs,
      ...pollingOf(stats),
      peakActive: stats.d.peakActive,
      rejected429: stats.d.rejected429,
    };
  } finally {
    await sandbox.stop();
    folder.remove();
  }
}

export async function runDScale(): Promise<void> {
  checkBuiltCli();
  const rows: Row[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const kind of STORES) {
      for (const size of SIZES) {
        process.stderr.write(`d-scale: round ${round} of ${ROUNDS}, ${kind}, ${size} jobs…\n`);
        const row = await runOne(kind, size, round);
        process.stderr.write(`  ${JSON.stringify(row)}\n`);
        rows.push(row);
      }
    }
  }
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const lines = [
    `## D at scale: cost per job flat from ${SIZES[0]} to ${SIZES.at(-1)} jobs (issue 10)`,
    ``,
    `Run ${new Date().toISOString()} on ${process.version}; sandbox D in a child process over loopback, ${SLOTS} slots, render T = ${RENDER_MS} ms;`,
    `\`mediagate --json --store … batch FILE\` run as the built CLI in its own process: CPU and peak RSS are that process's own,`,
    `read at its exit; the engine's CPU is what the process spent from D's first request to its exit (sampled every 250 ms), the`,
    `process's is its whole life (start-up and validation too). Makespan is D's first request to its last (the last download);`,
    `wall is the command's start to its exit, validation its start to D's first request.`,
    ``,
    `| round | store | jobs | succeeded | makespan (D's span) | bound ceil(N/24)×T | span ÷ bound (≤ 1.05) | wall ÷ bound | validation (< 3 s) | engine CPU per job, from D's first request (≤ 10 ms) | process CPU per job, whole life | peak RSS (< 150 MB at 20,000) / JS heap | store bytes per job | D requests per job (incl. downloads) | first polls found pending | mean Ready → detection | peak at D | 429s |`,
    `|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|`,
    ...rows.map(
      (row) =>
        `| ${row.round} | ${row.store} | ${row.jobs} | ${row.succeeded} | ${seconds(row.spanMs)} | ${seconds(row.boundMs)} | ${(row.spanMs / row.boundMs).toFixed(3)} | ${(row.wallMs / row.boundMs).toFixed(3)} | ${seconds(row.validationMs)} | ${row.engineCpuMsPerJob.toFixed(2)} ms | ${row.cpuMsPerJob.toFixed(2)} ms | ${row.peakRssMb.toFixed(0)} / ${row.peakHeapMb.toFixed(0)} MB | ${row.storeBytesPerJob.toFixed(0)} | ${row.requestsPerJob.toFixed(2)} | ${(row.firstPollsPendingShare * 100).toFixed(1)}% | ${row.meanDetectionLagMs.toFixed(1)} ms | ${row.peakActive} | ${row.rejected429} |`,
    ),
    ``,
  ];
  for (const kind of STORES) {
    // Medians over the rounds (the one run's figures with one round).
    const of = (size: number, measure: (row: Row) => number) => median(rows.filter((row) => row.store === kind && row.jobs === size).map(measure));
    if (ROUNDS > 1) {
      for (const size of SIZES) {
        lines.push(`- ${kind}, ${size} jobs, median of ${ROUNDS}: span ÷ bound ${of(size, (row) => row.spanMs / row.boundMs).toFixed(3)}, engine CPU per job ${of(size, (row) => row.engineCpuMsPerJob).toFixed(2)} ms`);
      }
    }
    if (SIZES.length >= 2) {
      const [first, last] = [SIZES[0]!, SIZES.at(-1)!];
      const ratio = (measure: (row: Row) => number) => (of(last, measure) / of(first, measure)).toFixed(2);
      lines.push(`- ${kind}: CPU per job at ${last} ÷ at ${first}${ROUNDS > 1 ? " (medians)" : ""}: engine ${ratio((row) => row.engineCpuMsPerJob)}, process ${ratio((row) => row.cpuMsPerJob)} (target ≤ 1.3)`);
    }
  }
  const markdown = lines.join("\n");
  process.stdout.write(`${markdown}\n`);
  recordResult("d-scale", markdown);
  if (rows.some((row) => row.succeeded !== row.jobs)) process.exitCode = 1;
}

/**
 * Issue 3's C benchmark: 60 C jobs on the free tier (3 slots) with a fixed
 * render time T. Reports makespan ÷ ceil(60/3) × T (target ≤ 1.10) and the
 * 500044 answers received (target 0). C asks for a poll every 3–5 s, so the
 * run uses virtual time (scale BENCH_TIME_SCALE, default 10) on both sides:
 * the engine's clock is started from the sandbox's, and every time below is
 * virtual.
 */
import { loadConfig } from "../src/core/config.js";
import { ScaledClock } from "../src/core/clock.js";
import { isTerminal } from "../src/core/job.js";
import { Engine } from "../src/engine/engine.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import { waitAndRead } from "../test/helpers/wait.js";
import { benchJobs, mean, recordResult, startSandboxChild, tempFolder } from "./harness.js";

const JOBS = Number(process.env.BENCH_JOBS ?? 60);
const RENDER_MS = Number(process.env.BENCH_RENDER_MS ?? 60_000);
const SCALE = Number(process.env.BENCH_TIME_SCALE ?? 10);
const SLOTS = 3;

interface Stats {
  requests: Array<{ provider: string | null; method: string; url: string }>;
  c: {
    stats: { submits: number; concurrentLimitRejections: number; peakConcurrency: Record<string, number> };
    tasks: Array<{ videoId: string; createdAt: number; finishedAt?: number }>;
  };
}

export async function runCMakespan(): Promise<void> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: SCALE, c: { tier: "free", renderMs: RENDER_MS, balanceCredits: 1_000_000 } });
  const store = await openSqliteStore(`${folder.path}/bench.db`);
  try {
    const clock = new ScaledClock(SCALE, await sandbox.now());
    const config = loadConfig({
      env: { MEDIAGATE_C_BASE_URL: `${sandbox.url}/c`, MEDIAGATE_C_API_KEY: "sandbox-c-key", MEDIAGATE_C_TIER: "free", MEDIAGATE_OUTPUT_DIR: `${folder.path}/out` },
      cwd: folder.path,
    });
    const providers = createProviderRegistry(config);
    const adapter = providers.get("c")!.adapter!;
    const jobs = await benchJobs(adapter, JOBS, (index) => ({ provider: "c", model: "v6", input: { prompt: `bench video ${index}`, seed: index } }), {
      idPrefix: "job_c_",
      refPrefix: "bench-c-",
      batchId: "bench",
      outDir: config.outputDir,
      idDigits: 4,
    });
    await store.insertJobs(jobs, clock.now());
    const engine = new Engine({ store, providers, clock, secrets: () => ["sandbox-c-key"] });
    const cpuBefore = process.cpuUsage();
    const started = clock.now();
    engine.start();
    const outcome = await waitAndRead(engine, store, jobs.map((job) => job.id));
    const makespanMs = clock.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    await engine.stop();
    const stats = await sandbox.stats<Stats>();
    const counters = engine.stats().c!;
    const lowerBoundMs = Math.ceil(JOBS / SLOTS) * RENDER_MS;
    const succeeded = outcome.jobs.filter((job) => job.state === "succeeded").length;
    const finishedAt = new Map(stats.c.tasks.map((task) => [task.videoId, task.finishedAt]));
    const lags = outcome.jobs
      .filter((job) => job.providerDoneAt !== null && job.providerJobId && finishedAt.get(job.providerJobId) !== undefined)
      .map((job) => job.providerDoneAt! - finishedAt.get(job.providerJobId!)!);
    const created = stats.c.tasks.map((task) => task.createdAt).sort((left, right) => left - right);
    const finished = stats.c.tasks.map((task) => task.finishedAt ?? 0).sort((left, right) => left - right);
    const idle = created.slice(SLOTS).map((at, index) => at - finished[index]!);
    const cRequests = stats.requests.filter((request) => request.provider === "c" && !request.url.startsWith("/c/results/"));
    const markdown = [
      `## C: ${JOBS} jobs on the free tier (3 slots), fixed render time (issue 3)`,
      ``,
      `Run ${new Date().toISOString()} on ${process.version}; sandbox in a child process over loopback; SQLite store; T = ${RENDER_MS / 1000} s of virtual time; time scale ${SCALE} on both sides (C's 3–5 s poll pace is virtual too), so every duration below is virtual.`,
      ``,
      `| measure | value | target |`,
      `|---|---|---|`,
      `| jobs succeeded | ${succeeded} / ${JOBS} | all |`,
      `| makespan | ${(makespanMs / 1000).toFixed(1)} s | |`,
      `| lower bound ceil(${JOBS}/${SLOTS}) × T | ${(lowerBoundMs / 1000).toFixed(1)} s | |`,
      `| makespan ÷ lower bound | ${(makespanMs / lowerBoundMs).toFixed(3)} | ≤ 1.10 |`,
      `| 500044 received (engine back-pressure) / sent (sandbox) | ${counters.backpressure} / ${stats.c.stats.concurrentLimitRejections} | 0 |`,
      `| peak generating tasks at the sandbox | ${Math.max(...Object.values(stats.c.stats.peakConcurrency))} | ≤ ${SLOTS} |`,
      `| provider requests per job (submit + result reads) | ${(cRequests.length / JOBS).toFixed(2)} | |`,
      `| time from the task leaving status 5 to the engine seeing it: mean / max | ${(mean(lags) / 1000).toFixed(2)} / ${(Math.max(...lags) / 1000).toFixed(2)} s | poll pace 3–5 s |`,
      `| mean slot idle (a task finished → the next task created) | ${(mean(idle) / 1000).toFixed(2)} s | |`,
      `| engine CPU per job (user + system, real) | ${((cpu.user + cpu.system) / 1000 / JOBS).toFixed(2)} ms | |`,
    ].join("\n");
    process.stdout.write(`${markdown}\n`);
    recordResult("c-makespan", markdown);
    if (!outcome.jobs.every((job) => isTerminal(job.state))) process.exitCode = 1;
  } finally {
    await store.close();
    await sandbox.stop();
    folder.remove();
  }
}

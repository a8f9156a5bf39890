/**
 * Issue 3's A benchmark: 300 A jobs against the standard plan's 180
 * requests per minute (polls included). Reports the busiest 60-second window
 * of requests A received (target ≤ 180), A's own 429 count (target 0), and
 * requests per job. Virtual time (scale BENCH_TIME_SCALE, default 10) on both
 * sides: the engine's clock starts from the sandbox's; times are virtual.
 */
import { loadConfig } from "../src/core/config.js";
import { ScaledClock } from "../src/core/clock.js";
import { isTerminal } from "../src/core/job.js";
import { Engine } from "../src/engine/engine.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import { waitAndRead } from "../test/helpers/wait.js";
import { benchJobs, busiestWindow, mean, recordResult, startSandboxChild, tempFolder } from "./harness.js";

const JOBS = Number(process.env.BENCH_JOBS ?? 300);
const SCALE = Number(process.env.BENCH_TIME_SCALE ?? 10);
const LIMIT = 180;

interface Stats {
  requests: Array<{ provider: string | null; method: string; url: string; at: number; statusCode?: number }>;
  a: { rateLimits: { rejected: number }; tasks: Array<{ id: string; createdAt: number; finishedAt: number }> };
}

export async function runARate(): Promise<void> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: SCALE, a: { queueMs: 0, renderMs: { min: 30_000, max: 60_000 } } });
  const store = await openSqliteStore(`${folder.path}/bench.db`);
  try {
    const clock = new ScaledClock(SCALE, await sandbox.now());
    const config = loadConfig({
      env: { MEDIAGATE_A_BASE_URL: `${sandbox.url}/a`, MEDIAGATE_A_API_KEY: "sandbox-a-key", MEDIAGATE_OUTPUT_DIR: `${folder.path}/out` },
      cwd: folder.path,
    });
    const providers = createProviderRegistry(config);
    const adapter = providers.get("a")!.adapter!;
    const jobs = await benchJobs(adapter, JOBS, (index) => ({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: `bench video ${index}`, duration: 5, resolution: "480p", seed: index } }), {
      idPrefix: "job_a_",
      refPrefix: "bench-a-",
      batchId: "bench",
      outDir: config.outputDir,
      idDigits: 4,
    });
    await store.insertJobs(jobs, clock.now());
    // The times our limiter stamped on the requests it let through, to compare with when A counted them.
    const stamps: number[] = [];
    const takeRateToken = store.takeRateToken.bind(store);
    store.takeRateToken = async (windows, now) => {
      const take = await takeRateToken(windows, now);
      if (take.granted) stamps.push(take.token.at);
      return take;
    };
    const engine = new Engine({ store, providers, clock, secrets: () => ["sandbox-a-key"] });
    const started = clock.now();
    engine.start();
    const outcome = await waitAndRead(engine, store, jobs.map((job) => job.id));
    const makespanMs = clock.now() - started;
    await engine.stop();
    const stats = await sandbox.stats<Stats>();
    const counters = engine.stats().a!;
    // What A's limit counts: its API paths (submits and task reads); result downloads are signed links, not API calls.
    const apiRequests = stats.requests.filter((request) => request.provider === "a" && request.url.includes("/contents/generations/tasks"));
    const busiest = busiestWindow(apiRequests.map((request) => request.at), 60_000);
    const busiestStamped = busiestWindow(stamps, 60_000);
    const succeeded = outcome.jobs.filter((job) => job.state === "succeeded").length;
    const finishedAt = new Map(stats.a.tasks.map((task) => [task.id, task.finishedAt]));
    const lags = outcome.jobs
      .filter((job) => job.providerDoneAt !== null && job.providerJobId && finishedAt.has(job.providerJobId))
      .map((job) => job.providerDoneAt! - finishedAt.get(job.providerJobId!)!);
    // Every job needs at least a submit and one read; at most LIMIT requests fit in any minute, so the
    // last of 2 × JOBS requests cannot come before (ceil(2 × JOBS / LIMIT) − 1) minutes.
    const floorMs = (Math.ceil((2 * JOBS) / LIMIT) - 1) * 60_000;
    const markdown = [
      `## A: ${JOBS} jobs at the standard plan's ${LIMIT} requests per minute (issue 3)`,
      ``,
      `Run ${new Date().toISOString()} on ${process.version}; sandbox in a child process over loopback; SQLite store; render 30–60 s; time scale ${SCALE} on both sides, so every duration below is virtual.`,
      ``,
      `| measure | value | target |`,
      `|---|---|---|`,
      `| jobs succeeded | ${succeeded} / ${JOBS} | all |`,
      `| busiest 60 s window of API requests at A | ${busiest.count} | ≤ ${LIMIT} |`,
      `| busiest 60 s window of the times our limiter stamped (${stamps.length} stamps) | ${busiestStamped.count} | ≤ ${LIMIT} |`,
      `| 429s received (engine) / sent (sandbox) | ${counters.status429} / ${stats.a.rateLimits.rejected} | 0 |`,
      `| API requests per job (submit + task reads) | ${(apiRequests.length / JOBS).toFixed(2)} | ≥ 2 |`,
      `| makespan | ${(makespanMs / 1000).toFixed(0)} s | |`,
      `| floor set by the limit: (ceil(2 × ${JOBS} ÷ ${LIMIT}) − 1) min, at the least 2 requests a job | ${(floorMs / 1000).toFixed(0)} s | |`,
      `| makespan ÷ floor | ${(makespanMs / floorMs).toFixed(3)} | |`,
      `| time from the task finishing to the engine seeing it: mean / max | ${(mean(lags) / 1000).toFixed(1)} / ${(Math.max(...lags) / 1000).toFixed(1)} s | |`,
    ].join("\n");
    process.stdout.write(`${markdown}\n`);
    recordResult("a-rate", markdown);
    if (!outcome.jobs.every((job) => isTerminal(job.state))) process.exitCode = 1;
  } finally {
    await store.close();
    await sandbox.stop();
    folder.remove();
  }
}

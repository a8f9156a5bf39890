/**
 * Issue 5's E benchmark: 20 E jobs against the 4-requests-a-minute quota
 * (polls counted). Reports, for adaptive polling and for fixed 15 s polling:
 * the busiest 60 s window of counted requests (target ≤ 4), 429s, requests
 * per job, and the mean time from the sandbox's completion to our capture.
 * Virtual time (BENCH_TIME_SCALE, default 5) on both sides; times are virtual.
 */
import { loadConfig } from "../src/core/config.js";
import { ScaledClock } from "../src/core/clock.js";
import { Engine } from "../src/engine/engine.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import { sandboxEnvironment } from "../src/sandbox/all.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import { waitAndRead } from "../test/helpers/wait.js";
import { busiestWindow, mean, recordResult, startSandboxChild, tempFolder } from "./harness.js";

const JOBS = Number(process.env.BENCH_JOBS ?? 20);
const SCALE = Number(process.env.BENCH_TIME_SCALE ?? 5);

interface Stats {
  e: { jobs: Array<{ jobId: string; submittedAt: number; completedAt?: number; status: string; polls: number }> };
  eRequests: Array<{ at: number; counted: boolean; kind: string }>;
  eQuota: { rejected: number };
}

interface Pass {
  name: string;
  jobs: number;
  succeeded: number;
  busiest: number;
  rejected: number;
  requestsPerJob: number;
  captureLagMs: number;
  makespanMs: number;
}

/**
 * `arrivalGapMs` 0: every job queued at once (the quota is the bottleneck).
 * Otherwise job i is queued i × gap after the start (a trickle: the quota is
 * not saturated, so how each job is polled shows in its request count).
 */
async function pass(name: string, fixedPollIntervalMs: number | undefined, jobCount: number, arrivalGapMs: number, scale = SCALE): Promise<Pass> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: scale, e: { renderMs: { min: 30_000, max: 90_000 } } });
  const store = await openSqliteStore(`${folder.path}/bench.db`);
  try {
    const clock = new ScaledClock(scale, await sandbox.now());
    const env: Record<string, string> = { ...sandboxEnvironment(sandbox.url, ["e"]), MEDIAGATE_OUTPUT_DIR: `${folder.path}/out` };
    const providers = createProviderRegistry(loadConfig({ env, cwd: folder.path }));
    const adapter = providers.get("e")!.adapter!;
    const jobs = [];
    for (let index = 0; index < jobCount; index++) {
      const validated = adapter.validate({ provider: "e", model: "v3", input: { prompt: `bench picture ${index}` } });
      jobs.push({
        id: `job_e_${String(index).padStart(4, "0")}`,
        ref: `bench-e-${index}`,
        batchId: "bench",
        provider: "e" as const,
        model: validated.model,
        operation: validated.operation,
        body: validated.body,
        facts: validated.facts,
        warnings: validated.warnings,
        estimateMicroUsd: null,
        estimateSource: "unpriced",
        outDir: `${folder.path}/out`,
      });
    }
    const engine = new Engine({ store, providers, clock, secrets: () => [env.MEDIAGATE_E_CLIENT_SECRET!], ...(fixedPollIntervalMs ? { fixedPollIntervalMs } : {}) });
    const started = clock.now();
    if (arrivalGapMs === 0) await store.insertJobs(jobs, clock.now());
    engine.start();
    if (arrivalGapMs > 0) {
      for (const [index, job] of jobs.entries()) {
        await clock.sleep(started + index * arrivalGapMs - clock.now());
        await store.insertJobs([job], clock.now());
        engine.wake();
      }
    }
    const outcome = await waitAndRead(engine, store, jobs.map((job) => job.id));
    const makespanMs = clock.now() - started;
    await engine.stop();
    const stats = await sandbox.stats<Stats>();
    const completedAt = new Map(stats.e.jobs.map((job) => [job.jobId, job.completedAt]));
    const lags = outcome.jobs
      .filter((job) => job.finishedAt !== null && job.providerJobId && completedAt.get(job.providerJobId) !== undefined)
      .map((job) => job.finishedAt! - completedAt.get(job.providerJobId!)!);
    const counted = stats.eRequests.filter((request) => request.counted);
    return {
      name,
      succeeded: outcome.jobs.filter((job) => job.state === "succeeded").length,
      busiest: busiestWindow(counted.map((request) => request.at), 60_000).count,
      rejected: stats.eQuota.rejected,
      jobs: jobCount,
      requestsPerJob: counted.length / jobCount,
      captureLagMs: mean(lags),
      makespanMs,
    };
  } finally {
    await store.close();
    await sandbox.stop();
    folder.remove();
  }
}

const TRICKLE_JOBS = Number(process.env.BENCH_TRICKLE_JOBS ?? 10);
const TRICKLE_GAP_MS = 120_000;
const TRICKLE_SCALE = 10;

export async function runEQuota(): Promise<void> {
  const adaptive = await pass("adaptive (near the learned finish)", undefined, JOBS, 0);
  const fixed = await pass("fixed, every 15 s", 15_000, JOBS, 0);
  const trickleAdaptive = await pass("adaptive (near the learned finish)", undefined, TRICKLE_JOBS, TRICKLE_GAP_MS, TRICKLE_SCALE);
  const trickleFixed = await pass("fixed, every 15 s", 15_000, TRICKLE_JOBS, TRICKLE_GAP_MS, TRICKLE_SCALE);
  const row = (p: Pass) =>
    `| ${p.name} | ${p.succeeded} / ${p.jobs} | ${p.busiest} | ${p.rejected} | ${p.requestsPerJob.toFixed(2)} | ${(p.captureLagMs / 1000).toFixed(1)} s | ${(p.makespanMs / 1000).toFixed(0)} s |`;
  const header = [
    `| polling | succeeded | busiest 60 s window (≤ 4) | 429s | counted requests per job | mean completion → capture | makespan |`,
    `|---|---|---|---|---|---|---|`,
  ];
  const markdown = [
    `## E: ${JOBS} jobs against 4 requests a minute, polls counted (issue 5)`,
    ``,
    `Run ${new Date().toISOString()} on ${process.version}; sandbox in a child process over loopback; SQLite store; render 30–90 s; every duration is virtual. Counted requests are what E counts (API and status reads; not token requests or result links).`,
    ``,
    `**All ${JOBS} queued at once** (time scale ${SCALE}): the quota is the bottleneck.`,
    ``,
    ...header,
    row(adaptive),
    row(fixed),
    ``,
    `The least any job can cost is 2 counted requests (its submit and one read that finds it finished), so ${JOBS} jobs need ${2 * JOBS} requests, and 4 a minute put the last of them at least ${(((2 * JOBS) / 4 - 1) * 60).toFixed(0)} s after the first. Here every request waits for a rate token, submits first (a read that has waited 2 minutes goes before them), so both polling modes spend the minimum and end together: with the quota saturated, the token queue decides, not the poll pace.`,
    ``,
    `**A trickle: ${TRICKLE_JOBS} jobs, one queued every ${TRICKLE_GAP_MS / 60_000} minutes** (time scale ${TRICKLE_SCALE}): the quota is not saturated, so the poll pace shows.`,
    ``,
    ...header,
    row(trickleAdaptive),
    row(trickleFixed),
  ].join("\n");
  process.stdout.write(`${markdown}\n`);
  recordResult("e-quota", markdown);
}

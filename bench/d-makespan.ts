/**
 * Issue 2's benchmark: 200 D jobs against the sandbox with the 24-slot cap
 * and a fixed render time T. Reports makespan ÷ lower bound
 * (ceil(200/24) × T, target ≤ 1.10), 429s received (target 0), provider
 * requests per job, and engine CPU milliseconds per job.
 */
import { loadConfig } from "../src/core/config.js";
import { isTerminal } from "../src/core/job.js";
import { Engine } from "../src/engine/engine.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import { waitAndRead } from "../test/helpers/wait.js";
import { dBenchJobs, quantile, recordResult, startSandboxChild, tempFolder } from "./harness.js";

const JOBS = Number(process.env.BENCH_JOBS ?? 200);
const RENDER_MS = Number(process.env.BENCH_RENDER_MS ?? 6_000);
const SLOTS = 24;

interface SandboxStats {
  requests: Array<{ provider: string | null; url: string }>;
  d: {
    submits: number;
    rejected429: number;
    peakActive: number;
    jobs: Array<{ id: string; createdAt: number; readyAt: number | null }>;
  };
}

export async function runDMakespan(): Promise<void> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: RENDER_MS } });
  const store = await openSqliteStore(`${folder.path}/bench.db`);
  try {
    const config = loadConfig({
      env: { MEDIAGATE_D_BASE_URL: `${sandbox.url}/d`, MEDIAGATE_D_API_KEY: "sandbox-d-key", MEDIAGATE_OUTPUT_DIR: `${folder.path}/out` },
      cwd: folder.path,
    });
    const providers = createProviderRegistry(config);
    const adapter = providers.get("d")!.adapter!;
    const now = Date.now();
    const jobs = await dBenchJobs(adapter, JOBS, { idPrefix: "job_bench_", refPrefix: "bench-", prompt: "bench image", batchId: "bench", outDir: config.outputDir, idDigits: 4 });
    await store.insertJobs(jobs, now);
    const engine = new Engine({ store, providers, secrets: () => ["sandbox-d-key"] });
    const cpuBefore = process.cpuUsage();
    const started = Date.now();
    engine.start();
    const outcome = await waitAndRead(engine, store, jobs.map((job) => job.id));
    const makespanMs = Date.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    await engine.stop();
    const all = await sandbox.stats<SandboxStats>();
    const stats = { ...all.d, requests: all.requests.filter((request) => request.provider === "d").length };
    const counters = engine.stats().d!;
    const lowerBoundMs = Math.ceil(JOBS / SLOTS) * RENDER_MS;
    const succeeded = outcome.jobs.filter((job) => job.state === "succeeded").length;
    // How long after the sandbox finished a job the engine saw it (virtual time = real time at scale 1).
    const readyAt = new Map(stats.jobs.map((job) => [job.id, job.readyAt]));
    const detectionLags = outcome.jobs
      .map((job) => (job.providerDoneAt !== null && job.providerJobId ? job.providerDoneAt - (readyAt.get(job.providerJobId) ?? job.providerDoneAt) : null))
      .filter((lag): lag is number => lag !== null);
    const meanLagMs = detectionLags.reduce((sum, lag) => sum + lag, 0) / Math.max(1, detectionLags.length);
    const sortedLags = [...detectionLags].sort((left, right) => left - right);
    const lagAt = (q: number) => (sortedLags.length > 0 ? quantile(sortedLags, q) : 0);
    const captureMs = outcome.jobs
      .filter((job) => job.finishedAt !== null && job.providerDoneAt !== null)
      .map((job) => job.finishedAt! - job.providerDoneAt!);
    const meanCaptureMs = captureMs.reduce((sum, value) => sum + value, 0) / Math.max(1, captureMs.length);
    // Slot hand-over: from the engine seeing a job done (its slot is freed then) to the sandbox creating the next task.
    const finishes = outcome.jobs.map((job) => job.providerDoneAt ?? 0).sort((left, right) => left - right);
    const creations = stats.jobs.map((job) => job.createdAt).sort((left, right) => left - right);
    const handovers = creations.slice(SLOTS).map((createdAt, index) => createdAt - finishes[index]!);
    const meanHandoverMs = handovers.reduce((sum, value) => sum + value, 0) / Math.max(1, handovers.length);
    // After learning: jobs submitted once the first result was seen, when the render time is known. Their
    // submit plus their polls (D's polls name the task: /d-poll/v1/get_result?id=…).
    const pollsByTask = new Map<string, number>();
    for (const request of all.requests) {
      if (!request.url.startsWith("/d-poll/")) continue;
      const task = new URL(request.url, "http://sandbox").searchParams.get("id");
      if (task) pollsByTask.set(task, (pollsByTask.get(task) ?? 0) + 1);
    }
    const firstSeen = Math.min(...outcome.jobs.map((job) => job.providerDoneAt ?? Number.POSITIVE_INFINITY));
    const learned = outcome.jobs.filter((job) => job.submittedAt !== null && job.submittedAt > firstSeen && job.providerJobId);
    const learnedRequests = learned.reduce((sum, job) => sum + 1 + (pollsByTask.get(job.providerJobId!) ?? 0), 0);
    const ratio = makespanMs / lowerBoundMs;
    const lines = [
      `## D: 200 jobs, 24 slots, fixed render time (issue 2)`,
      ``,
      `Run ${new Date().toISOString()} on ${process.version}; sandbox in a child process over loopback; SQLite store; T = ${RENDER_MS} ms.`,
      ``,
      `| measure | value | target |`,
      `|---|---|---|`,
      `| jobs succeeded | ${succeeded} / ${JOBS} | all |`,
      `| makespan | ${(makespanMs / 1000).toFixed(2)} s | |`,
      `| lower bound ceil(${JOBS}/${SLOTS}) × T | ${(lowerBoundMs / 1000).toFixed(2)} s | |`,
      `| makespan ÷ lower bound | ${ratio.toFixed(3)} | ≤ 1.10 |`,
      `| 429s received (engine) / sent (sandbox) | ${counters.status429} / ${stats.rejected429} | 0 |`,
      `| peak concurrent tasks at the sandbox | ${stats.peakActive} | ≤ 24 |`,
      `| provider requests per job (submit + polls, downloads excluded) | ${((counters.submits + counters.polls) / JOBS).toFixed(2)} | |`,
      `| after learning: submit + polls per job, for the ${learned.length} jobs sent after the first result was seen | ${(learnedRequests / Math.max(1, learned.length)).toFixed(2)} | ≤ 3.0 |`,
      `| all requests per job seen by the sandbox (incl. downloads) | ${(stats.requests / JOBS).toFixed(2)} | |`,
      `| time from the sandbox's completion to the engine seeing it: mean / p50 / p90 / max | ${meanLagMs.toFixed(0)} / ${lagAt(0.5)} / ${lagAt(0.9)} / ${lagAt(1)} ms | |`,
      `| mean capture time (download, sha256, atomic write) | ${meanCaptureMs.toFixed(0)} ms | |`,
      `| mean slot hand-over (slot freed → next task created at the sandbox) | ${meanHandoverMs.toFixed(0)} ms | |`,
      `| engine CPU per job (user + system) | ${((cpu.user + cpu.system) / 1000 / JOBS).toFixed(2)} ms | |`,
    ];
    const markdown = lines.join("\n");
    process.stdout.write(`${markdown}\n`);
    recordResult("d-makespan", markdown);
    if (!outcome.jobs.every((job) => isTerminal(job.state))) process.exitCode = 1;
  } finally {
    await store.close();
    await sandbox.stop();
    folder.remove();
  }
}

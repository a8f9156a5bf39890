/**
 * Issue 37's ETA benchmark: D saturated (24 slots, renders drawn from a
 * range), 1,000 jobs queued at once. Each job's `expected_finish_at` is
 * taken at admission (just after the 1,000 are queued) and at mid-queue
 * (once half of them have ended, for those still queued); when all have
 * ended, the error of each prediction is |predicted − actual finish| over
 * the job's actual time from the prediction to its finish. Targets: p50 ≤
 * 10%, p90 ≤ 25% at both moments.
 *
 * The pace is learned first from a warm-up of 48 jobs (no spec publishes a
 * render time, so before any job has finished there is no expectation at
 * all; see src/app/eta.ts).
 */
import { paceOf, Timings, type JobTiming } from "../src/app/eta.js";
import { loadConfig } from "../src/core/config.js";
import { isTerminal, type Job } from "../src/core/job.js";
import { Engine } from "../src/engine/engine.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import { waitAndRead } from "../test/helpers/wait.js";
import { dBenchJobs, quantile, recordResult, startSandboxChild, tempFolder } from "./harness.js";

const JOBS = Number(process.env.BENCH_JOBS ?? 1_000);
const WARM_UP = 48;
const RENDER = { minMs: Number(process.env.BENCH_RENDER_MIN_MS ?? 1_000), maxMs: Number(process.env.BENCH_RENDER_MAX_MS ?? 3_000) };

interface Prediction {
  at: number;
  timing: JobTiming;
}

/** Each prediction's error against the job's actual finish, as a fraction of the time from the prediction to it. */
function errors(predictions: Map<string, Prediction>, finishedAt: Map<string, number>): number[] {
  const all: number[] = [];
  for (const [id, prediction] of predictions) {
    const actual = finishedAt.get(id);
    if (actual === undefined || prediction.timing.expectedFinishAt === null) continue;
    all.push(Math.abs(prediction.timing.expectedFinishAt - actual) / Math.max(1, actual - prediction.at));
  }
  return all.sort((left, right) => left - right);
}

async function predict(timings: Timings, jobs: readonly Job[]): Promise<Map<string, Prediction>> {
  const at = Date.now();
  const byId = await timings.of(jobs, at);
  return new Map(jobs.map((job) => [job.id, { at, timing: byId.get(job.id)! }]));
}

export async function runEta(): Promise<void> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: RENDER } });
  const store = await openSqliteStore(`${folder.path}/bench.db`);
  try {
    const config = loadConfig({
      env: { MEDIAGATE_D_BASE_URL: `${sandbox.url}/d`, MEDIAGATE_D_API_KEY: "sandbox-d-key", MEDIAGATE_OUTPUT_DIR: `${folder.path}/out` },
      cwd: folder.path,
    });
    const providers = createProviderRegistry(config);
    const adapter = providers.get("d")!.adapter!;
    const engine = new Engine({ store, providers, secrets: () => ["sandbox-d-key"] });
    engine.start();
    const warmUp = await dBenchJobs(adapter, WARM_UP, { idPrefix: "job_warm_", refPrefix: "warm-", prompt: "warm-up image", batchId: "warm", outDir: config.outputDir, idDigits: 3 });
    await store.insertJobs(warmUp, Date.now());
    engine.wake();
    await waitAndRead(engine, store, warmUp.map((job) => job.id));

    const jobs = await dBenchJobs(adapter, JOBS, { idPrefix: "job_eta_", refPrefix: "eta-", prompt: "eta image", batchId: "eta", outDir: config.outputDir, idDigits: 4 });
    const ids = jobs.map((job) => job.id);
    const timings = new Timings({ providers }, store);
    // Half way: once half of them ended, the queued ones are predicted again (from the engine's job events).
    let ended = 0;
    let midway: Promise<Map<string, Prediction>> | null = null;
    const watched = new Set(ids);
    const onJob = (job: Job) => {
      if (!watched.has(job.id) || !isTerminal(job.state)) return;
      watched.delete(job.id);
      ended += 1;
      if (ended === Math.floor(JOBS / 2) && midway === null) {
        midway = store.listJobs({ ids: [...watched] }).then((open) => predict(timings, open.filter((each) => each.state === "queued")));
      }
    };
    engine.on("job", onJob);
    const paceBefore = paceOf(await store.recentRenderSamples("d", "gen-2-pro", 50))!;
    await store.insertJobs(jobs, Date.now());
    const atAdmission = await predict(timings, await store.listJobs({ ids }));
    engine.wake();
    const outcome = await waitAndRead(engine, store, ids);
    engine.off("job", onJob);
    await engine.stop();
    const paceAfter = paceOf(await store.recentRenderSamples("d", "gen-2-pro", 50))!;
    const sent = outcome.jobs.filter((job) => job.submitSentAt !== null && job.providerDoneAt !== null);
    const holdAll = sent.reduce((sum, job) => sum + (job.providerDoneAt! - job.submittedAt!), 0) / Math.max(1, sent.length);
    const atMidway = (await (midway as Promise<Map<string, Prediction>> | null)) ?? new Map<string, Prediction>();
    const finishedAt = new Map(outcome.jobs.filter((job) => job.finishedAt !== null).map((job) => [job.id, job.finishedAt!]));
    const succeeded = outcome.jobs.filter((job) => job.state === "succeeded").length;
    const admissionErrors = errors(atAdmission, finishedAt);
    const midwayErrors = errors(atMidway, finishedAt);
    const at = (sorted: number[], q: number) => (sorted.length === 0 ? "–" : `${(quantile(sorted, q) * 100).toFixed(1)}%`);
    const positions = [...atAdmission.values()].map((prediction) => prediction.timing.queuePosition).filter((position): position is number => position !== null);
    const makespan = Math.max(...finishedAt.values()) - Math.min(...[...atAdmission.values()].map((prediction) => prediction.at));
    const predictedMakespan = Math.max(...[...atAdmission.values()].map((prediction) => prediction.timing.expectedFinishAt ?? 0)) - Math.min(...[...atAdmission.values()].map((prediction) => prediction.at));
    const lines = [
      `## ETA: expected_finish_at against the actual finish, D saturated (issue 37)`,
      ``,
      `Run ${new Date().toISOString()} on ${process.version}; sandbox in a child process over loopback (time scale 1); SQLite store; one engine;`,
      `D's 24 slots; renders drawn uniformly from ${RENDER.minMs}–${RENDER.maxMs} ms; the pace learned from a warm-up of ${WARM_UP} jobs, then ${JOBS} jobs queued at once.`,
      `Error = |expected_finish_at − finished_at| ÷ (finished_at − the moment of the prediction), per job. \`npm run bench -- eta\`.`,
      ``,
      `| measure | value | target |`,
      `|---|---|---|`,
      `| jobs succeeded | ${succeeded} / ${JOBS} | all |`,
      `| queue positions at admission | ${positions.length > 0 ? `${Math.min(...positions)} … ${Math.max(...positions)}` : "–"} (${positions.length} queued) | 1 … ${JOBS} |`,
      `| makespan: predicted at admission / actual | ${(predictedMakespan / 1000).toFixed(1)} s / ${(makespan / 1000).toFixed(1)} s | |`,
      `| pace learned before admission: mean hold (submit sent to done) / median total (submit to saved) | ${paceBefore.holdMs.toFixed(0)} ms / ${paceBefore.totalMs.toFixed(0)} ms | |`,
      `| pace learned at the end (last 50) / mean hold over all ${JOBS} | ${paceAfter.holdMs.toFixed(0)} ms / ${paceAfter.totalMs.toFixed(0)} ms; ${holdAll.toFixed(0)} ms | |`,
      `| at admission: predictions / p50 / p90 / max error | ${admissionErrors.length} / ${at(admissionErrors, 0.5)} / ${at(admissionErrors, 0.9)} / ${at(admissionErrors, 1)} | p50 ≤ 10%, p90 ≤ 25% |`,
      `| at mid-queue (${Math.floor(JOBS / 2)} ended): predictions / p50 / p90 / max error | ${midwayErrors.length} / ${at(midwayErrors, 0.5)} / ${at(midwayErrors, 0.9)} / ${at(midwayErrors, 1)} | p50 ≤ 10%, p90 ≤ 25% |`,
    ];
    const markdown = lines.join("\n");
    process.stdout.write(`${markdown}\n`);
    recordResult("eta", markdown);
    const within = (sorted: number[]) => sorted.length > 0 && quantile(sorted, 0.5) <= 0.1 && quantile(sorted, 0.9) <= 0.25;
    if (succeeded !== JOBS || !within(admissionErrors) || !within(midwayErrors)) process.exitCode = 1;
  } finally {
    await store.close();
    await sandbox.stop();
    folder.remove();
  }
}

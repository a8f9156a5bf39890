import cliProgress from "cli-progress";
import { isTerminal, type Job } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";
import { unsettled, waitForJobs, waitForSettlement, type WaitOutcome } from "../engine/wait.js";

/** How long a command waits after its jobs end for charges the provider settles later (B). */
const SETTLEMENT_WAIT_MS = 180_000;
import { EXIT } from "./exit-codes.js";
import { costText, jobJson } from "./job-json.js";
import type { Runtime } from "./runtime.js";

export interface RunOptions {
  json: boolean;
  /** The command to print for resuming after Ctrl-C. */
  resumeHint: string;
  /** One bar per job (generate) or one overall bar (batch). */
  progress: "job" | "overall";
}

export interface RunResult {
  outcome: WaitOutcome;
  interrupted: boolean;
  exitCode: number;
}

const STATE_PROGRESS: Record<string, number> = { queued: 0, submitting: 10, running: 40, capturing: 90 };

/**
 * Runs the engine in this process until the given jobs are terminal (or
 * blocked behind a halted provider), showing progress on a TTY. Ctrl-C
 * detaches cleanly: submits in flight record their answer, leases are
 * released, and the same command resumes.
 */
export async function runJobs(runtime: Runtime, jobIds: string[], options: RunOptions): Promise<RunResult> {
  const store = await runtime.store();
  const engine = await runtime.engine();
  const interactive = Boolean(process.stderr.isTTY) && !options.json;
  const detach = new AbortController();
  let interrupts = 0;
  const onSignal = () => {
    interrupts++;
    if (interrupts > 1) {
      process.stderr.write("\nmediagate: second interrupt, exiting now; leases of this process are taken over by the next run\n");
      process.exit(EXIT.interrupted);
    }
    process.stderr.write("\nmediagate: detaching… (letting submits in flight record their answer; press Ctrl-C again to exit at once)\n");
    detach.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const total = jobIds.length;
  let bar: cliProgress.SingleBar | null = null;
  if (interactive) {
    bar = new cliProgress.SingleBar(
      {
        format: options.progress === "job" ? " {bar} {percentage}% | {state} {detail}" : " {bar} {value}/{total} done | {running} running, {queued} queued, {failed} failed",
        hideCursor: true,
        clearOnComplete: false,
        stream: process.stderr,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(options.progress === "job" ? 100 : total, 0, { state: "queued", detail: "", running: 0, queued: total, failed: 0 });
  }
  const latest = new Map<string, Job>();
  const refresh = () => {
    if (!bar) return;
    const jobs = [...latest.values()];
    if (options.progress === "job") {
      const job = jobs[0];
      if (!job) return;
      const value = isTerminal(job.state) ? 100 : (STATE_PROGRESS[job.state] ?? 0);
      bar.update(value, { state: job.state, detail: job.providerStatus ? `(${job.providerStatus})` : job.reason ? `(${job.reason})` : "" });
    } else {
      bar.update(jobs.filter((job) => isTerminal(job.state)).length, {
        running: jobs.filter((job) => ["submitting", "running", "capturing"].includes(job.state)).length,
        queued: jobs.filter((job) => job.state === "queued").length,
        failed: jobs.filter((job) => isTerminal(job.state) && job.state !== "succeeded").length,
      });
    }
  };
  for (const job of await store.listJobs({ ids: jobIds })) latest.set(job.id, job);
  refresh();

  engine.start();
  // JSON lines go out in completion order, each after its outputs are read (and its charge settled).
  let printing: Promise<void> = Promise.resolve();
  const awaitingCharge: string[] = [];
  const printJson = async (jobId: string) => {
    const job = (await store.getJob(jobId))!;
    process.stdout.write(`${JSON.stringify(jobJson(job, await store.outputs(job.id)))}\n`);
  };
  let outcome: WaitOutcome;
  try {
    outcome = await waitForJobs(engine, store, jobIds, {
      signal: detach.signal,
      onChange: (job) => {
        latest.set(job.id, job);
        refresh();
      },
      onTerminal: (job) => {
        latest.set(job.id, job);
        refresh();
        if (options.json) {
          // A job whose charge the provider settles later (B) is printed once settled, with the charge.
          if (unsettled([job]).length) awaitingCharge.push(job.id);
          else printing = printing.then(() => printJson(job.id));
        } else if (!interactive && total > 1) {
          process.stderr.write(`${job.ref}: ${job.state}${job.error ? ` (${job.error.code})` : ""} ${costText(job)}\n`);
        }
      },
    });
    // B bills after the end: keep the engine reading until the charges settle (bounded), so the summary is the accounting fact.
    const settling = unsettled(await store.listJobs({ ids: jobIds }));
    if (settling.length && !detach.signal.aborted) {
      if (!options.json) process.stderr.write(`waiting for ${settling.length} charge(s) to settle at the provider…\n`);
      await waitForSettlement(store, jobIds, SETTLEMENT_WAIT_MS, detach.signal);
    }
  } finally {
    bar?.stop();
    await engine.stop();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  await printing;
  if (options.json) {
    // Settled in the order they settle; any the provider has not settled yet show a null charge.
    const finished = await store.listJobs({ ids: awaitingCharge });
    const order = (job: Job) => (unsettled([job]).length ? Number.MAX_SAFE_INTEGER : job.updatedAt);
    for (const job of finished.sort((left, right) => order(left) - order(right))) await printJson(job.id);
  }
  const finalJobs = await store.listJobs({ ids: jobIds });
  const interrupted = detach.signal.aborted && !finalJobs.every((job) => isTerminal(job.state));
  if (interrupted) {
    const open = finalJobs.filter((job) => !isTerminal(job.state)).length;
    process.stderr.write(
      `mediagate: detached with ${open} job(s) not finished; nothing is lost. Resume with: ${options.resumeHint}\n`,
    );
  }
  const allSucceeded = finalJobs.every((job) => job.state === "succeeded");
  return {
    outcome: { ...outcome, jobs: finalJobs },
    interrupted,
    exitCode: interrupted ? EXIT.interrupted : allSucceeded ? EXIT.ok : EXIT.jobsFailed,
  };
}

/** The human summary of a batch: what ran and was paid, what failed, what never ran. */
export function summaryText(outcome: WaitOutcome, halts: Array<{ provider: string; code: string; message: string }>): string {
  const jobs = outcome.jobs;
  const succeeded = jobs.filter((job) => job.state === "succeeded");
  const failed = jobs.filter((job) => isTerminal(job.state) && job.state !== "succeeded");
  const neverRan = jobs.filter((job) => job.state === "queued" && job.attempts === 0);
  const open = jobs.filter((job) => !isTerminal(job.state) && !neverRan.includes(job));
  const charged = jobs.reduce((sum, job) => sum + (job.chargeMicroUsd ?? 0), 0);
  const awaiting = unsettled(jobs);
  const lines = [
    `${succeeded.length} succeeded, ${failed.length} failed, ${neverRan.length} never ran${open.length ? `, ${open.length} still in progress` : ""}; charged ${formatMicroUsd(charged)}`,
  ];
  if (awaiting.length) {
    lines.push(`  ${awaiting.length} charge(s) not settled yet by the provider (not in the total); \`mediagate worker\` or the next run reads them`);
  }
  for (const job of failed) lines.push(`  failed: ${job.ref} (${job.id}): ${job.error?.code ?? job.state}: ${job.error?.message ?? ""}`);
  for (const halt of halts) {
    lines.push(`  ${halt.provider.toUpperCase()} halted: ${halt.code}: ${halt.message}`);
  }
  if (neverRan.length) {
    lines.push(`  never ran (not sent, not charged): ${neverRan.slice(0, 10).map((job) => job.ref).join(", ")}${neverRan.length > 10 ? ", …" : ""}`);
  }
  return lines.join("\n");
}

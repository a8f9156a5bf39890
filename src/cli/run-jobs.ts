import cliProgress from "cli-progress";
import { isTerminal, type Job } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";
import { escapeUnprintable } from "../core/printable.js";
import { unsettled, type WaitCounts, waitForJobs, waitForSettlement, type WaitOutcome } from "../engine/wait.js";
import type { JobScope } from "../store/store.js";
import { EXIT } from "./exit-codes.js";
import { costText, jobJson } from "./job-json.js";
import type { Runtime } from "./runtime.js";
import { onStopSignals, tellUser } from "./signals.js";

/** How long a command waits after its jobs end for charges the provider settles later (B). */
const SETTLEMENT_WAIT_MS = 180_000;

export interface RunOptions {
  json: boolean;
  /** The command line that resumes, printed when the command is interrupted. */
  resumeHint: string;
  /** One line for the job (generate) or one overall bar (batch). */
  progress: "job" | "overall";
  /** The command's own jobs: its engine claims, adopts and settles nothing else. */
  scope: JobScope;
}

export interface RunResult {
  outcome: WaitOutcome;
  interrupted: boolean;
  exitCode: number;
}

const BAR_WIDTH = 20;

/** `m:ss` (or `h:mm:ss`) for a duration. */
export function clockText(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1_000));
  const hours = Math.floor(seconds / 3_600);
  const minutes = Math.floor((seconds % 3_600) / 60);
  const rest = String(seconds % 60).padStart(2, "0");
  return hours ? `${hours}:${String(minutes).padStart(2, "0")}:${rest}` : `${minutes}:${rest}`;
}

function bar(fraction: number): string {
  const filled = Math.round(Math.min(1, Math.max(0, fraction)) * BAR_WIDTH);
  return `${"█".repeat(filled)}${"░".repeat(BAR_WIDTH - filled)}`;
}

/** A line cut to the terminal's width (80 columns when unknown), so it never wraps. */
function fit(line: string): string {
  const columns = Math.max(40, (process.stderr.columns || 80) - 1);
  return line.length <= columns ? line : `${line.slice(0, columns - 1)}…`;
}

/**
 * The one-job line: state, time since submit against the render time learned
 * for this model, and why it waits or what the provider says.
 */
export function jobLine(job: Job, now: number, expectedRenderMs: number | null): string {
  const detail = job.reason ?? (job.providerStatus ? `provider: ${job.providerStatus}` : "");
  if (isTerminal(job.state)) return fit(` ${bar(1)} ${job.state}${detail ? ` · ${detail}` : ""}`);
  if (job.state === "running" && job.submittedAt !== null) {
    const elapsed = now - job.submittedAt;
    const fraction = expectedRenderMs ? Math.min(0.95, elapsed / expectedRenderMs) : 0.5;
    const estimate = expectedRenderMs ? ` of ~${clockText(expectedRenderMs)}` : "";
    return fit(` ${bar(0.1 + fraction * 0.8)} rendering ${clockText(elapsed)}${estimate}${detail ? ` · ${detail}` : ""}`);
  }
  const position = job.state === "capturing" ? 0.92 : job.state === "submitting" ? 0.05 : 0;
  return fit(` ${bar(position)} ${job.state}${detail ? ` · ${detail}` : ""}`);
}

/** The batch line: done of total, then what runs, waits and failed. */
export function batchLine(counts: { done: number; total: number; running: number; queued: number; failed: number }, elapsedMs: number): string {
  const { done, total, running, queued, failed } = counts;
  return fit(` ${bar(total ? done / total : 1)} ${done}/${total} done · ${running} running · ${queued} queued · ${failed} failed · ${clockText(elapsedMs)}`);
}

/**
 * Runs the engine in this process on the command's own jobs until they are
 * terminal (or blocked), showing progress on a TTY. Ctrl-C, SIGTERM and
 * SIGHUP detach cleanly: submits in flight record their answer, leases are
 * released, and the printed command resumes.
 */
export async function runJobs(runtime: Runtime, jobIds: string[], options: RunOptions): Promise<RunResult> {
  const store = await runtime.store();
  const engine = await runtime.engine();
  engine.restrictTo(options.scope);
  const interactive = Boolean(process.stderr.isTTY) && !options.json;
  const detach = new AbortController();
  let interrupts = 0;
  const stopListening = onStopSignals((signal) => {
    interrupts++;
    if (interrupts > 1) {
      tellUser("\nmediagate: second interrupt, exiting now; leases of this process are taken over by the next run\n");
      process.exit(EXIT.interrupted);
    }
    tellUser(`\nmediagate: ${signal === "SIGINT" ? "" : `${signal}: `}detaching… (letting submits in flight record their answer; press Ctrl-C again to exit at once)\n`);
    detach.abort();
  });

  const total = jobIds.length;
  const startedAt = Date.now();
  // Counts come from the waiter, kept one change at a time; only the one-job line keeps a job.
  let counts: WaitCounts = { total, done: 0, succeeded: 0, failed: 0, running: 0, queued: total, blocked: 0 };
  let shown: Job | undefined;
  const expected = new Map<string, number | null>();
  const expectedFor = (job: Job) => {
    const key = `${job.provider}/${job.model}`;
    if (!expected.has(key)) {
      expected.set(key, null);
      void engine.expectedRenderMs(job.provider, job.model).then((ms) => expected.set(key, ms), () => undefined);
    }
    return expected.get(key) ?? null;
  };
  let progress: cliProgress.SingleBar | null = null;
  if (interactive) {
    // The line is drawn by our own format, so it can show elapsed time and fit the terminal; cli-progress redraws it.
    progress = new cliProgress.SingleBar(
      {
        format: () => {
          if (options.progress === "overall") return batchLine(counts, Date.now() - startedAt);
          return shown ? jobLine(shown, Date.now(), expectedFor(shown)) : "";
        },
        hideCursor: true,
        clearOnComplete: false,
        stream: process.stderr,
        fps: 2,
      },
      cliProgress.Presets.shades_classic,
    );
    progress.start(total, 0);
  }
  const refresh = (job: Job, latest: WaitCounts) => {
    counts = latest;
    if (options.progress === "job") shown = job;
    progress?.update(counts.done);
  };

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
    let storeTrouble = false;
    outcome = await waitForJobs(engine, store, jobIds, {
      signal: detach.signal,
      scope: options.scope,
      onChange: (job, latest) => {
        if (storeTrouble) {
          storeTrouble = false;
          tellUser("mediagate: the store answers again\n");
        }
        refresh(job, latest);
      },
      onStoreError: (message) => {
        // The engine waits for the store too: nothing is lost, and Ctrl-C still detaches.
        if (!storeTrouble) tellUser(`mediagate: the store is not answering (${message}); trying again every few seconds (Ctrl-C detaches)\n`);
        storeTrouble = true;
      },
      onTerminal: (job, latest) => {
        refresh(job, latest);
        if (options.json) {
          // A job whose charge the provider settles later (B) is printed once settled, with the charge.
          if (unsettled([job]).length) awaitingCharge.push(job.id);
          else printing = printing.then(() => printJson(job.id));
        } else if (!interactive && total > 1) {
          tellUser(`${job.ref}: ${job.state}${job.error ? ` (${job.error.code})` : ""} ${costText(job)}\n`);
        }
      },
    });
    // B bills after the end: keep the engine reading until the charges settle (bounded), so the summary is the accounting fact.
    const settling = unsettled(outcome.jobs).map((job) => job.id);
    if (settling.length && !detach.signal.aborted) {
      if (!options.json) tellUser(`waiting for ${settling.length} charge(s) to settle at the provider…\n`);
      await waitForSettlement(store, settling, SETTLEMENT_WAIT_MS, detach.signal);
      const settled = new Map((await store.listJobs({ ids: settling })).map((job) => [job.id, job]));
      outcome = { ...outcome, jobs: outcome.jobs.map((job) => settled.get(job.id) ?? job) };
    }
  } finally {
    progress?.stop();
    await engine.stop();
    stopListening();
  }
  await printing;
  if (options.json) {
    // Settled in the order they settle; any the provider has not settled yet show a null charge.
    const finished = await store.listJobs({ ids: awaitingCharge });
    const order = (job: Job) => (unsettled([job]).length ? Number.MAX_SAFE_INTEGER : job.updatedAt);
    for (const job of finished.sort((left, right) => order(left) - order(right))) await printJson(job.id);
  }
  const finalJobs = outcome.jobs;
  const open = finalJobs.filter((job) => !isTerminal(job.state));
  const interrupted = detach.signal.aborted && open.length > 0;
  if (interrupted) {
    tellUser(`mediagate: detached with ${open.length} job(s) not finished; nothing is lost. Resume with:\n  ${options.resumeHint}\n`);
  }
  const allSucceeded = finalJobs.every((job) => job.state === "succeeded");
  return {
    outcome: { ...outcome, jobs: finalJobs },
    interrupted,
    exitCode: interrupted ? EXIT.interrupted : allSucceeded ? EXIT.ok : EXIT.jobsFailed,
  };
}

function refList(jobs: readonly Job[]): string {
  return `${jobs.slice(0, 10).map((job) => job.ref).join(", ")}${jobs.length > 10 ? ", …" : ""}`;
}

/** The human summary of a batch: what ran and was paid, what failed or was cancelled, what never ran, where the files are. */
export function summaryText(outcome: WaitOutcome, halts: Array<{ provider: string; code: string; message: string }>, outDir: string): string {
  const jobs = outcome.jobs;
  const succeeded = jobs.filter((job) => job.state === "succeeded");
  const cancelled = jobs.filter((job) => job.state === "cancelled");
  const failed = jobs.filter((job) => isTerminal(job.state) && job.state !== "succeeded" && job.state !== "cancelled");
  const neverRan = jobs.filter((job) => job.state === "queued" && job.attempts === 0 && job.blockedCode === null);
  const overBudget = jobs.filter((job) => job.blockedCode === "over_budget");
  const unsaved = jobs.filter((job) => job.blockedCode === "output_unwritable");
  const counted = new Set([...neverRan, ...overBudget, ...unsaved]);
  const open = jobs.filter((job) => !isTerminal(job.state) && !counted.has(job));
  const charged = jobs.reduce((sum, job) => sum + (job.chargeMicroUsd ?? 0), 0);
  const awaiting = unsettled(jobs);
  const parts = [`${succeeded.length} succeeded`, `${failed.length} failed`];
  if (cancelled.length) parts.push(`${cancelled.length} cancelled`);
  parts.push(`${neverRan.length + overBudget.length} never ran`);
  if (unsaved.length) parts.push(`${unsaved.length} not saved yet`);
  if (open.length) parts.push(`${open.length} still in progress`);
  const lines = [`${parts.join(", ")}; charged ${formatMicroUsd(charged)}`];
  if (succeeded.length) lines.push(`  files in ${outDir}`);
  // Accepted by the provider, never seen to end: what they cost is unknown; their estimates are the bound.
  const possiblyCharged = failed.filter((job) => job.chargeMicroUsd === null && (job.state === "unknown_submission" || job.providerJobId !== null));
  if (possiblyCharged.length) {
    const bound = possiblyCharged.reduce((sum, job) => sum + (job.estimateMicroUsd ?? 0), 0);
    lines.push(`  ${possiblyCharged.length} job(s) may have been charged by the provider (up to ${formatMicroUsd(bound)} estimated, not in the total): check them there`);
  }
  if (awaiting.length) {
    lines.push(`  ${awaiting.length} charge(s) not settled yet by the provider (not in the total); \`mediagate worker\` or the next run reads them`);
  }
  for (const job of failed) lines.push(`  ${job.state}: ${job.ref} (${job.id}): ${job.error?.code ?? job.state}: ${job.error?.message ?? job.reason ?? "no reason recorded"}`);
  for (const job of cancelled) lines.push(`  cancelled: ${job.ref} (${job.id}): ${job.error?.message ?? job.reason ?? "cancelled"}`);
  for (const halt of halts) {
    lines.push(`  ${halt.provider.toUpperCase()} halted: ${halt.code}: ${halt.message}`);
  }
  if (neverRan.length) lines.push(`  never ran (not sent, not charged): ${refList(neverRan)}`);
  if (overBudget.length) lines.push(`  held back by the budget (not sent, not charged): ${refList(overBudget)}; ${overBudget[0]!.reason ?? ""}`);
  if (unsaved.length) {
    lines.push(`  not saved yet: ${refList(unsaved)}: ${unsaved[0]!.reason ?? "the output folder cannot be written"}`);
    lines.push("  they are kept (capturing): fix the folder, or re-run with another --out, before their result links expire");
  }
  // Provider error messages quote the provider's answer, which may hold control characters.
  return lines.map(escapeUnprintable).join("\n");
}

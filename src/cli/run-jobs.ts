import cliProgress from "cli-progress";
import { isTerminal, type Job } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";
import { escapeUnprintable } from "../core/printable.js";
import { chargeUnsettled, outcomesInPages, type WaitCounts, waitForFirstNotifications, waitForJobs, waitForSettlement } from "../engine/wait.js";
import type { JobOutcome, JobScope } from "../store/store.js";
import { EXIT } from "./exit-codes.js";
import { clockTime, NO_TIMING, Timings, timingWords, type JobTiming } from "../app/eta.js";
import { costText, jobJson } from "../app/job-view.js";
import type { Runtime } from "../app/runtime.js";
import { onStopSignals, tellUser } from "./signals.js";

/** How long a command waits after its jobs end for charges the provider settles later (B). */
const SETTLEMENT_WAIT_MS = 180_000;
/** How often the progress line's queue position and expected times are read again. */
const ESTIMATE_EVERY_MS = 1_000;
/** The longest a command waits at its end for its jobs' notifications to be tried once. */
const NOTIFY_WAIT_MS = 15_000;

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
  /** What the command's jobs came to, read at the end a page at a time. */
  report: JobsReport;
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
export function jobLine(job: Job, now: number, expectedRenderMs: number | null, timing: JobTiming = NO_TIMING): string {
  const detail = job.reason ?? (job.providerStatus ? `provider: ${job.providerStatus}` : "");
  if (isTerminal(job.state)) return fit(` ${bar(1)} ${job.state}${detail ? ` · ${detail}` : ""}`);
  const expected = timingWords(timing, now, true);
  if (job.state === "queued" && expected) return fit(` ${bar(0)} queued ${expected}${detail ? ` · ${detail}` : ""}`);
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
export function batchLine(counts: { done: number; total: number; running: number; queued: number; failed: number }, elapsedMs: number, expectedEndAt: number | null = null): string {
  const { done, total, running, queued, failed } = counts;
  // Early in the line, so that a narrow terminal still shows it.
  const end = expectedEndAt !== null && done < total ? ` (all ~${clockTime(expectedEndAt)})` : "";
  return fit(` ${bar(total ? done / total : 1)} ${done}/${total} done${end} · ${running} running · ${queued} queued · ${failed} failed · ${clockText(elapsedMs)}`);
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
          if (options.progress === "overall") return batchLine(counts, Date.now() - startedAt, expectedEnd);
          return shown ? jobLine(shown, Date.now(), expectedFor(shown), shownTiming) : "";
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
  // Queue position and expected times (issue 37), read again each second while the line is drawn: the job's, or for a
  // batch when the last of its jobs in line at each provider is expected to finish.
  let shownTiming: JobTiming = NO_TIMING;
  let expectedEnd: number | null = null;
  const seenAt = new Map<string, Job>();
  const timings = interactive ? new Timings(runtime, store) : null;
  let estimating = false;
  const estimate = async () => {
    if (!timings || estimating) return;
    estimating = true;
    try {
      const now = Date.now();
      if (options.progress === "job") shownTiming = shown ? await timings.one(shown, now) : NO_TIMING;
      else {
        const ends = await Promise.all([...seenAt.values()].map((like) => timings.lineEnd(like, now)));
        const known = ends.filter((end): end is number => end !== null);
        expectedEnd = known.length > 0 ? Math.max(...known) : null;
      }
    } catch {
      // An estimate is only shown: a store that does not answer now is said by the waiting, not here.
    } finally {
      estimating = false;
    }
  };
  if (interactive) {
    // The first and last of the command's jobs stand for its lines until their changes tell of others.
    for (const id of new Set([jobIds[0], jobIds.at(-1)])) {
      const job = id === undefined ? null : await store.getJob(id);
      if (job && !isTerminal(job.state)) seenAt.set(`${job.provider}\u0000${job.model}`, job);
    }
    void estimate();
  }
  const estimateTimer = interactive ? setInterval(() => void estimate(), ESTIMATE_EVERY_MS) : null;
  estimateTimer?.unref();
  const refresh = (job: Job, latest: WaitCounts) => {
    counts = latest;
    if (options.progress === "job") shown = job;
    if (!isTerminal(job.state)) seenAt.set(`${job.provider}\u0000${job.model}`, job);
    progress?.update(counts.done);
  };

  engine.start();
  // JSON lines go out in completion order, each after its outputs are read (and its charge settled). The jobs that
  // end within PRINT_GATHER_MS of each other are read together: two statements for them all, not two a job.
  let printing: Promise<void> = Promise.resolve();
  let gathering = false;
  const writeJson = async (jobs: Job[]) => {
    const outputs = await store.outputsOfJobs(jobs.map((job) => job.id));
    process.stdout.write(jobs.map((job) => `${JSON.stringify(jobJson(job, outputs.get(job.id) ?? []))}\n`).join(""));
  };
  const toPrint: string[] = [];
  const printPending = async () => {
    gathering = false;
    const ids = toPrint.splice(0);
    if (ids.length === 0) return;
    const byId = new Map((await store.listJobs({ ids })).map((job) => [job.id, job]));
    await writeJson(ids.map((id) => byId.get(id)!));
  };
  // Once the waiting is over, what is still gathering is printed at once.
  let flushing = false;
  let endGather: () => void = () => undefined;
  const gather = (ms: number) =>
    new Promise<void>((resolve) => {
      if (flushing) return resolve();
      const timer = setTimeout(resolve, ms);
      endGather = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const printJson = (jobId: string) => {
    toPrint.push(jobId);
    if (gathering) return;
    gathering = true;
    // One job alone (generate) is printed at once.
    const gatherMs = total > 1 ? PRINT_GATHER_MS : 0;
    printing = printing.then(() => gather(gatherMs)).then(printPending);
  };
  // Jobs whose charge the provider settles after the end (B), as they finish.
  const settling: string[] = [];
  try {
    let storeTrouble = false;
    await waitForJobs(engine, store, jobIds, {
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
        // A job whose charge the provider settles later (B) is waited for, and with --json printed once settled, with the charge.
        if (chargeUnsettled(job)) settling.push(job.id);
        if (options.json) {
          if (!chargeUnsettled(job)) printJson(job.id);
        } else if (!interactive && total > 1) {
          tellUser(`${job.ref}: ${job.state}${job.error ? ` (${job.error.code})` : ""} ${costText(job)}\n`);
        }
      },
    });
    // B bills after the end: keep the engine reading until the charges settle (bounded), so the summary is the accounting fact.
    if (settling.length && !detach.signal.aborted) {
      if (!options.json) tellUser(`waiting for ${settling.length} charge(s) to settle at the provider…\n`);
      await waitForSettlement(store, settling, SETTLEMENT_WAIT_MS, detach.signal);
    }
    // Notifications of this command's jobs (MEDIAGATE_NOTIFY_URL) get their first attempt before it ends; any still
    // owed stay in the store for `worker` or `serve`, which retry them.
    if (engine.delivers() && !detach.signal.aborted) {
      const owed = await waitForFirstNotifications(store, options.scope, () => engine.deliveriesInFlight(), NOTIFY_WAIT_MS, detach.signal);
      if (owed > 0) {
        tellUser(`mediagate: ${owed} notification(s) to MEDIAGATE_NOTIFY_URL not delivered yet; they are kept in the store, and \`mediagate worker\` or \`mediagate serve\` on it retries them for 24 hours (each job's events show the attempts)\n`);
      }
    }
  } finally {
    if (estimateTimer) clearInterval(estimateTimer);
    progress?.stop();
    await engine.stop();
    stopListening();
  }
  flushing = true;
  endGather();
  await printing;
  if (options.json) {
    // Settled in the order they settle; any the provider has not settled yet show a null charge.
    const finished = await store.listJobs({ ids: settling });
    const order = (job: Job) => (chargeUnsettled(job) ? Number.MAX_SAFE_INTEGER : job.updatedAt);
    await writeJson(finished.sort((left, right) => order(left) - order(right)));
  }
  // The accounting fact, read once a page at a time; with --json, jobs that never became terminal
  // (blocked behind a halt or a budget, or detached) still get their line.
  // Only what the summary needs is read: a 20,000-job batch's bodies and answers are not parsed again to be counted.
  const report = new JobsReport();
  for await (const page of outcomesInPages(store, jobIds)) {
    for (const job of page) {
      report.add(job);
      if (options.json && !isTerminal(job.state)) toPrint.push(job.id);
    }
    await printPending();
  }
  const interrupted = detach.signal.aborted && report.unfinished() > 0;
  if (interrupted) {
    tellUser(`mediagate: detached with ${report.unfinished()} job(s) not finished; nothing is lost. Resume with:\n  ${options.resumeHint}\n`);
  }
  return {
    report,
    interrupted,
    exitCode: interrupted ? EXIT.interrupted : report.succeeded === total ? EXIT.ok : EXIT.jobsFailed,
  };
}

/** How long a finished job's JSON line waits for others to be read with it (a batch prints hundreds a second). */
const PRINT_GATHER_MS = 100;

/** Refs listed by name in a summary line; the rest are counted. */
const REFS_LISTED = 10;
/** Failed and cancelled jobs given a line each in a summary; the rest are counted. */
const LINES_LISTED = 20;

/**
 * What a command's jobs came to, taken in one job at a time: counts, sums and
 * the first few of each kind by name, so a summary of 20,000 jobs holds no
 * more than one of 20.
 */
export class JobsReport {
  total = 0;
  succeeded = 0;
  /** Terminal but neither succeeded nor cancelled (failed, expired, unknown submission). */
  failed = 0;
  cancelled = 0;
  /** Queued, never sent, not held back by a budget or a folder (behind a halt, or detached before their turn). */
  neverRan = 0;
  overBudget = 0;
  /** Rendered but not savable in their output folder yet (kept, capturing). */
  unsaved = 0;
  /** Unfinished otherwise (detached while submitting, rendering or saving). */
  inProgress = 0;
  chargedMicroUsd = 0;
  /** Accepted by the provider, never seen to end: what they cost is unknown; their estimates bound it. */
  possiblyCharged = 0;
  possiblyChargedBoundMicroUsd = 0;
  awaitingCharge = 0;
  firstRef: string | null = null;
  readonly failures: string[] = [];
  readonly cancellations: string[] = [];
  readonly neverRanRefs: string[] = [];
  readonly overBudgetRefs: string[] = [];
  overBudgetReason: string | null = null;
  readonly unsavedRefs: string[] = [];
  unsavedReason: string | null = null;

  add(job: JobOutcome): void {
    this.total++;
    this.firstRef ??= job.ref;
    this.chargedMicroUsd += job.chargeMicroUsd ?? 0;
    if (chargeUnsettled(job)) this.awaitingCharge++;
    if (job.state === "succeeded") this.succeeded++;
    else if (job.state === "cancelled") {
      this.cancelled++;
      listed(this.cancellations, `cancelled: ${job.ref} (${job.id}): ${job.error?.message ?? job.reason ?? "cancelled"}`, LINES_LISTED);
    } else if (isTerminal(job.state)) {
      this.failed++;
      listed(this.failures, `${job.state}: ${job.ref} (${job.id}): ${job.error?.code ?? job.state}: ${job.error?.message ?? job.reason ?? "no reason recorded"}`, LINES_LISTED);
      if (job.chargeMicroUsd === null && (job.state === "unknown_submission" || job.providerJobId !== null)) {
        this.possiblyCharged++;
        this.possiblyChargedBoundMicroUsd += job.estimateMicroUsd ?? 0;
      }
    } else if (job.blockedCode === "over_budget") {
      this.overBudget++;
      this.overBudgetReason ??= job.reason;
      listed(this.overBudgetRefs, job.ref, REFS_LISTED);
    } else if (job.blockedCode === "output_unwritable") {
      this.unsaved++;
      this.unsavedReason ??= job.reason;
      listed(this.unsavedRefs, job.ref, REFS_LISTED);
    } else if (job.state === "queued" && job.attempts === 0) {
      this.neverRan++;
      listed(this.neverRanRefs, job.ref, REFS_LISTED);
    } else this.inProgress++;
  }

  /** Jobs not terminal. */
  unfinished(): number {
    return this.neverRan + this.overBudget + this.unsaved + this.inProgress;
  }
}

function listed(into: string[], item: string, limit: number): void {
  if (into.length < limit) into.push(item);
}

function refList(refs: readonly string[], count: number): string {
  return `${refs.join(", ")}${count > refs.length ? ", …" : ""}`;
}

/** "  … and 180 more: mediagate jobs --batch ID" for a list cut short. */
function more(shown: number, count: number, listCommand: string | null): string[] {
  return count > shown ? [`  … and ${count - shown} more${listCommand ? `: ${listCommand}` : ""}`] : [];
}

/**
 * The human summary of a batch: what ran and was paid, what failed or was
 * cancelled, what never ran, where the files are. `listCommand` lists the
 * jobs a long summary leaves out.
 */
export function summaryText(report: JobsReport, halts: Array<{ provider: string; code: string; message: string }>, outDir: string, listCommand: string | null = null): string {
  const parts = [`${report.succeeded} succeeded`, `${report.failed} failed`];
  if (report.cancelled) parts.push(`${report.cancelled} cancelled`);
  parts.push(`${report.neverRan + report.overBudget} never ran`);
  if (report.unsaved) parts.push(`${report.unsaved} not saved yet`);
  if (report.inProgress) parts.push(`${report.inProgress} still in progress`);
  const lines = [`${parts.join(", ")}; charged ${formatMicroUsd(report.chargedMicroUsd)}`];
  if (report.succeeded) lines.push(`  files in ${outDir}`);
  if (report.possiblyCharged) {
    lines.push(`  ${report.possiblyCharged} job(s) may have been charged by the provider (up to ${formatMicroUsd(report.possiblyChargedBoundMicroUsd)} estimated, not in the total): check them there`);
  }
  if (report.awaitingCharge) {
    lines.push(`  ${report.awaitingCharge} charge(s) not settled yet by the provider (not in the total); \`mediagate worker\` or the next run reads them`);
  }
  lines.push(...report.failures.map((line) => `  ${line}`), ...more(report.failures.length, report.failed, listCommand));
  lines.push(...report.cancellations.map((line) => `  ${line}`), ...more(report.cancellations.length, report.cancelled, listCommand));
  for (const halt of halts) {
    lines.push(`  ${halt.provider.toUpperCase()} halted: ${halt.code}: ${halt.message}`);
  }
  if (report.neverRan) lines.push(`  never ran (not sent, not charged): ${refList(report.neverRanRefs, report.neverRan)}`);
  if (report.overBudget) lines.push(`  held back by the budget (not sent, not charged): ${refList(report.overBudgetRefs, report.overBudget)}; ${report.overBudgetReason ?? ""}`);
  if (report.unsaved) {
    lines.push(`  not saved yet: ${refList(report.unsavedRefs, report.unsaved)}: ${report.unsavedReason ?? "the output folder cannot be written"}`);
    lines.push("  they are kept (capturing): fix the folder, or re-run with another --out, before their result links expire");
  }
  // Provider error messages quote the provider's answer, which may hold control characters.
  return lines.map(escapeUnprintable).join("\n");
}

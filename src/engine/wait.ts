import { fullJitterBackoffMs } from "../core/backoff.js";
import { type Clock, SLEEP_ENDED, systemClock } from "../core/clock.js";
import { isTerminal, type Job } from "../core/job.js";
import type { ProviderId } from "../providers/adapter.js";
import type { JobBrief, JobOutcome, JobScope, Store } from "../store/store.js";
import type { Engine } from "./engine.js";

/**
 * Where the watched jobs stand when waiting ends: counted, never read whole,
 * so that waiting on a batch of 20,000 holds no more than its counts. A
 * caller that wants the rows reads them (`jobsInPages`, or `outcomesInPages` for what a summary needs).
 */
export interface WaitOutcome {
  counts: WaitCounts;
}

/** Where the watched jobs stand, kept by counting changes (never by re-reading them). */
export interface WaitCounts {
  total: number;
  /** Terminal, whatever the outcome. */
  done: number;
  succeeded: number;
  /** Terminal but not succeeded (failed, cancelled, expired, unknown submission). */
  failed: number;
  /** Submitting, running or capturing, and not blocked. */
  running: number;
  /** Queued, not blocked. */
  queued: number;
  /**
   * Unfinished and unable to move on by themselves: queued behind a halted
   * provider (insufficient credits, …) or past their budget, or rendered but
   * not savable in their output folder (`blockedCode`).
   */
  blocked: number;
}

export interface WaitHandlers {
  /** Every change seen of a watched job, in order. */
  onChange?: (job: Job, counts: WaitCounts) => void;
  /** Once per job as it finishes (completion order); jobs already finished when waiting starts come first. */
  onTerminal?: (job: Job, counts: WaitCounts) => void;
  /** The store failed; waiting goes on, trying again after `retryInMs`. */
  onStoreError?: (message: string, retryInMs: number) => void;
  signal?: AbortSignal;
  /**
   * The watched jobs as a scope, when they are a whole batch: changes made by
   * other processes are then found through the batch's index. Defaults to the ids.
   */
  scope?: JobScope;
  /** Paces the looks at the store and the recounts (default: the system's clock). */
  clock?: Clock;
}

/** How often changes made by other processes (a worker, `mediagate cancel`) are looked for. */
const FOLLOW_EVERY_MS = 1_000;
/** Changes are read again this far back, for writers whose clocks run a little behind ours. */
const FOLLOW_OVERLAP_MS = 2_000;
/** Briefs read per look; a look that fills it looks again at once. */
const FOLLOW_PAGE = 1_000;
/** How often the counts kept here are checked against the store's own count of unfinished jobs. */
const CONFIRM_EVERY_MS = 10_000;

type Brief = Pick<JobBrief, "state" | "provider" | "blockedCode" | "updatedAt">;

/**
 * Counts of the watched jobs by what waiting needs to know, kept up to date
 * one change at a time: O(1) per change, whatever the size of the batch.
 */
class Tally {
  private readonly briefs = new Map<string, Brief>();
  private terminal = 0;
  private succeeded = 0;
  private active = 0;
  private blockedCode = 0;
  private readonly queuedBy = new Map<ProviderId, number>();
  halted = new Set<ProviderId>();

  constructor(private readonly total: number) {}

  known(id: string): Brief | undefined {
    return this.briefs.get(id);
  }

  /**
   * Takes `brief` unless what is known is newer (`force` takes it anyway):
   * `stale` when refused, `moved` when the job changed state or blockage,
   * `same` otherwise.
   */
  apply(id: string, brief: Brief, force = false): "stale" | "same" | "moved" {
    const before = this.briefs.get(id);
    if (before && !force && before.updatedAt > brief.updatedAt) return "stale";
    this.briefs.set(id, { state: brief.state, provider: brief.provider, blockedCode: brief.blockedCode, updatedAt: brief.updatedAt });
    // A routed job moved to its next target stays queued but is counted under another provider (one may be halted).
    if (before && before.state === brief.state && before.blockedCode === brief.blockedCode && before.provider === brief.provider) return "same";
    if (before) this.count(before, -1);
    this.count(brief, 1);
    return "moved";
  }

  private count(brief: Brief, sign: 1 | -1): void {
    if (isTerminal(brief.state)) {
      this.terminal += sign;
      if (brief.state === "succeeded") this.succeeded += sign;
    } else if (brief.blockedCode !== null) this.blockedCode += sign;
    else if (brief.state === "queued") this.queuedBy.set(brief.provider, (this.queuedBy.get(brief.provider) ?? 0) + sign);
    else this.active += sign;
  }

  /** Jobs that can still move on by themselves (the wait ends at zero). */
  open(): number {
    let queued = 0;
    for (const [provider, count] of this.queuedBy) if (!this.halted.has(provider)) queued += count;
    return this.active + queued;
  }

  counts(): WaitCounts {
    let queued = 0;
    let haltedQueued = 0;
    for (const [provider, count] of this.queuedBy) {
      if (this.halted.has(provider)) haltedQueued += count;
      else queued += count;
    }
    return {
      total: this.total,
      done: this.terminal,
      succeeded: this.succeeded,
      failed: this.terminal - this.succeeded,
      running: this.active,
      queued,
      blocked: this.blockedCode + haltedQueued,
    };
  }
}

function briefOf(job: Job): Brief {
  return { state: job.state, provider: job.provider, blockedCode: job.blockedCode, updatedAt: job.updatedAt };
}

/** Rows read per statement when jobs are read whole: memory stays flat whatever the size of the batch. */
export const JOB_PAGE = 500;

/** `ids` cut into pages of `JOB_PAGE`, in order. */
function* idPages(ids: readonly string[]): Generator<string[]> {
  for (let start = 0; start < ids.length; start += JOB_PAGE) yield ids.slice(start, start + JOB_PAGE);
}

/** The jobs with these ids, read `JOB_PAGE` at a time (in the order of `ids`' pages, by creation within a page). */
export async function* jobsInPages(store: Store, ids: readonly string[]): AsyncGenerator<Job[]> {
  for (const page of idPages(ids)) yield await store.listJobs({ ids: page });
}

/** What a summary needs of the jobs with these ids, `JOB_PAGE` at a time (see `Store.jobOutcomes`). */
export async function* outcomesInPages(store: Store, ids: readonly string[]): AsyncGenerator<JobOutcome[]> {
  for (const page of idPages(ids)) yield await store.jobOutcomes(page);
}

/**
 * Resolves when every job is terminal or blocked (see `WaitCounts.blocked`),
 * or when `signal` aborts. Follows the jobs by the engine's events and, for
 * changes made elsewhere, by what changed in the store since the last look:
 * the cost of a change does not grow with the number of jobs watched. Only
 * the jobs that had already finished at the start are read whole (in pages,
 * for `onTerminal`). A store that fails is waited for, not given up on.
 */
export async function waitForJobs(engine: Engine, store: Store, jobIds: readonly string[], handlers: WaitHandlers = {}): Promise<WaitOutcome> {
  let scope: JobScope = handlers.scope ?? { jobIds };
  const clock = handlers.clock ?? systemClock;
  const watched = new Set(jobIds);
  const tally = new Tally(watched.size);
  const reported = new Set<string>();
  let wake: (() => void) | null = null;
  /**
   * Whether the engine going idle makes the wait look at the store before its next look is due. An engine goes idle
   * many times a second in a busy batch (between waves), and each look read every brief changed in the last seconds;
   * so once a look made on an idle finds nothing new, idles are let pass until the next look made on time.
   */
  let lookOnIdle = true;

  const seen = (job: Job, force = false) => {
    const applied = tally.apply(job.id, briefOf(job), force);
    if (applied === "stale") return;
    const counts = tally.counts();
    handlers.onChange?.(job, counts);
    if (isTerminal(job.state) && !reported.has(job.id)) {
      reported.add(job.id);
      handlers.onTerminal?.(job, counts);
    }
    if (applied === "moved" && tally.open() === 0) wake?.();
  };
  const onJob = (job: Job) => {
    if (watched.has(job.id)) seen(job);
  };
  const onIdle = () => {
    if (lookOnIdle) wake?.();
  };
  const onAbort = () => wake?.();
  engine.on("job", onJob);
  engine.on("idle", onIdle);
  handlers.signal?.addEventListener("abort", onAbort);

  let failures = 0;
  /** Runs a read of the store until it answers (or waiting is given up). */
  const patiently = async <T>(read: () => Promise<T>): Promise<T | null> => {
    for (;;) {
      try {
        const value = await read();
        failures = 0;
        return value;
      } catch (error) {
        if (handlers.signal?.aborted) return null;
        failures++;
        const retryInMs = fullJitterBackoffMs(failures, { baseMs: 500, capMs: 15_000 });
        handlers.onStoreError?.(error instanceof Error ? error.message : String(error), retryInMs);
        await pause(retryInMs);
      }
    }
  };
  /** Resolves true when `ms` passed, false when woken before. */
  const pause = (ms: number) =>
    new Promise<boolean>((resolve) => {
      const napping = new AbortController();
      const done = (slept: boolean) => {
        napping.abort(SLEEP_ENDED);
        wake = null;
        resolve(slept);
      };
      clock.sleep(ms, napping.signal).then(() => done(true), () => undefined);
      wake = () => done(false);
    });

  /**
   * Takes in the jobs whose briefs are news, reading their full rows only for
   * handlers that want them. `force` trusts the store over what is known here.
   * Returns how many were news.
   */
  const takeIn = async (briefs: readonly JobBrief[], force = false): Promise<number> => {
    const news = briefs.filter((brief) => {
      const known = tally.known(brief.id);
      const changed = !known || known.state !== brief.state || known.blockedCode !== brief.blockedCode || known.provider !== brief.provider;
      return watched.has(brief.id) && changed && (force || !known || known.updatedAt <= brief.updatedAt);
    });
    if (news.length === 0) return 0;
    if (!handlers.onChange && !handlers.onTerminal) {
      for (const brief of news) tally.apply(brief.id, brief, force);
      if (tally.open() === 0) wake?.();
      return news.length;
    }
    const ids = news.sort((left, right) => left.updatedAt - right.updatedAt).map((brief) => brief.id);
    for (const page of idPages(ids)) {
      const jobs = await patiently(() => store.listJobs({ ids: page }));
      for (const job of (jobs ?? []).sort((left, right) => left.updatedAt - right.updatedAt)) seen(job, force);
    }
    return news.length;
  };

  let since = 0;
  /** The starting point (and, should the counts ever disagree with the store, a fresh one): briefs of every job. */
  const startFrom = async (force: boolean) => {
    const briefs = (await patiently(() => store.jobBriefs(scope))) ?? [];
    // A batch that holds jobs not watched here (an edited file run again) is followed by its ids instead.
    if ("batchId" in scope && briefs.some((brief) => !watched.has(brief.id))) scope = { jobIds: [...watched] };
    for (const brief of briefs) since = Math.max(since, brief.updatedAt);
    // Unfinished ones are counted from their brief; finished ones are read whole once, for onTerminal.
    for (const brief of briefs) if (!isTerminal(brief.state) && watched.has(brief.id)) tally.apply(brief.id, brief, force);
    await takeIn(briefs.filter((brief) => isTerminal(brief.state)), force);
  };

  try {
    tally.halted = new Set(((await patiently(() => store.halts())) ?? []).map((halt) => halt.provider));
    await startFrom(false);
    let confirmedAt = clock.now();
    while (!handlers.signal?.aborted) {
      if (tally.open() === 0) {
        // The counts say done: the store's own count has the last word (a change missed by a clock far behind ours).
        const open = await patiently(() => store.openCounts(scope));
        const stillOpen = (open ?? []).some((row) => !row.blocked && !(row.state === "queued" && tally.halted.has(row.provider)));
        if (!stillOpen) break;
        await startFrom(true);
        if (tally.open() === 0) await pause(FOLLOW_EVERY_MS);
        continue;
      }
      const onTime = await pause(FOLLOW_EVERY_MS);
      if (handlers.signal?.aborted) break;
      // Changes made by other processes (and by this one: those are known already and cost only their brief).
      const from = since - FOLLOW_OVERLAP_MS;
      let after: JobBrief | null = null;
      let news = 0;
      for (;;) {
        const cursor: JobBrief | null = after;
        const briefs: JobBrief[] | null = await patiently(() => store.changedBriefs(scope, from, FOLLOW_PAGE, cursor));
        if (!briefs || briefs.length === 0) break;
        for (const brief of briefs) since = Math.max(since, brief.updatedAt);
        news += await takeIn(briefs);
        if (briefs.length < FOLLOW_PAGE) break;
        after = briefs[briefs.length - 1]!;
      }
      const halts = await patiently(() => store.halts());
      if (halts) {
        const halted = new Set(halts.map((halt) => halt.provider));
        if (halted.size !== tally.halted.size || [...halted].some((provider) => !tally.halted.has(provider))) news++;
        tally.halted = halted;
      }
      lookOnIdle = onTime || news > 0;
      if (clock.now() - confirmedAt >= CONFIRM_EVERY_MS) {
        confirmedAt = clock.now();
        const open = await patiently(() => store.openCounts(scope));
        const counted = (open ?? []).reduce((sum, row) => sum + (row.blocked || (row.state === "queued" && tally.halted.has(row.provider)) ? 0 : row.count), 0);
        if (open && counted !== tally.open()) await startFrom(true);
      }
    }
  } finally {
    engine.off("job", onJob);
    engine.off("idle", onIdle);
    handlers.signal?.removeEventListener("abort", onAbort);
  }
  return { counts: tally.counts() };
}

/** Whether this job's charge is one the provider settles after the end (B) and has not settled yet. */
export function chargeUnsettled(job: Pick<Job, "chargeState">): boolean {
  return job.chargeState === "pending" || job.chargeState === "unavailable";
}

/**
 * Keeps the engine running until every settling charge of these jobs is
 * settled, the bound passes, or `signal` aborts. Returns the jobs still unsettled.
 */
export async function waitForSettlement(store: Store, jobIds: readonly string[], boundMs: number, signal?: AbortSignal): Promise<Job[]> {
  const deadline = Date.now() + boundMs;
  let open = [...jobIds];
  for (;;) {
    const jobs = (await store.listJobs({ ids: open })).filter(chargeUnsettled);
    open = jobs.map((job) => job.id);
    if (open.length === 0 || Date.now() >= deadline || signal?.aborted) return jobs;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Waits (at most `boundMs`, or until `signal`) until every notification that
 * `scope`'s jobs owe has had its first attempt, and no attempt is in flight
 * (`delivering`); returns how many are still owed then (a receiver that
 * failed is retried by the next engine that works on every job, for at least
 * 24 hours).
 */
export async function waitForFirstNotifications(store: Store, scope: JobScope, delivering: () => number, boundMs: number, signal?: AbortSignal): Promise<number> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const { owed, neverTried } = await store.notificationsOwed(scope);
    if (owed === 0 || (neverTried === 0 && delivering() === 0) || Date.now() >= deadline || signal?.aborted) return owed;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

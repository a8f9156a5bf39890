import type { Job } from "../core/job.js";
import type { Store } from "../store/store.js";
import type { EngineContext } from "./context.js";
import type { StepsInFlight } from "./in-flight.js";
import type { Naps } from "./naps.js";
import { trackJob } from "./track.js";

/** Owned jobs due for a step taken per tick. */
const OWNED_PAGE = 256;

/** One of this engine's jobs as its own step last wrote it, and the count of words from outside by then (`wakes`). */
interface OwnedJob {
  job: Job;
  wake: number;
}

/** What the engine's memory of its own jobs works with. */
export interface OwnedJobsParts {
  store: Store;
  owner: string;
  /** See `EngineOptions.idleTickMs`. */
  idleTickMs: number;
  maxInFlight: number;
  context: EngineContext;
  steps: StepsInFlight;
  naps: Naps;
  stopping(): boolean;
  /** A job noted that is not this engine's to track (any more): back in the queue, or ended. */
  untracked(job: Job): void;
}

/**
 * The jobs this engine tracks (running or capturing under its lease), as its own steps last wrote them: the loop
 * naps by their next due times, and polls a running one when it comes due without reading it back (see
 * `pollKnownDue`); it looks in the store for its due jobs only when it may not know them (see `readNeeded`).
 * What another process writes to one of its jobs (a webhook's nudge, a cancel) is read at the next tick after a
 * wake, and at least once an idle tick.
 */
export class OwnedJobs {
  private readonly jobs = new Map<string, OwnedJob>();
  /**
   * Words from outside so far (see `Engine.wake`): a job of `jobs` noted before the latest may have been moved by
   * another process (a webhook's nudge, a cancel), which only the store knows.
   */
  private wakes = 0;
  /** The store may hold due times of this engine's jobs that `jobs` lacks (it just started, or was woken from outside). */
  private unknown = true;
  private lastReadAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly parts: OwnedJobsParts) {}

  /** A job as one of this engine's steps (or its nudge) just wrote it: its next due time if it is still this engine's to track. */
  note(job: Job): void {
    if (job.leaseOwner === this.parts.owner && (job.state === "running" || job.state === "capturing")) {
      this.jobs.set(job.id, { job, wake: this.wakes });
      return;
    }
    this.jobs.delete(job.id);
    this.parts.untracked(job);
  }

  /** Told from outside: another process may have moved one of this engine's jobs. */
  toldFromOutside(): void {
    this.unknown = true;
    this.wakes++;
  }

  /** A step of this job failed (see `StepsInFlight.spawn`): its row here is not polled from, and the store is read. */
  stepFailed(jobId: string): void {
    this.unknown = true;
    const known = this.jobs.get(jobId);
    if (known) known.wake = -1;
  }

  /**
   * The soonest due time later than `after` (the tick's time) of this engine's jobs that no step works on now, or
   * null. A job whose step ended during the tick counts with its new due time. One due by `after` was started by the
   * tick, or its step ended without moving it (a stop's abort, the store failing): it is not looked at again before
   * the next tick.
   */
  nextDue(after: number): number | null {
    let soonest: number | null = null;
    for (const [id, { job: { nextAttemptAt: at } }] of this.jobs) if (at > after && (soonest === null || at < soonest) && !this.parts.steps.has(id)) soonest = at;
    return soonest;
  }

  /**
   * Polls this engine's running jobs that are due by `now` as its own steps last wrote them, first in the tick and
   * without reading them back: reading their ids and rows (two round trips on PostgreSQL, behind the queue's read)
   * made a poll start 10 ms after its due time on average in a worker, and a late poll is a late hand-over of the
   * slot. Only jobs noted since the last word from outside (`wakes`: every wake, a webhook's nudge or another
   * process's notice, may have moved any of them); the store is still read at least once an idle tick.
   *
   * A job another process changed without a word (taken over after a lapsed lease, cancelled by a command on the
   * same SQLite file) is polled once more at most: every write of the poll's step expects the job running under this
   * engine's lease, so nothing else follows, and the job is forgotten here as it is polled; only its step's own write
   * puts it back (refused, the store's word stands, read when it comes). Capturing jobs are read from the store:
   * their step downloads the result without a write before it.
   */
  pollKnownDue(now: number): void {
    const { steps, naps, context, maxInFlight } = this.parts;
    if (this.parts.stopping()) return;
    for (const [id, { job, wake }] of this.jobs) {
      if (wake !== this.wakes || job.state !== "running" || job.nextAttemptAt > now || steps.busy(id)) continue;
      if (steps.size >= maxInFlight) {
        naps.cutTick();
        return;
      }
      this.jobs.delete(id);
      steps.spawn(job, () => trackJob(context, job), false);
    }
  }

  /**
   * Whether this tick reads the store for this engine's due jobs: one of them is due by `now` as far as this engine
   * knows, the store may hold due times it does not know, or an idle tick has passed since the last read.
   */
  readNeeded(now: number): boolean {
    if (this.unknown || now - this.lastReadAt >= this.parts.idleTickMs) return true;
    for (const [id, { job }] of this.jobs) if (job.nextAttemptAt <= now && !this.parts.steps.busy(id)) return true;
    return false;
  }

  /** Reads this engine's jobs due by `now` from the store and starts their steps. */
  async readDue(now: number): Promise<void> {
    const { store, steps, naps, context } = this.parts;
    this.unknown = false;
    this.lastReadAt = now;
    const expected = [...this.jobs].filter(([id, { job }]) => job.nextAttemptAt <= now && !steps.busy(id));
    const owned = await store.dueOwned(this.parts.owner, now, OWNED_PAGE, steps.busyIds);
    if (owned.length === OWNED_PAGE) naps.cutTick();
    for (const job of owned) this.note(job);
    if (!naps.tickCut) {
      // Due here, yet not due in the store (taken over after a lapsed lease, cancelled, moved by another process): the
      // store's due time stands, read when it comes.
      const read = new Set(owned.map((job) => job.id));
      for (const [id, known] of expected) if (!read.has(id) && this.jobs.get(id) === known && !steps.busy(id)) this.jobs.delete(id);
    }
    for (const job of owned) {
      if (this.parts.stopping() || steps.busy(job.id)) continue;
      steps.spawn(job, () => trackJob(context, job), false);
    }
  }
}

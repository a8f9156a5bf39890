import { type Clock, SLEEP_ENDED } from "../core/clock.js";
import type { ProviderId } from "../providers/adapter.js";
import type { JobScope, NextDue, Store } from "../store/store.js";

/** What the loop's naps are measured from. */
export interface NapSources {
  store: Store;
  clock: Clock;
  /** The longest nap without looking at the store (see `EngineOptions.idleTickMs`). */
  idleTickMs: number;
  scope(): JobScope | null;
  /** Whether charges that settle after the end, and notifications due, count as this engine's work (see `Store.nextDueAt`). */
  settles: boolean;
  delivers(): boolean;
  stopping(): boolean;
  /** The soonest due time later than `after` of this engine's own jobs that no step works on now (see `OwnedJobs.nextDue`). */
  nextOwnedDue(after: number): number | null;
  /** The loop is about to nap (idle, when no step runs). */
  napping(): void;
  /** A queued job's due time was reached: every queue's trusted emptiness ends (see `Claims.forgetEmptyQueues`). */
  queuedDue(): void;
}

/**
 * When the loop looks at the store next: it naps until the next job falls due
 * (at most an idle tick), and is woken sooner by a nudge, a freed slot or a
 * step that moved its job's due time.
 */
export class Naps {
  private wakeUp: (() => void) | null = null;
  private wakeRequested = false;
  /** A step ended without freeing anything: only due times may have moved, so the nap is measured again (no tick). */
  private dueMoved = false;
  /** The last tick stopped at a page or in-flight limit: due work may be left that it did not reach. */
  private cut = false;
  /**
   * The next due time of everything but this engine's own jobs (queues, charges to settle, notifications) as last
   * read: for which providers skipped, when, and at which count of `othersChanged`. What this engine does that moves
   * it (a job sent back to the queue or held for a slot, a notification claimed or tried, a job ended owing a
   * notification or a settlement) counts a change, and a changed value is read again; so is one reached, and one an
   * idle tick old (work another process left without a word).
   */
  private othersDue: { due: NextDue; skip: string; readAt: number; changes: number } | null = null;
  /** Changes to the next due time of other work since the engine started (see `othersDue`). */
  private othersChanged = 0;

  constructor(private readonly sources: NapSources) {}

  /** A pass of the loop begins: a wake from now on asks for another. */
  clearWake(): void {
    this.wakeRequested = false;
  }

  /** Whether the loop was woken since its pass began (see `wakeLoop`). */
  get woken(): boolean {
    return this.wakeRequested;
  }

  /** A tick begins: it has reached nothing yet. */
  tickBegins(): void {
    this.cut = false;
  }

  /** The tick stopped at a page or in-flight limit: the loop looks again without a nap. */
  cutTick(): void {
    this.cut = true;
  }

  /** Whether the last tick stopped at a page or in-flight limit. */
  get tickCut(): boolean {
    return this.cut;
  }

  /** Ends the loop's nap (a task here ended: a slot may be free, a job due). */
  wakeLoop(): void {
    // Remembered when the loop is busy, so a slot freed mid-tick is not missed until the next idle tick.
    this.wakeRequested = true;
    this.endNap();
  }

  /** A step ended; `freedSomething` when it failed or released a slot. */
  stepEnded(freedSomething: boolean): void {
    // A freed slot, or room for a step the last tick had none for, can start queued work: a full look.
    // Otherwise the step only moved its job's next due time, and the loop measures its nap again.
    if (freedSomething || this.cut) this.wakeLoop();
    else this.dueChanged();
  }

  /** What this engine did moved the next due time of other work than its own jobs (see `othersDue`). */
  othersMoved(): void {
    this.othersChanged++;
  }

  /** Ends the loop's nap, if it naps (what it does then depends on the flags its wakers set). */
  private endNap(): void {
    const wakeUp = this.wakeUp;
    this.wakeUp = null;
    wakeUp?.();
  }

  /** Ends the loop's nap to measure it again: a step set its job's next due time, which may come first. */
  private dueChanged(): void {
    this.dueMoved = true;
    this.endNap();
  }

  /**
   * Naps until the next job falls due (at most `idleTickMs`), or until
   * woken. A step that ends without freeing a slot only moves its own job's
   * due time: the nap is measured again (one read) instead of a whole tick.
   * Due times after `after` (the tick's time) count: a job due by then was
   * started or waits for a slot, whose release wakes the loop. A queued
   * job's due time reached (by the nap or before it) ends every queue's
   * trusted emptiness; nothing else does but a nudge, a job queued here
   * and the trust's own end. Returns whether it napped.
   */
  async napUntilDue(skip: ProviderId[], after: number): Promise<boolean> {
    const { store, clock, idleTickMs } = this.sources;
    let napped = false;
    for (;;) {
      this.dueMoved = false;
      const cached = this.othersDue;
      const skipKey = skip.join(",");
      const now = clock.now();
      let others: NextDue;
      if (
        cached === null ||
        cached.changes !== this.othersChanged ||
        cached.skip !== skipKey ||
        now - cached.readAt >= idleTickMs ||
        (cached.due.at !== null && cached.due.at <= after)
      ) {
        const changes = this.othersChanged;
        others = await store.nextDueAt(null, skip, after, this.sources.scope(), this.sources.settles, this.sources.delivers());
        if (this.wakeRequested || this.sources.stopping()) return napped;
        // Moved while the store answered (a job sent back to the queue): the answer may not hold it.
        if (changes !== this.othersChanged) continue;
        this.othersDue = { due: others, skip: skipKey, readAt: now, changes };
      } else {
        others = cached.due;
      }
      const ownedAt = this.sources.nextOwnedDue(after);
      const at = ownedAt === null ? others.at : others.at === null ? ownedAt : Math.min(ownedAt, others.at);
      const delay = at === null ? idleTickMs : Math.min(idleTickMs, Math.max(0, at - clock.now()));
      if (delay > 0) {
        this.sources.napping();
        await this.nap(delay);
        napped = true;
      }
      if (others.queuedAt !== null && clock.now() >= others.queuedAt) this.sources.queuedDue();
      if (delay === 0 || !this.dueMoved || this.wakeRequested || this.sources.stopping()) return napped;
    }
  }

  /** Sleeps `ms` of the engine's clock, or until woken (a freed slot, a nudge, stop). */
  async nap(ms: number): Promise<void> {
    const napping = new AbortController();
    await new Promise<void>((resolve) => {
      this.wakeUp = resolve;
      this.sources.clock.sleep(ms, napping.signal).then(resolve, resolve);
    });
    this.wakeUp = null;
    // Woken before its end: its timer goes too. Left running, a stopped engine's last nap kept its process alive for
    // the rest of it (up to an idle tick: a batch exited 400 ms after its last job was saved).
    napping.abort(SLEEP_ENDED);
  }
}

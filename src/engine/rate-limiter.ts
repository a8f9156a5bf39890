import { type Clock, SLEEP_ENDED } from "../core/clock.js";
import type { RateWindow } from "../providers/adapter.js";
import type { Store } from "../store/store.js";

/**
 * The provider counts a request when it arrives, between our send and its
 * answer; the store keeps each request in the window until a full window after
 * its answer. Widening each window by this margin also covers the difference
 * between the provider's clock and ours.
 */
const ARRIVAL_MARGIN_MS = 1_000;

/**
 * When a window is the bottleneck, submits go before reads: a job submitted
 * sooner renders in parallel with the others, while a finished job's read can
 * wait without slowing the batch. But a read that has waited this long goes
 * before any submit, so a long batch never starves its reads and results are
 * fetched well before their links expire (A's live 24 h; E's lifetime is not
 * shown).
 */
export const READ_STARVATION_MS = 120_000;

/** What a request is for, which orders the requests waiting for the same windows. */
export type RequestKind = "submit" | "read";

interface Waiter {
  kind: RequestKind;
  since: number;
  order: number;
  resolve: (answered: () => Promise<void>) => void;
  reject: (reason: unknown) => void;
}

/**
 * Waits until every rate window of a provider account has room, then takes one
 * request from each. Within this process, the requests waiting for the same
 * windows form one queue (submits first, oldest first, see
 * `READ_STARVATION_MS`) and only its head asks the store, so a window that
 * opens is given to the right request and not to whichever timer fires first.
 * Across processes the store's windows are the shared truth.
 */
export class RateLimiter {
  private readonly queues = new Map<string, RateQueue>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /**
   * Resolves once the request may be sent; the returned function records when
   * its answer came back (call it once the answer or the failure is known).
   */
  async take(windows: readonly RateWindow[], signal?: AbortSignal, kind: RequestKind = "read"): Promise<() => Promise<void>> {
    if (windows.length === 0) return async () => {};
    const widened = windows.map((window) => ({ ...window, windowMs: window.windowMs + ARRIVAL_MARGIN_MS }));
    const key = widened.map((window) => `${window.key}:${window.limit}:${window.windowMs}`).join("|");
    let queue = this.queues.get(key);
    if (!queue) {
      queue = new RateQueue(this.store, this.clock, widened);
      this.queues.set(key, queue);
    }
    return queue.wait(kind, signal);
  }
}

class RateQueue {
  private readonly waiters: Waiter[] = [];
  private pumping = false;
  private nap: AbortController | null = null;
  private arrivals = 0;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly windows: readonly RateWindow[],
  ) {}

  wait(kind: RequestKind, signal?: AbortSignal): Promise<() => Promise<void>> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.remove(waiter);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        kind,
        since: this.clock.now(),
        order: this.arrivals++,
        resolve: (answered) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(answered);
        },
        reject,
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
      if (!this.pumping) void this.pump();
    });
  }

  private remove(waiter: Waiter): void {
    const index = this.waiters.indexOf(waiter);
    if (index >= 0) this.waiters.splice(index, 1);
    // Nobody left to serve: stop sleeping, so no timer outlives the engine.
    if (this.waiters.length === 0) this.nap?.abort(SLEEP_ENDED);
  }

  /** Reads that have waited READ_STARVATION_MS first, then submits, then other reads; oldest first in each. */
  private head(): Waiter {
    const now = this.clock.now();
    const tier = (waiter: Waiter) => (waiter.kind === "read" ? (now - waiter.since >= READ_STARVATION_MS ? 0 : 2) : 1);
    return this.waiters.reduce((best, waiter) => {
      const difference = tier(waiter) - tier(best) || waiter.order - best.order;
      return difference < 0 ? waiter : best;
    });
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.waiters.length > 0) {
        let take;
        try {
          take = await this.store.takeRateToken(this.windows, () => this.clock.now());
        } catch (error) {
          // The store failed: every waiter hears it (their jobs retry through the engine's error path).
          for (const waiter of this.waiters.splice(0)) waiter.reject(error);
          return;
        }
        if (take.granted) {
          const token = take.token;
          const answered = () => this.store.answerRateToken(token, this.clock.now());
          const waiter = this.waiters.length > 0 ? this.head() : null;
          if (waiter) {
            this.remove(waiter);
            waiter.resolve(answered);
          } else {
            // Everyone left while the store was answering: give the request back as answered at once.
            await answered();
          }
          continue;
        }
        this.nap = new AbortController();
        try {
          await this.clock.sleep(take.waitMs, this.nap.signal);
        } catch {
          // Woken because the queue emptied.
        } finally {
          this.nap = null;
        }
      }
    } finally {
      this.pumping = false;
    }
  }
}

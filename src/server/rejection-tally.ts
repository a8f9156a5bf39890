import type { EngineLogger } from "../engine/logger.js";
import type { Store, WebhookRejectionCount } from "../store/store.js";

/** The one store method the tally writes through. */
export type RejectionCounterStore = Pick<Store, "countWebhookRejections">;

/** Refused deliveries are counted per hour: the row count grows with time, never with traffic. */
export const REJECTION_BUCKET_MS = 60 * 60_000;
/** Counts are written at most this often, so a flood costs the store one write per interval, not one per request. */
export const REJECTION_FLUSH_MS = 5_000;

const REASON = /^[a-z0-9_]{1,40}$/;

/**
 * Counts refused webhook deliveries in memory per (provider, reason, hour)
 * and adds them to the store's counters in one transaction per interval and
 * when the server closes. Keys come from a fixed set (our provider ids or
 * `unknown`, stable reason codes), so memory stays bounded too. A count not
 * yet written is lost if the process dies: these are counters of refusals,
 * nothing that was paid for.
 */
export class RejectionTally {
  private pending = new Map<string, WebhookRejectionCount>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: RejectionCounterStore,
    private readonly log: EngineLogger,
    private readonly flushMs: number = REJECTION_FLUSH_MS,
  ) {}

  count(provider: string, reason: string, throttled: boolean, at: number): void {
    // A reason outside the fixed shape would be a bug upstream; it must still not become a new key per request.
    const code = REASON.test(reason) ? reason : "other";
    const bucketStart = Math.floor(at / REJECTION_BUCKET_MS) * REJECTION_BUCKET_MS;
    const key = `${provider}\u0000${code}\u0000${bucketStart}`;
    const entry = this.pending.get(key);
    if (entry) {
      entry.refused += 1;
      entry.throttled += throttled ? 1 : 0;
      entry.firstAt = Math.min(entry.firstAt, at);
      entry.lastAt = Math.max(entry.lastAt, at);
    } else {
      this.pending.set(key, { provider, reason: code, bucketStart, refused: 1, throttled: throttled ? 1 : 0, firstAt: at, lastAt: at });
    }
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Writes what was counted so far. Counts that fail to be written are kept for the next flush. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.store.countWebhookRejections([...batch.values()]);
    } catch (error) {
      this.log.warn({ error: error instanceof Error ? error.message : String(error), counters: batch.size }, "could not write the counts of refused webhook deliveries; kept for the next flush");
      for (const [key, count] of batch) {
        const later = this.pending.get(key);
        this.pending.set(key, later ? { ...count, refused: count.refused + later.refused, throttled: count.throttled + later.throttled, lastAt: Math.max(count.lastAt, later.lastAt) } : count);
      }
      if (!this.timer) {
        this.timer = setTimeout(() => void this.flush(), this.flushMs);
        this.timer.unref();
      }
    }
  }
}

import type { Clock } from "../../core/clock.js";

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 3_600_000;

export interface EQuotaStats {
  /** Requests counted against the quota. */
  admitted: number;
  /** Requests answered 429. */
  rejected: number;
  /** The most counted requests within any sliding minute. */
  maxInMinute: number;
  /** The most counted requests within any sliding 24 hours. */
  maxInDay: number;
}

export type EQuotaDecision = { allowed: true } | { allowed: false; retryAfterMs: number; window: "minute" | "day" };

/**
 * spec E Limits: 4 requests per minute and 9,000 per day per organisation;
 * exceeding either returns 429. Both are sliding windows of virtual time (the
 * spec does not say whether "day" is a calendar day; a rolling 24 h never
 * allows more than a calendar day would). Every admitted request counts,
 * status polls and cancels included ("whether status polls count ... not
 * shown, so count them"); a request answered 429 does not, so a client that
 * honours retry-after always gets through.
 */
export class EQuota {
  private readonly admittedAt = new Map<string, number[]>();
  private readonly stats = new Map<string, EQuotaStats>();

  constructor(
    private readonly clock: Clock,
    public perMinute: number,
    public perDay: number,
  ) {}

  take(organisation: string): EQuotaDecision {
    const now = this.clock.now();
    const times = this.admittedAt.get(organisation) ?? [];
    this.admittedAt.set(organisation, times);
    while (times.length > 0 && times[0]! <= now - DAY_MS) times.shift();
    const stats = this.statsFor(organisation);
    const inMinute = countSince(times, now - MINUTE_MS);
    if (inMinute >= this.perMinute) {
      stats.rejected += 1;
      // The window frees a place when the oldest of the last `perMinute` requests leaves it.
      const oldest = times[times.length - this.perMinute]!;
      return { allowed: false, retryAfterMs: oldest + MINUTE_MS - now, window: "minute" };
    }
    if (times.length >= this.perDay) {
      stats.rejected += 1;
      const oldest = times[times.length - this.perDay]!;
      return { allowed: false, retryAfterMs: oldest + DAY_MS - now, window: "day" };
    }
    times.push(now);
    stats.admitted += 1;
    stats.maxInMinute = Math.max(stats.maxInMinute, inMinute + 1);
    stats.maxInDay = Math.max(stats.maxInDay, times.length);
    return { allowed: true };
  }

  report(): ReadonlyMap<string, EQuotaStats> {
    return this.stats;
  }

  private statsFor(organisation: string): EQuotaStats {
    let stats = this.stats.get(organisation);
    if (!stats) {
      stats = { admitted: 0, rejected: 0, maxInMinute: 0, maxInDay: 0 };
      this.stats.set(organisation, stats);
    }
    return stats;
  }
}

/** How many sorted times are after `since` (exclusive). */
function countSince(sortedTimes: readonly number[], since: number): number {
  let count = 0;
  for (let index = sortedTimes.length - 1; index >= 0 && sortedTimes[index]! > since; index--) count++;
  return count;
}

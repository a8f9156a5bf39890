import type { Clock } from "../../core/clock.js";

export interface ARateWindowStats {
  /** Requests admitted. */
  admitted: number;
  /** Requests answered 429. */
  rejected: number;
  /** The most requests admitted within any one sliding window. */
  maxInWindow: number;
}

export type ARateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

/**
 * spec A Limits: 180 requests per minute (600 enterprise), per key. Counted
 * over a sliding window of virtual time; every request that carries a known
 * key counts, polls included, but a request answered 429 does not (so a
 * client that waits for Retry-After always gets through).
 */
export class SlidingWindowLimiter {
  private readonly admittedAt = new Map<string, number[]>();
  private readonly stats = new Map<string, ARateWindowStats>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  take(key: string, limit: number): ARateDecision {
    const now = this.clock.now();
    const times = this.admittedAt.get(key) ?? [];
    this.admittedAt.set(key, times);
    while (times.length > 0 && times[0]! <= now - this.windowMs) times.shift();
    const stats = this.statsFor(key);
    if (times.length >= limit) {
      stats.rejected += 1;
      return { allowed: false, retryAfterMs: times[0]! + this.windowMs - now };
    }
    times.push(now);
    stats.admitted += 1;
    stats.maxInWindow = Math.max(stats.maxInWindow, times.length);
    return { allowed: true };
  }

  report(): ReadonlyMap<string, ARateWindowStats> {
    return this.stats;
  }

  private statsFor(key: string): ARateWindowStats {
    let stats = this.stats.get(key);
    if (!stats) {
      stats = { admitted: 0, rejected: 0, maxInWindow: 0 };
      this.stats.set(key, stats);
    }
    return stats;
  }
}

import type { Clock } from "../core/clock.js";
import type { RateWindow } from "../providers/adapter.js";
import type { Store } from "../store/store.js";

/**
 * The provider counts a request when it arrives, between our send and its
 * answer; the store keeps each request in the window until a full window after
 * its answer. Widening each window by this margin also covers the difference
 * between the provider's clock and ours.
 */
const ARRIVAL_MARGIN_MS = 1_000;

/** Waits until every rate window of a provider account has room, then takes one request from each. */
export class RateLimiter {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /**
   * Resolves once the request may be sent; the returned function records when
   * its answer came back (call it once the answer or the failure is known).
   */
  async take(windows: readonly RateWindow[], signal?: AbortSignal): Promise<() => Promise<void>> {
    if (windows.length === 0) return async () => {};
    const widened = windows.map((window) => ({ ...window, windowMs: window.windowMs + ARRIVAL_MARGIN_MS }));
    for (;;) {
      const take = await this.store.takeRateToken(widened, () => this.clock.now());
      if (take.granted) return () => this.store.answerRateToken(take.token, this.clock.now());
      await this.clock.sleep(take.waitMs, signal);
    }
  }
}

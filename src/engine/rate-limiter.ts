import type { Clock } from "../core/clock.js";
import type { RateWindow } from "../providers/adapter.js";
import type { Store } from "../store/store.js";

/**
 * Our clock stamps a request when it leaves; the provider counts it when it
 * arrives. Widening each window by this margin keeps arrival jitter from
 * putting one request too many into the provider's window.
 */
const ARRIVAL_MARGIN_MS = 1_000;

/** Waits until every rate window of a provider account has room, then takes one request from each. */
export class RateLimiter {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async take(windows: readonly RateWindow[], signal?: AbortSignal): Promise<void> {
    if (windows.length === 0) return;
    const widened = windows.map((window) => ({ ...window, windowMs: window.windowMs + ARRIVAL_MARGIN_MS }));
    for (;;) {
      const waitMs = await this.store.takeRateToken(widened, () => this.clock.now());
      if (waitMs === 0) return;
      await this.clock.sleep(waitMs, signal);
    }
  }
}

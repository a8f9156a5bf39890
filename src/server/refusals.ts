import type { EngineLogger } from "../engine/logger.js";
import { RefusalLimiter } from "./refusal-limiter.js";
import { type RejectionCounterStore, RejectionTally } from "./rejection-tally.js";
import type { WebhookRefusal } from "./webhooks.js";

export interface RefusalAnswer {
  status: number;
  headers: Record<string, string>;
  body: { outcome: "rejected" | "throttled"; code: string; reason: string };
}

/**
 * What happens to a refused webhook request (failed verification, unknown
 * route, too large, unreadable): it changes nothing, is counted per
 * (provider, reason, hour) rather than stored, and is logged while its
 * source is within its bound. Past the bound the source's refusals are
 * answered 429 with Retry-After and only the crossing is logged, so neither
 * the store nor the log grows with a forger's request rate.
 */
export class WebhookRefusals {
  private readonly limiter = new RefusalLimiter();
  private readonly tally: RejectionTally;

  constructor(
    store: RejectionCounterStore,
    private readonly log: EngineLogger,
    private readonly now: () => number,
  ) {
    this.tally = new RejectionTally(store, log);
  }

  refuse(source: string, refusal: WebhookRefusal, jobId: string | null): RefusalAnswer {
    const at = this.now();
    const decision = this.limiter.refuse(source, at);
    this.tally.count(refusal.provider, refusal.code, decision.throttled, at);
    if (!decision.throttled) {
      this.log.warn({ provider: refusal.provider, jobId, source, code: refusal.code, reason: refusal.reason }, "webhook delivery refused");
      return { status: refusal.status, headers: {}, body: { outcome: "rejected", code: refusal.code, reason: refusal.reason } };
    }
    const retryAfterS = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    if (decision.firstRefusal) {
      this.log.warn({ source, provider: refusal.provider, code: refusal.code }, "too many refused webhook deliveries from one source: its refusals are answered 429 and only counted");
    }
    return {
      status: 429,
      // RFC 9110 §10.2.3: Retry-After in seconds.
      headers: { "retry-after": String(retryAfterS) },
      body: { outcome: "throttled", code: refusal.code, reason: `too many refused deliveries from this address; retry after ${retryAfterS} s` },
    };
  }

  /** Writes the counts not yet in the store (the server calls it when it closes). */
  flush(): Promise<void> {
    return this.tally.flush();
  }
}

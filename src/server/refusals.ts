import type { EngineLogger } from "../engine/logger.js";
import { errorBody, type ErrorBody } from "./error-body.js";
import { RefusalLimiter } from "./refusal-limiter.js";
import { type RejectionCounterStore, RejectionTally } from "./rejection-tally.js";
import type { WebhookRefusal } from "./webhooks.js";

export interface RefusalAnswer {
  status: number;
  headers: Record<string, string>;
  /** The server's error shape, and what became of the request (the outcome `/metrics` counts it under). */
  body: ErrorBody & { outcome: "rejected" | "throttled" };
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
      return { status: refusal.status, headers: {}, body: { ...errorBody(refusal.code, refusal.reason), outcome: "rejected" } };
    }
    const retryAfterS = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    if (decision.firstRefusal) {
      this.log.warn({ source, provider: refusal.provider, code: refusal.code }, "too many refused webhook deliveries from one source: its refusals are answered 429 and only counted");
    }
    return {
      status: 429,
      // RFC 9110 §10.2.3: Retry-After in seconds.
      headers: { "retry-after": String(retryAfterS) },
      body: { ...errorBody("throttled", `too many refused requests from this address (the last: ${refusal.code}); retry after ${retryAfterS} s`), outcome: "throttled" },
    };
  }

  /** Writes the counts not yet in the store (the server calls it when it closes). */
  flush(): Promise<void> {
    return this.tally.flush();
  }
}

import type { Clock } from "../core/clock.js";
import type { ProviderId } from "../providers/adapter.js";
import type { JobScope, Store } from "../store/store.js";
import type { EngineContext } from "./context.js";
import { fallOver } from "./fallover.js";
import type { StepsInFlight } from "./in-flight.js";

/** Routed jobs moved off a halted provider per store read. */
const REROUTE_PAGE = 100;
/**
 * Halted providers are read again at most this often (and at once after this
 * engine halts one): a halt set or cleared by another process is seen within
 * it. A submit sent meanwhile to a provider another process halted is refused
 * by the provider as the one that caused the halt was (nothing is charged).
 */
const HALTS_READ_EVERY_MS = 1_000;

/** What the loop's view of halted providers works with. */
export interface HaltParts {
  store: Store;
  clock: Clock;
  context: EngineContext;
  steps: StepsInFlight;
  scope(): JobScope | null;
}

/**
 * The providers halted (no credits, a refused key) as the loop last read them:
 * it skips their queues, and moves their routed queued jobs to the next target.
 */
export class HaltedProviders {
  /** The halted providers as last read, and when (see `HALTS_READ_EVERY_MS`); null to read them at the next tick. */
  private halted: { providers: ProviderId[]; readAt: number } | null = null;
  /** Halted providers whose routed queued jobs were moved on already (see `rerouteHalted`). */
  private readonly reroutedFor = new Set<ProviderId>();
  /** Counts this engine's own halts: a read that began before one must not be kept as current. */
  private haltsWritten = 0;

  constructor(private readonly parts: HaltParts) {}

  /** This engine halted a provider: the halts are read again at the next tick. */
  written(): void {
    this.halted = null;
    this.haltsWritten++;
  }

  /** The providers whose queues the loop skips: those halted. */
  async skippedProviders(): Promise<ProviderId[]> {
    const now = this.parts.clock.now();
    if (this.halted !== null && now - this.halted.readAt < HALTS_READ_EVERY_MS) return this.halted.providers;
    const written = this.haltsWritten;
    const halts = await this.parts.store.halts();
    const providers = [...new Set(halts.map((halt) => halt.provider))];
    // A halt written here while the store answered may be missing from the answer: read again next tick.
    this.halted = written === this.haltsWritten ? { providers, readAt: now } : null;
    for (const provider of this.reroutedFor) if (!providers.includes(provider)) this.reroutedFor.delete(provider);
    for (const halt of halts) {
      if (this.reroutedFor.has(halt.provider)) continue;
      this.reroutedFor.add(halt.provider);
      await this.rerouteHalted(halt.provider, `${halt.provider.toUpperCase()} is halted (${halt.code}: ${halt.message})`);
    }
    return providers;
  }

  /**
   * A provider was halted (no credits, a refused key): the routed jobs queued
   * for it move to the next target of their routes, once per halt, a page at a
   * time; the others wait for the halt to be cleared, as before.
   */
  private async rerouteHalted(provider: ProviderId, why: string): Promise<void> {
    let after: { nextAttemptAt: number; id: string } | null = null;
    for (;;) {
      const page = await this.parts.store.routedQueued(provider, REROUTE_PAGE, this.parts.scope(), after);
      for (const job of page) {
        if (this.parts.steps.busy(job.id) || !job.route || job.route.next.length === 0) continue;
        await fallOver(this.parts.context, job, "queued", why);
      }
      if (page.length < REROUTE_PAGE) return;
      const last = page.at(-1)!;
      after = { nextAttemptAt: last.nextAttemptAt, id: last.id };
    }
  }
}

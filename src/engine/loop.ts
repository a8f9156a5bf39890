import { fullJitterBackoffMs } from "../core/backoff.js";
import type { Clock } from "../core/clock.js";
import type { ProviderId } from "../providers/adapter.js";
import type { Store } from "../store/store.js";
import type { OrphanAdoption } from "./adoption.js";
import { DEADLINE_LOOK_EVERY_MS } from "./deadlines.js";
import type { Claims } from "./claims.js";
import type { Deliveries } from "./deliveries.js";
import type { HaltedProviders } from "./halts.js";
import type { StepsInFlight } from "./in-flight.js";
import type { EngineLogger } from "./logger.js";
import type { Naps } from "./naps.js";
import type { OwnedJobs } from "./owned.js";
import type { SettlementReads } from "./settlement-reads.js";
import { type FullPools, recoverSlots } from "./slots.js";

/** What the loop's passes are made of. */
export interface LoopParts {
  store: Store;
  clock: Clock;
  owner: string;
  leaseMs: number;
  log: EngineLogger;
  naps: Naps;
  steps: StepsInFlight;
  owned: OwnedJobs;
  claims: Claims;
  fullPools: FullPools;
  halts: HaltedProviders;
  deliveries: Deliveries;
  settlements: SettlementReads;
  orphans: OrphanAdoption;
  /** Cancels queued jobs past their deadline (engine/deadlines.ts). */
  deadlines: (now: number) => Promise<number>;
  stopping(): boolean;
}

/**
 * The engine's loop: pass after pass, it reads the halts, starts what is due
 * (claims and submits queued jobs, polls and saves its own, delivers
 * notifications, reads charges), and naps until the next job falls due.
 */
export class EngineLoop {
  /** Loop iterations so far (the benchmarks report them per job). */
  iterations = 0;
  private lastRenewAt = 0;
  private lastRecoveryAt = 0;
  private lastDeadlineLookAt = 0;

  constructor(private readonly parts: LoopParts) {}

  /**
   * Runs until stopped. A failing step (the store unreachable or locked for
   * longer than its timeout) is logged and retried with backoff: every job's
   * state is in the store, so nothing is lost by waiting for it to return.
   */
  async run(): Promise<void> {
    const { orphans, naps, log } = this.parts;
    let adopted = false;
    let failures = 0;
    while (!this.parts.stopping()) {
      try {
        if (!adopted) {
          await orphans.adopt();
          adopted = true;
        }
        await this.iteration();
        failures = 0;
      } catch (error) {
        if (this.parts.stopping()) break;
        failures++;
        const retryInMs = fullJitterBackoffMs(failures, { baseMs: 500, capMs: 30_000 });
        log.error({ err: error instanceof Error ? error.message : String(error), failures, retryInMs }, "engine step failed; retrying");
        await naps.nap(retryInMs);
      }
    }
  }

  private async iteration(): Promise<void> {
    const { naps, halts, settlements, deliveries } = this.parts;
    naps.clearWake();
    const skip = await halts.skippedProviders();
    const tickAt = this.parts.clock.now();
    await this.tick(skip, tickAt);
    if (this.parts.stopping()) return;
    // A tick that reached all due work (started or waiting for a slot) is followed by a nap; one cut short is not.
    const napped = !naps.tickCut && !naps.woken && (await naps.napUntilDue(skip, tickAt));
    if (napped) {
      // Settlements that came due meanwhile are read at once.
      settlements.readSoon();
      deliveries.readSoon();
    } else {
      // An embedded store answers without I/O: without this, steps that keep finding work would run
      // as one chain of microtasks, and no provider's answer (or signal, or timer) would ever be read.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.iterations++;
  }

  /**
   * One pass: adopt orphans now and then, renew leases, claim and submit,
   * poll what is due at `now`. Cuts the tick (see `Naps.cutTick`) when a page
   * or in-flight limit left due work unread.
   */
  private async tick(skip: ProviderId[], now: number): Promise<void> {
    const { store, owner, leaseMs, naps, steps, owned, claims, fullPools, deliveries, settlements, orphans } = this.parts;
    fullPools.refresh();
    steps.tickBegins();
    naps.tickBegins();
    owned.pollKnownDue(now);
    if (orphans.due(now)) await orphans.adopt();
    if (now - this.lastRenewAt >= leaseMs / 3) {
      this.lastRenewAt = now;
      await store.renewLeases(owner, now + leaseMs);
    }
    if (now - this.lastRecoveryAt >= 10_000) {
      this.lastRecoveryAt = now;
      await recoverSlots(store, now);
    }
    if (now - this.lastDeadlineLookAt >= DEADLINE_LOOK_EVERY_MS) {
      this.lastDeadlineLookAt = now;
      // Before the claims: a job past its deadline is not sent.
      await this.parts.deadlines(now);
    }
    await claims.claimDue(skip, now);
    if (deliveries.readDue(now) && !this.parts.stopping()) await deliveries.claimDue(now);
    if (settlements.readDue(now)) await settlements.startDue(now);
    if (owned.readNeeded(now)) await owned.readDue(now);
  }
}

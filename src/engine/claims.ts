import type { Job } from "../core/job.js";
import { LOCAL_TENANT } from "../core/tenant.js";
import { formatMicroUsd } from "../core/money.js";
import { PROVIDER_IDS, type ProviderId } from "../providers/adapter.js";
import type { ClaimInstead, JobScope, QueueOrder, Store } from "../store/store.js";
import { type EngineContext, limitsOf } from "./context.js";
import type { StepsInFlight } from "./in-flight.js";
import type { Naps } from "./naps.js";
import type { ProviderCalls } from "./provider-calls.js";
import type { FullPools } from "./slots.js";
import { submitJob } from "./submit.js";

/** A job held back by its budget is looked at again this often: a charge below its estimate, or a refused submit, frees room. */
const BUDGET_RECHECK_MS = 5_000;
/** Queued jobs read per page, and pages at most per tick: jobs behind 128 blocked ones wait for the next tick. */
const QUEUE_PAGE = 16;
const QUEUE_PAGES = 8;

/** What the loop's claims work with. */
export interface ClaimParts {
  store: Store;
  owner: string;
  leaseMs: number;
  /** See `EngineOptions.idleTickMs`. */
  idleTickMs: number;
  maxInFlight: number;
  context: EngineContext;
  calls: ProviderCalls;
  steps: StepsInFlight;
  fullPools: FullPools;
  naps: Naps;
  scope(): JobScope | null;
  /** See `EngineOptions.queueOrder`. */
  queueOrder: QueueOrder;
  stopping(): boolean;
  /** Tells listeners that a job changed (the engine's `job` event). */
  emit(job: Job): void;
}

/**
 * The queue as the loop reads and claims it: due jobs a small page at a time,
 * each claimed with its slots and sent, held back for a full pool, or sent
 * back with the reason it waits (its provider not configured, its budget).
 */
export class Claims {
  /**
   * Providers whose due queue was last read empty, and until when that is
   * trusted: an idle tick, as long as an idle engine takes to see a job
   * another process queued without a nudge. A queued job coming due (see
   * `Naps.napUntilDue`), a nudge, or a job queued here ends it sooner.
   */
  private readonly emptyQueues = new Map<ProviderId, number>();
  /** The store's `slotReleases` at the last queue read: a page holds about as many jobs as slots freed since. */
  private releasesAtQueueRead: number | null = null;

  constructor(private readonly parts: ClaimParts) {}

  /** A job is back in this provider's queue: the queue is worth reading. */
  queued(provider: ProviderId): void {
    this.emptyQueues.delete(provider);
  }

  /** Every queue may hold due work now (a word from outside, a queued job's due time reached). */
  forgetEmptyQueues(): void {
    this.emptyQueues.clear();
  }

  /** Claims and sends the queued jobs due by `now` that can be sent, but those of the `skip` providers. */
  async claimDue(skip: ProviderId[], now: number): Promise<void> {
    const { store, owner, leaseMs, maxInFlight, context, calls, steps, fullPools, naps } = this.parts;
    const unavailable = new Map<ProviderId, string | null>();
    // The queue is read a small page at a time, and only while claims succeed: a provider whose slots are
    // all taken costs one page per tick, however long its queue (the heads of the other providers' queues
    // are in every page).
    // A page holds about as many jobs as slots were freed since the last read, and one more: each job read is a whole
    // row (its request among 44 columns), and one read beyond what can be claimed is read again by the next tick.
    let after: { nextAttemptAt: number; id: string } | null = null;
    const freed = this.releasesAtQueueRead === null ? QUEUE_PAGE : store.slotReleases - this.releasesAtQueueRead;
    const pageSize = Math.min(QUEUE_PAGE, Math.max(2, freed + 1));
    let queueRead = false;
    for (let page = 0; page < QUEUE_PAGES && !this.parts.stopping() && steps.size < maxInFlight; page++) {
      this.releasesAtQueueRead = store.slotReleases;
      const queueSkip = [...new Set([...skip, ...fullPools.blockedProviders(), ...this.trustedEmptyQueues(now)])];
      const queued = await store.dueQueued(now, pageSize, queueSkip, this.parts.scope(), after, this.parts.queueOrder);
      if (queued.length < pageSize) {
        // Every provider read has fewer due jobs than the page: those with none are not read again for a while.
        const present = new Set(queued.map((job) => job.provider));
        for (const provider of PROVIDER_IDS) if (!queueSkip.includes(provider) && !present.has(provider)) this.emptyQueues.set(provider, now + this.parts.idleTickMs);
      }
      let claimed = false;
      const heldBack = new Set<ProviderId>();
      for (const job of queued) {
        if (this.parts.stopping()) break;
        if (steps.size >= maxInFlight) {
          naps.cutTick();
          break;
        }
        if (steps.busy(job.id)) continue;
        if (!unavailable.has(job.provider)) unavailable.set(job.provider, calls.unavailableReason(job.provider));
        const reason = unavailable.get(job.provider);
        if (reason) {
          await store.updateJob(job.id, { state: "queued" }, { reason, nextAttemptAt: now + 5_000 }, now);
          naps.othersMoved();
          continue;
        }
        const pools = limitsOf(context, job).slotPools;
        if (fullPools.knownFull(pools)) {
          heldBack.add(job.provider);
          continue;
        }
        const claim = await store.claimForSubmit(job.id, owner, pools, now, leaseMs, this.claimInstead(job, unavailable));
        const refusedInstead = (claim.kind === "no_slot" || claim.kind === "over_budget") && claim.instead === true;
        if (claim.kind === "gone") calls.countersFor(job.provider).claimsLost++;
        if (refusedInstead) {
          // Taken by another engine, and the job considered in its place could not be sent now (the pool is full, as
          // it is for a single engine that finds no slot; or its budget): what is learned of the pool is kept.
          if (claim.kind === "no_slot") {
            heldBack.add(job.provider);
            fullPools.add(claim.poolKey);
          }
          continue;
        }
        if (claim.kind === "claimed") {
          calls.countersFor(job.provider).claims++;
          claimed = true;
          if (claim.filled.length > 0) {
            // It took a pool's last free slot: the next job needing that pool is held back as if its claim had found
            // none (a claim that could only fail is not made, and the queue is not read further for it).
            heldBack.add(job.provider);
            for (const key of claim.filled) fullPools.add(key);
          }
          this.parts.emit(claim.job);
          // Claimed in place of a job taken first, it may be one whose step here has just put it back in the queue
          // (the store chose it, not this engine): it is sent once that step has ended.
          const ending = steps.running(claim.job.id);
          steps.spawn(claim.job, async () => {
            await ending?.catch(() => undefined);
            await submitJob(context, claim.job);
          }, true);
        } else if (claim.kind === "over_budget") {
          const { budget } = claim;
          const more = Math.max(0, (job.estimateMicroUsd ?? 0) - job.budgetHeldMicroUsd);
          const reason = `over budget: sending it would commit ${formatMicroUsd(budget.committedMicroUsd + more)} of the ${formatMicroUsd(budget.ceilingMicroUsd)} budget; not sent`;
          if (job.tenant !== LOCAL_TENANT) {
            // An API token's job was admitted with its estimate reserved, so only charges above their estimates took
            // its budget over the ceiling: nothing the token can do lets it be sent, and it must not wait for ever.
            const ended = await store.transition(
              job.id,
              { state: "queued" },
              "failed",
              { reason, error: { code: "budget_exhausted", message: `${reason}: charges above their estimates used what was reserved for it; nothing was charged for it` } },
              reason,
              now,
            );
            naps.othersMoved();
            if (ended) this.parts.emit(ended);
            continue;
          }
          // A command's (or the library's) job waits: running the command again with a higher --budget-usd sends it.
          const updated = await store.updateJob(job.id, { state: "queued" }, { reason, blockedCode: "over_budget", nextAttemptAt: now + BUDGET_RECHECK_MS }, now);
          naps.othersMoved();
          if (updated && job.reason !== reason) this.parts.emit(updated);
        } else if (claim.kind === "no_slot") {
          heldBack.add(job.provider);
          fullPools.add(claim.poolKey);
          const waiting = `waiting for a slot (${claim.poolKey})`;
          if (job.reason !== waiting || claim.retryAt !== null) {
            await store.updateJob(job.id, { state: "queued" }, { reason: waiting, ...(claim.retryAt !== null ? { nextAttemptAt: claim.retryAt } : {}) }, now);
            naps.othersMoved();
          }
        }
      }
      // A provider with a job held back by a full pool is not read again until a slot is released (or a
      // second passes): its next jobs would mostly wait for the same pool. Only the others are read on.
      for (const provider of heldBack) fullPools.block(provider);
      if (!claimed || queued.length < pageSize || heldBack.size > 0) {
        queueRead = true;
        break;
      }
      const last = queued[queued.length - 1]!;
      after = { nextAttemptAt: last.nextAttemptAt, id: last.id };
    }
    // Ended by its page count with claims still succeeding: more may be due.
    if (!queueRead) naps.cutTick();
  }

  /** Providers whose due queue was read empty less than an idle tick ago (expired entries dropped). */
  private trustedEmptyQueues(now: number): ProviderId[] {
    const empty: ProviderId[] = [];
    for (const [provider, until] of this.emptyQueues) {
      if (until > now) empty.push(provider);
      else this.emptyQueues.delete(provider);
    }
    return empty;
  }

  /**
   * What a claim may take when its job was taken by another engine first: the next due job of the
   * same provider's queue (in this engine's batch, if it has one), if this engine would send it now.
   * A command that follows only its own few jobs claims nothing else.
   */
  private claimInstead(asked: Job, unavailable: Map<ProviderId, string | null>): ClaimInstead | undefined {
    const { provider } = asked;
    const scope = this.parts.scope();
    if (scope && "jobIds" in scope) return undefined;
    if (unavailable.get(provider)) return undefined;
    return {
      provider,
      scope,
      sameAs: { model: asked.model, operation: asked.operation },
      poolsOf: (candidate) => {
        if (this.parts.steps.busy(candidate.id)) return null;
        const pools = limitsOf(this.parts.context, candidate).slotPools;
        return this.parts.fullPools.knownFull(pools) ? null : pools;
      },
    };
  }
}

import type { Clock } from "../core/clock.js";
import type { ProviderId } from "../providers/adapter.js";
import type { SlotPoolRequest, Store } from "../store/store.js";

/** A pool found full is not asked again until this store releases a slot, or this long has passed (another engine freed one). */
const FULL_POOL_RECHECK_MS = 1_000;
/** A pool that learned a capacity below its configured one (a provider pushed back) is raised a slot after this long quiet. */
const SLOT_RECOVERY_QUIET_MS = 30_000;

/**
 * The slot pools the loop's claims found full since a slot was last released,
 * and the providers whose queue they held back: a claim that could only fail
 * is not made, and the queue is not read further for it.
 */
export class FullPools {
  /** Slot pools a claim found full since `since` (see `FULL_POOL_RECHECK_MS`). */
  private readonly keys = new Set<string>();
  private since = 0;
  /** The store's `slotReleases` when `keys` was last cleared. */
  private releases = -1;
  /**
   * Providers whose queue head was all held back by full pools: their queue
   * is not read again until `keys` is cleared (the head would be the same).
   */
  private readonly blocked = new Set<ProviderId>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** At the start of each tick: forgets what a released slot may have changed. */
  refresh(): void {
    // A slot released through this store (at once) or anywhere (after a while): full pools are asked again.
    if (this.store.slotReleases !== this.releases || this.clock.now() - this.since >= FULL_POOL_RECHECK_MS) {
      this.keys.clear();
      this.blocked.clear();
      this.since = this.clock.now();
      this.releases = this.store.slotReleases;
    }
  }

  /** A claim found this pool full, or took its last free slot. */
  add(poolKey: string): void {
    this.keys.add(poolKey);
  }

  /** Whether one of these pools was found full since a slot was last released. */
  knownFull(pools: readonly SlotPoolRequest[]): boolean {
    return pools.some((pool) => this.keys.has(pool.key));
  }

  /** A job of this provider was held back by a full pool: its queue is not read again until a slot is released. */
  block(provider: ProviderId): void {
    this.blocked.add(provider);
  }

  blockedProviders(): ProviderId[] {
    return [...this.blocked];
  }
}

/** Raises the learned capacity of pools a provider pushed back on, a slot at a time, once they have been quiet. */
export async function recoverSlots(store: Store, now: number): Promise<void> {
  for (const pool of await store.poolStatus()) {
    if (pool.learnedCapacity < pool.configuredCapacity && pool.blockedUntil + SLOT_RECOVERY_QUIET_MS <= now) {
      await store.slotRecover(pool.key, now);
    }
  }
}

import { PROVIDER_IDS, type ProviderId } from "../providers/adapter.js";
import type { ProviderEntry } from "../providers/registry.js";
import type { JobScope, Store } from "../store/store.js";
import type { EngineContext } from "./context.js";
import type { StepsInFlight } from "./in-flight.js";
import type { Naps } from "./naps.js";
import { settleJob } from "./settle.js";

/** Finished jobs whose charge settles later are looked for at most this often while the loop is busy. */
const SETTLEMENT_READ_EVERY_MS = 500;
/** Charges due for a read taken per tick. */
const SETTLEMENT_PAGE = 64;

/** Whether a configured provider settles charges after the end (B): otherwise no settlement is ever read. */
export function chargesSettleLater(providers: Map<ProviderId, ProviderEntry>): boolean {
  return PROVIDER_IDS.some((provider) => {
    const entry = providers.get(provider);
    return entry?.adapter?.settle !== undefined && entry.missing.length === 0;
  });
}

/** What the loop's settlement reads work with. */
export interface SettlementParts {
  store: Store;
  /** See `chargesSettleLater`. */
  settles: boolean;
  context: EngineContext;
  steps: StepsInFlight;
  naps: Naps;
  scope(): JobScope | null;
  stopping(): boolean;
}

/** When the loop looks for finished jobs whose charge is due for a read, and starts those reads. */
export class SettlementReads {
  private lastReadAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly parts: SettlementParts) {}

  /** Settlements that came due during a nap are read at once after it. */
  readSoon(): void {
    this.lastReadAt = Number.NEGATIVE_INFINITY;
  }

  /** Whether the tick at `now` looks for charges due: a configured provider settles later, and it has not looked lately. */
  readDue(now: number): boolean {
    return this.parts.settles && now - this.lastReadAt >= SETTLEMENT_READ_EVERY_MS;
  }

  /** Reads the charges due by `now` and starts a read of each at its provider. */
  async startDue(now: number): Promise<void> {
    const { store, context, steps, naps } = this.parts;
    this.lastReadAt = now;
    const settling = await store.dueSettlements(now, SETTLEMENT_PAGE, this.parts.scope());
    if (settling.length === SETTLEMENT_PAGE) naps.cutTick();
    for (const job of settling) {
      if (this.parts.stopping() || steps.busy(job.id)) continue;
      steps.spawn(job, () => settleJob(context, job), false);
    }
  }
}

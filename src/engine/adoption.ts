import type { Clock } from "../core/clock.js";
import type { Job } from "../core/job.js";
import type { JobScope, Store } from "../store/store.js";
import type { EngineContext } from "./context.js";
import type { StepsInFlight } from "./in-flight.js";
import type { EngineLogger } from "./logger.js";
import { isDeadOwner } from "./owner.js";
import { recoverInterruptedSubmit } from "./submit.js";

const ADOPT_EVERY_MS = 5_000;

/** What adopting orphans works with. */
export interface AdoptionParts {
  store: Store;
  clock: Clock;
  owner: string;
  leaseMs: number;
  log: EngineLogger;
  context: EngineContext;
  steps: StepsInFlight;
  scope(): JobScope | null;
  stopping(): boolean;
  /** A job adopted, as the store handed it over (see `OwnedJobs.note`). */
  note(job: Job): void;
}

/**
 * Jobs no engine works on that this one takes: those whose engine stopped
 * (its lease lapsed, or its process is gone from this host), at the start and
 * every few seconds, and claims of its own whose answer was lost.
 */
export class OrphanAdoption {
  private lastAdoptAt = 0;

  constructor(private readonly parts: AdoptionParts) {}

  /** Whether the tick at `now` looks for orphans again. */
  due(now: number): boolean {
    return now - this.lastAdoptAt >= ADOPT_EVERY_MS;
  }

  async adopt(): Promise<void> {
    const { store, log, context, steps } = this.parts;
    const now = this.parts.clock.now();
    this.lastAdoptAt = now;
    const adopted = await store.adoptOrphans(this.parts.owner, now, this.parts.leaseMs, isDeadOwner, this.parts.scope());
    for (const job of adopted) {
      this.parts.note(job);
      log.info({ jobId: job.id, state: job.state }, "resuming a job left by a stopped engine");
      if (job.state === "submitting") steps.spawn(job, () => recoverInterruptedSubmit(context, job), true);
    }
    // A claim whose commit succeeded while its answer was lost (the store's connection cut at that moment)
    // leaves a job `submitting` under this engine's own lease that nothing here works on; renewing the lease
    // would keep every other engine off it for ever. Submitting jobs are few (bounded by the slots).
    if (this.parts.stopping()) return;
    const stranded = (await store.listJobs({ states: ["submitting"] })).filter((job) => job.leaseOwner === this.parts.owner && !steps.has(job.id));
    for (const job of stranded) {
      log.warn({ jobId: job.id }, "recovering a claim whose answer was lost");
      steps.spawn(job, () => recoverInterruptedSubmit(context, job), true);
    }
  }
}

import type { Job } from "../core/job.js";
import type { Store } from "../store/store.js";
import type { EngineLogger } from "./logger.js";

/** What the steps in flight tell the rest of the engine. */
export interface StepHooks {
  store: Store;
  log: EngineLogger;
  /** Aborted when the engine stops or gives up: a step failing then is not logged. */
  signal: AbortSignal;
  /** A step failed: what it wrote before is not known here (see `OwnedJobs.stepFailed`). */
  failed(jobId: string): void;
  /** A step ended; `freedSomething` when it failed or a slot was released meanwhile (see `Naps.stepEnded`). */
  ended(freedSomething: boolean): void;
}

/** The steps this engine runs now (a job's submit, poll, download or settlement read), one a job at most. */
export class StepsInFlight {
  private readonly tasks = new Map<string, Promise<void>>();
  private readonly submitting = new Set<string>();
  /**
   * Jobs whose task ended during the current tick. The rows a tick read
   * before that end are stale (a capture's failure count, a due time now in
   * the future): starting the job from them would repeat a step, a download
   * or a read, so it waits for the next tick's fresh read.
   */
  private readonly endedThisTick = new Set<string>();
  /** The jobs `busy` here, as the store's reads take them. */
  readonly busyIds = { has: (id: string) => this.busy(id) };

  constructor(private readonly hooks: StepHooks) {}

  get size(): number {
    return this.tasks.size;
  }

  has(jobId: string): boolean {
    return this.tasks.has(jobId);
  }

  /** The step this engine runs for the job now, if any. */
  running(jobId: string): Promise<void> | undefined {
    return this.tasks.get(jobId);
  }

  /** Being worked on here, or ended since this tick read its rows (see `endedThisTick`). */
  busy(jobId: string): boolean {
    return this.tasks.has(jobId) || this.endedThisTick.has(jobId);
  }

  /** A tick begins: the rows it reads are fresh. */
  tickBegins(): void {
    this.endedThisTick.clear();
  }

  /** The submits in flight (a stop lets them record their answer before it aborts the rest). */
  submits(): Array<Promise<void> | undefined> {
    return [...this.submitting].map((id) => this.tasks.get(id));
  }

  all(): Array<Promise<void>> {
    return [...this.tasks.values()];
  }

  spawn(job: Job, work: () => Promise<void>, isSubmit: boolean): void {
    if (isSubmit) this.submitting.add(job.id);
    const releasesAtStart = this.hooks.store.slotReleases;
    let failed = false;
    const task = work()
      .catch((error: unknown) => {
        failed = true;
        // What the step wrote before it failed is not known here: the store says where its job is (the row kept here
        // still times the nap, but is not polled from).
        this.hooks.failed(job.id);
        if (this.hooks.signal.aborted) return;
        this.hooks.log.error({ jobId: job.id, err: error instanceof Error ? error.message : String(error) }, "job step failed unexpectedly");
      })
      .finally(() => {
        this.endedThisTick.add(job.id);
        // A step spawned for the job after this one (see the claim in `Claims.claimDue`) is the job's now.
        if (this.tasks.get(job.id) === task) {
          this.tasks.delete(job.id);
          this.submitting.delete(job.id);
        }
        this.hooks.ended(failed || this.hooks.store.slotReleases !== releasesAtStart);
      });
    this.tasks.set(job.id, task);
  }
}

import type { Job } from "../../core/job.js";
import type { Engine } from "../../engine/engine.js";
import type { EngineLogger } from "../../engine/logger.js";
import { JOB_PAGE } from "../../engine/wait.js";
import type { JobBrief, Store } from "../../store/store.js";
import { canSee, scopeOf, type Caller } from "../../app/caller.js";

/** How often changes made by other processes (a worker, `mediagate cancel`, the API's inserts) are looked for. */
export const FOLLOW_EVERY_MS = 1_500;
/** Changes are read again this far back, for writers whose clocks run a little behind ours. */
const FOLLOW_OVERLAP_MS = 2_000;
/** Briefs read per statement; a look that fills it reads on. */
const FOLLOW_PAGE = 500;
/** New jobs read per look and scope: more in one look than a table shows is not followed one by one. */
const NEW_JOBS_PAGE = 50;

/** One open view: the jobs it follows, and where their changes go. */
export interface FeedSubscriber {
  readonly caller: Caller;
  /** Jobs followed for changes made anywhere (the rows shown, the job open). */
  readonly ids: ReadonlySet<string>;
  /** A view that new jobs join (the table's first page) when `shows` them. */
  readonly wantsNew: boolean;
  shows(job: Job): boolean;
  /** A job changed (or was created); the subscriber drops what it has seen already. */
  deliver(job: Job): void;
  /** A view of one batch (its page): told that some job of it changed, not which (it draws the batch's counts again). */
  readonly batchId?: string;
  batchChanged?(): void;
}

/**
 * Job changes for the dashboard's open views, from the engine of this
 * process as they happen, and from the store for changes made by other
 * processes: every FOLLOW_EVERY_MS while anyone watches, the followed jobs'
 * changes since the last look (by id, on the primary key) and the jobs
 * created since (on the creation index, a page per token watching). Each
 * view only gets jobs its caller may see.
 */
export class JobFeed {
  private readonly subscribers = new Set<FeedSubscriber>();
  private timer: NodeJS.Timeout | null = null;
  private since = 0;
  private looking = false;
  private readonly onJob = (job: Job) => this.dispatch(this.subscribers, [job]);

  constructor(
    private readonly deps: {
      engine: Engine;
      store: () => Promise<Store>;
      log: EngineLogger;
      now?: () => number;
      followEveryMs?: number;
    },
  ) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  get watching(): number {
    return this.subscribers.size;
  }

  subscribe(subscriber: FeedSubscriber): () => void {
    this.subscribers.add(subscriber);
    if (this.subscribers.size === 1) this.start();
    return () => {
      this.subscribers.delete(subscriber);
      if (this.subscribers.size === 0) this.stop();
    };
  }

  /** Sends one view what changed since `since` (what a page drawn then, or a stream reconnecting, missed). */
  async catchUp(subscriber: FeedSubscriber, since: number): Promise<void> {
    this.dispatch([subscriber], await this.changedSince([subscriber], since));
    this.tellBatches([subscriber], await this.changedBatches([subscriber], since));
  }

  close(): void {
    this.subscribers.clear();
    this.stop();
  }

  private start(): void {
    this.since = this.now();
    this.deps.engine.on("job", this.onJob);
    this.timer = setInterval(() => void this.look(), this.deps.followEveryMs ?? FOLLOW_EVERY_MS);
    this.timer.unref();
  }

  private stop(): void {
    this.deps.engine.off("job", this.onJob);
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private dispatch(subscribers: Iterable<FeedSubscriber>, jobs: readonly Job[]): void {
    for (const subscriber of subscribers) {
      for (const job of jobs) {
        if (!canSee(subscriber.caller, job)) continue;
        if (subscriber.ids.has(job.id) || (subscriber.wantsNew && subscriber.shows(job))) subscriber.deliver(job);
      }
    }
    const batches = new Set(jobs.flatMap((job) => (job.batchId === null ? [] : [job.batchId])));
    if (batches.size > 0) this.tellBatches(subscribers, batches);
  }

  private tellBatches(subscribers: Iterable<FeedSubscriber>, batches: ReadonlySet<string>): void {
    for (const subscriber of subscribers) if (subscriber.batchId !== undefined && batches.has(subscriber.batchId)) subscriber.batchChanged?.();
  }

  /**
   * The batches watched whose jobs changed at or after `since` (by another
   * process too): one brief per batch, from jobs_batch_updated, enough to
   * know that its counts are to be drawn again; never its jobs.
   */
  private async changedBatches(subscribers: readonly FeedSubscriber[], since: number): Promise<Set<string>> {
    const watched = new Set(subscribers.flatMap((subscriber) => (subscriber.batchId === undefined ? [] : [subscriber.batchId])));
    const changed = new Set<string>();
    if (watched.size === 0) return changed;
    const store = await this.deps.store();
    for (const batchId of watched) {
      if ((await store.changedBriefs({ batchId }, since - FOLLOW_OVERLAP_MS, 1)).length > 0) changed.add(batchId);
    }
    return changed;
  }

  private async look(): Promise<void> {
    if (this.looking || this.subscribers.size === 0) return;
    this.looking = true;
    const startedAt = this.now();
    try {
      const jobs = await this.changedSince([...this.subscribers], this.since);
      const batches = await this.changedBatches([...this.subscribers], this.since);
      this.since = startedAt;
      this.dispatch(this.subscribers, jobs);
      this.tellBatches(this.subscribers, batches);
    } catch (error) {
      // The next look starts from the same moment: nothing is skipped while the store is away.
      this.deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, "dashboard: could not read job changes; looking again");
    } finally {
      this.looking = false;
    }
  }

  /** The jobs these views follow that changed at or after `since`, and the jobs created since that they may show; earliest change first. */
  private async changedSince(subscribers: readonly FeedSubscriber[], since: number): Promise<Job[]> {
    const store = await this.deps.store();
    const from = since - FOLLOW_OVERLAP_MS;
    const found = new Map<string, Job>();
    // Admins see every new job; a tenant its own: one bounded read per scope, whoever else watches the same.
    const scopes = new Map<string, string | undefined>();
    for (const subscriber of subscribers) {
      if (!subscriber.wantsNew) continue;
      const tenant = scopeOf(subscriber.caller);
      scopes.set(tenant ?? "*", tenant);
    }
    for (const tenant of scopes.values()) {
      for (const job of await store.listJobs({ createdAfter: from, newestFirst: true, limit: NEW_JOBS_PAGE, ...(tenant !== undefined ? { tenant } : {}) })) found.set(job.id, job);
    }
    const ids = new Set<string>();
    for (const subscriber of subscribers) for (const id of subscriber.ids) ids.add(id);
    const changed: string[] = [];
    if (ids.size > 0) {
      const scope = { jobIds: [...ids] };
      let after: JobBrief | null = null;
      for (;;) {
        const briefs: JobBrief[] = await store.changedBriefs(scope, from, FOLLOW_PAGE, after);
        for (const brief of briefs) if (!found.has(brief.id)) changed.push(brief.id);
        if (briefs.length < FOLLOW_PAGE) break;
        after = briefs.at(-1)!;
      }
    }
    for (let start = 0; start < changed.length; start += JOB_PAGE) {
      for (const job of await store.listJobs({ ids: changed.slice(start, start + JOB_PAGE) })) found.set(job.id, job);
    }
    return [...found.values()].sort((left, right) => left.updatedAt - right.updatedAt);
  }
}

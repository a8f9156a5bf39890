import { EventEmitter, setMaxListeners } from "node:events";
import { DEFAULT_FALLBACK_AFTER_MS } from "../core/config.js";
import { type Clock, systemClock } from "../core/clock.js";
import type { Job } from "../core/job.js";
import type { JobTracer } from "../core/tracing.js";
import { PRIVATE_URLS_WARNING } from "../core/url-safety.js";
import type { CallContext, ProviderId, ProviderStatus } from "../providers/adapter.js";
import type { ProviderEntry } from "../providers/registry.js";
import type { JobScope, QueueOrder, Store } from "../store/store.js";
import { defaultOutputs } from "../outputs/by-location.js";
import { type OutputWriter, rememberingFolderChecks } from "../outputs/local-folder.js";
import { OrphanAdoption } from "./adoption.js";
import { Claims } from "./claims.js";
import type { EngineContext, ProviderCounters, StepTiming } from "./context.js";
import { Deliveries } from "./deliveries.js";
import { HaltedProviders } from "./halts.js";
import { StepsInFlight } from "./in-flight.js";
import { observingJobWrites } from "./job-writes.js";
import { type EngineLogger, silentLogger } from "./logger.js";
import { cancelPastDeadline } from "./deadlines.js";
import { EngineLoop } from "./loop.js";
import { Naps } from "./naps.js";
import type { NotifierOptions } from "./notify.js";
import { OwnedJobs } from "./owned.js";
import { newOwnerName } from "./owner.js";
import { PollScheduler } from "./polling.js";
import { ProviderCalls } from "./provider-calls.js";
import { chargesSettleLater, SettlementReads } from "./settlement-reads.js";
import { FullPools } from "./slots.js";

export interface EngineOptions {
  store: Store;
  providers: Map<ProviderId, ProviderEntry>;
  secrets: () => string[];
  clock?: Clock;
  owner?: string;
  /** How long a claim lasts without renewal (default 30 s). */
  leaseMs?: number;
  allowPrivateUrls?: boolean;
  log?: EngineLogger;
  /** Jobs worked on at once by this engine (default 256). */
  maxInFlight?: number;
  /**
   * MEDIAGATE_PUBLIC_URL: the base where `mediagate serve` is reachable.
   * When set, adapters with webhooks get `{publicUrl}/webhooks/{provider}/{jobId}` as the job's callback.
   */
  publicUrl?: string | null;
  /** Poll every job at this fixed pace (within each provider's bounds) instead of near its learned finish. */
  fixedPollIntervalMs?: number;
  /** The longest the loop naps without looking at the store (default 500 ms): how soon it sees work another process left without announcing it. */
  idleTickMs?: number;
  /**
   * Work only on these jobs (a CLI command's own job or batch): claim,
   * adopt and settle nothing else. Without it (`worker`, `serve`) the engine
   * works on every job in the store.
   */
  scope?: JobScope | null;
  /** Where result bytes are written (default: each job's location, a local folder or an `s3://bucket/prefix`). */
  outputs?: OutputWriter;
  /** MEDIAGATE_FALLBACK_AFTER_S: a routed job whose target keeps failing before accepting this long moves to the next target (default 60 s). */
  fallbackAfterMs?: number;
  /**
   * Deliver the notifications jobs owe (issue 12): any engine on the store
   * may, one attempt at a time each. One that works on every job (`worker`,
   * `serve`, the library) delivers them all; a command's engine (`batch`,
   * `generate`) its own jobs' while it runs, and what is still owed when it
   * ends is left to the next engine that works on every job.
   */
  notifications?: NotifierOptions;
  /**
   * The order the whole store's queue is claimed in: `fair` between tenants (default) or `arrival`, oldest first,
   * which only `bench/fair-share.ts` asks for, to measure what fairness costs.
   */
  queueOrder?: QueueOrder;
  /** Traces exported (OTEL_EXPORTER_OTLP_ENDPOINT): provider requests of traced jobs get spans. Null or absent: off. */
  tracer?: JobTracer | null;
}

/** The longest the loop sleeps without looking at the store (new jobs from other processes), unless told otherwise. */
const IDLE_TICK_MS = 500;

/**
 * The engine loop: claim → submit → track → capture. Knows nothing
 * provider-specific: adapters say what a request needs (slots, rate windows,
 * polling pace) and what an answer means.
 */
export class Engine extends EventEmitter<{ job: [Job]; idle: []; step: [StepTiming] }> {
  readonly owner: string;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly log: EngineLogger;
  private readonly polls: PollScheduler;
  private readonly calls: ProviderCalls;
  private readonly naps: Naps;
  private readonly steps: StepsInFlight;
  private readonly owned: OwnedJobs;
  private readonly claims: Claims;
  private readonly halts: HaltedProviders;
  private readonly deliveries: Deliveries;
  private readonly loop: EngineLoop;
  private readonly knownStatuses = new Map<string, ProviderStatus>();
  private readonly abortController = new AbortController();
  private readonly stopWaiting = new AbortController();
  private stopListening: () => void = () => undefined;
  private listening = false;
  private stopping = false;
  private givenUp = false;
  private loopDone: Promise<void> | null = null;
  private scope: JobScope | null;

  constructor(private readonly options: EngineOptions) {
    super();
    const store = options.store;
    const clock = options.clock ?? systemClock;
    const owner = options.owner ?? newOwnerName();
    const leaseMs = options.leaseMs ?? 30_000;
    const log = options.log ?? silentLogger;
    const maxInFlight = options.maxInFlight ?? 256;
    const idleTickMs = options.idleTickMs ?? IDLE_TICK_MS;
    this.store = store;
    this.clock = clock;
    this.owner = owner;
    this.log = log;
    this.scope = options.scope ?? null;
    // Every waiting job (rate tokens, backoff) listens to this signal; hundreds at once are expected.
    setMaxListeners(0, this.abortController.signal);
    setMaxListeners(0, this.stopWaiting.signal);
    const signal = this.abortController.signal;
    const scope = () => this.scope;
    const stopping = () => this.stopping;
    const settles = chargesSettleLater(options.providers);
    this.polls = new PollScheduler(store, options.fixedPollIntervalMs ?? null);
    this.calls = new ProviderCalls({
      store,
      clock,
      owner,
      providers: options.providers,
      secrets: options.secrets,
      allowPrivateUrls: options.allowPrivateUrls ?? false,
      publicUrl: options.publicUrl ?? null,
      signal,
      stopWaiting: this.stopWaiting.signal,
      tracer: options.tracer ?? null,
    });
    this.naps = new Naps({
      store,
      clock,
      idleTickMs,
      scope,
      settles,
      delivers: () => this.delivers(),
      stopping,
      nextOwnedDue: (after) => this.owned.nextDue(after),
      napping: () => {
        if (this.steps.size === 0) this.emit("idle");
      },
      queuedDue: () => this.claims.forgetEmptyQueues(),
    });
    const naps = this.naps;
    this.steps = new StepsInFlight({ store, log, signal, failed: (jobId) => this.owned.stepFailed(jobId), ended: (freedSomething) => naps.stepEnded(freedSomething) });
    const steps = this.steps;
    const context: EngineContext = {
      store: observingJobWrites(store, (job) => this.owned.note(job)),
      clock,
      owner,
      leaseMs,
      log,
      polls: this.polls,
      outputs: rememberingFolderChecks(options.outputs ?? defaultOutputs, () => clock.now()),
      adapter: (provider) => this.calls.adapter(provider),
      callContext: (job, request, callOptions) =>
        this.calls.callContext(job, request, callOptions?.rateLimited ?? true, callOptions?.step ?? (job.state === "submitting" ? "submit" : "poll")),
      counters: (provider) => this.calls.countersFor(provider),
      timed: async (provider, step, call) => {
        const startedAt = clock.now();
        let outcome: StepTiming["outcome"] = "error";
        try {
          const answer = await call();
          outcome = "ok";
          return answer;
        } finally {
          this.emit("step", { provider, step, outcome, ms: clock.now() - startedAt });
        }
      },
      fallbackAfterMs: options.fallbackAfterMs ?? DEFAULT_FALLBACK_AFTER_MS,
      emit: (job) => {
        // A job back in the queue (a submit that was not sent) makes its provider's queue worth reading.
        if (job.state === "queued") this.claims.queued(job.provider);
        this.emit("job", job);
      },
      wake: () => naps.wakeLoop(),
      haltsChanged: () => this.halts.written(),
      takeKnownStatus: (jobId) => {
        const status = this.knownStatuses.get(jobId);
        this.knownStatuses.delete(jobId);
        return status;
      },
      signal,
      stopWaiting: this.stopWaiting.signal,
      givenUp: () => this.givenUp,
    };
    this.owned = new OwnedJobs({
      store,
      owner,
      idleTickMs,
      maxInFlight,
      context,
      steps,
      naps,
      stopping,
      untracked: (job) => {
        // Back in the queue, or ended owing a notification or a charge to settle: other work's next due time moved.
        if (job.state === "queued" || this.delivers() || settles) naps.othersMoved();
      },
    });
    const fullPools = new FullPools(store, clock);
    this.claims = new Claims({ store, owner, leaseMs, idleTickMs, maxInFlight, context, calls: this.calls, steps, fullPools, naps, scope, queueOrder: options.queueOrder ?? "fair", stopping, emit: (job) => this.emit("job", job) });
    this.halts = new HaltedProviders({ store, clock, context, steps, scope });
    this.deliveries = new Deliveries({ store, clock, log, notifications: options.notifications, allowPrivateUrls: options.allowPrivateUrls ?? false, signal, naps, scope });
    const settlements = new SettlementReads({ store, settles, context, steps, naps, scope, stopping });
    const orphans = new OrphanAdoption({ store, clock, owner, leaseMs, log, context, steps, scope, stopping, note: (job) => this.owned.note(job) });
    const deadlines = (now: number) => cancelPastDeadline({ store, clock, log, scope, emit: (job) => this.emit("job", job) }, now);
    this.loop = new EngineLoop({ store, clock, owner, leaseMs, log, naps, steps, owned: this.owned, claims: this.claims, fullPools, halts: this.halts, deliveries: this.deliveries, settlements, orphans, deadlines, stopping });
  }

  /** Passes of the loop so far (see `EngineLoop.iterations`). */
  get iterations(): number {
    return this.loop.iterations;
  }

  /** The median render time learned for a provider and model (for progress estimates), or null. */
  expectedRenderMs(provider: ProviderId, model: string): Promise<number | null> {
    return this.polls.expectedRenderMs(provider, model);
  }

  /** Whether the loop runs: started and not stopping (`/readyz`). */
  get running(): boolean {
    return this.loopDone !== null && !this.stopping;
  }

  /** The tracer traced jobs' spans go to (the server's webhook spans too); null when traces are off. */
  get tracer(): JobTracer | null {
    return this.options.tracer ?? null;
  }

  /** Request and error counts per provider since this engine started. */
  stats(): Record<string, ProviderCounters> {
    return this.calls.stats();
  }

  /**
   * Limits this engine to one command's jobs. Only before it starts: a
   * running loop may already hold other jobs.
   */
  restrictTo(scope: JobScope): void {
    if (this.loopDone) throw new Error("an engine's scope is set before it starts");
    this.scope = scope;
  }

  /**
   * Makes the loop look at the store as soon as another process announces
   * work (PostgreSQL's LISTEN/NOTIFY: jobs queued, a webhook for a job this
   * engine owns), on a connection of its own. For engines that serve every
   * job of a store and stay up (`mediagate worker`, `serve`); a command that
   * works on its own jobs learns of them itself. Call before `start`.
   */
  listenForWork(): void {
    this.listening = true;
  }

  /** Starts the loop in the background. */
  start(): void {
    if (this.loopDone) return;
    // Another process queued jobs or received a webhook for one of ours: look now, not at the next idle tick.
    if (this.listening) this.stopListening = this.store.onWork(() => this.wake());
    if (this.options.allowPrivateUrls) this.log.warn({}, PRIVATE_URLS_WARNING);
    const notifier = this.options.notifications;
    if (this.delivers() && notifier && !notifier.secret && notifier.defaultUrl) {
      this.log.warn({}, "MEDIAGATE_NOTIFY_URL is set but MEDIAGATE_NOTIFY_SECRET is not: no notification is sent unsigned (each is given up, and the job's events say why)");
    }
    this.loopDone = this.loop.run().catch((error: unknown) => {
      this.log.error({ err: error instanceof Error ? error.message : String(error) }, "engine loop stopped by an error");
      throw error;
    });
  }

  /**
   * Stops claiming, lets submits in flight record their answer (aborting one
   * could turn it into an unknown submission), aborts polls and downloads,
   * and releases this engine's leases so another engine resumes at once.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopListening();
    // Submits still waiting for a rate token were never sent: they go back to the queue now.
    this.stopWaiting.abort(new Error("engine stopping"));
    this.wake();
    await this.loopDone?.catch(() => undefined);
    await Promise.allSettled(this.steps.submits());
    this.abortController.abort(new Error("engine stopping"));
    await Promise.allSettled([...this.steps.all(), ...this.deliveries.all()]);
    await this.store.releaseLeases(this.owner);
  }

  /**
   * A stop that could not finish (the store is not answering) was given up
   * on: polls and downloads are aborted (their jobs wait for the next
   * engine), and what still runs is a submit's answer waiting to be recorded. It goes
   * on trying while the process lives, so a store that comes back still gets
   * it (nothing paid is dropped on purpose), but it no longer keeps the
   * process alive; if the process ends first, the answer is in the error log
   * and the next engine settles the job from its idempotency key or marks it
   * unknown.
   */
  giveUp(): void {
    this.givenUp = true;
    // Polls, downloads and naps end now: the jobs stay where they are for the next engine.
    this.abortController.abort(new Error("engine stop given up"));
  }

  /**
   * A webhook said something about a running job: read it now rather than at
   * its next scheduled poll. `status` is given only when the delivery was
   * verified and may be trusted; it is then used instead of that read. A job
   * owned by another engine is picked up there at its next look at the store.
   */
  async nudge(job: Job, status?: ProviderStatus): Promise<boolean> {
    if (job.state !== "running") return false;
    const now = this.clock.now();
    const updated = await this.store.updateJob(job.id, { state: "running" }, { nextAttemptAt: now }, now);
    if (!updated) return false;
    this.owned.note(updated);
    if (status && updated.leaseOwner === this.owner) this.knownStatuses.set(job.id, status);
    // Another engine owns it: tell that engine's process (it reads the job at once rather than at its due time).
    if (updated.leaseOwner !== null && updated.leaseOwner !== this.owner) await this.store.announceWork().catch(() => undefined);
    this.wake();
    return true;
  }

  /** Every secret to redact: configured keys and what adapters hold now (tokens). */
  secrets(): string[] {
    return this.calls.secrets();
  }

  /** A call context for provider-level calls outside any job (webhook verification fetching keys, account reads). */
  providerContext(provider: ProviderId): Promise<CallContext> {
    return this.calls.providerContext(provider);
  }

  /** Nudges the loop to look at the store now (a job was queued, a callback arrived). */
  wake(): void {
    this.claims.forgetEmptyQueues();
    // Told from outside: another process may have queued work or moved one of this engine's jobs.
    this.owned.toldFromOutside();
    this.naps.othersMoved();
    this.naps.wakeLoop();
  }

  /** Notification attempts this engine has in flight. */
  deliveriesInFlight(): number {
    return this.deliveries.size;
  }

  /** Whether this engine delivers notifications: it was given how, and a command's engine only under MEDIAGATE_NOTIFY_URL (see `Deliveries.delivers`). */
  delivers(): boolean {
    return this.deliveries.delivers();
  }
}

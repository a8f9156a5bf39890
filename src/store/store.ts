import type { BlockedCode, Job, JobEvent, JobOutput, JobRoute, JobState } from "../core/job.js";
import type { ProviderId, RateWindow } from "../core/provider-id.js";
import type { JobTrace } from "../core/trace-context.js";
import type { Admission, AdmissionOutcome } from "./admission.js";
import type { BudgetStatus } from "./budgets.js";
import type { WebhookDeliveryRecord, WebhookRejectionCount } from "./deliveries.js";
import type { ProviderHalt } from "./halts.js";
import type { Notification, NotificationAttempt, NotificationPolicy } from "./notifications.js";
import type { RateTake, RateToken, RateWindowUsage } from "./rate-windows.js";
import type { PoolStatus } from "./slots.js";
import type { BatchSummary, DailySpend, SpendLine } from "./spend.js";
import type { BodySearch } from "./body-search.js";
import type { ApiToken } from "./tokens.js";

// Types that live beside their statements (tokens.ts, budgets.ts, …), named here too: the Store speaks them, and its callers import them from here.
export type {
  Admission,
  AdmissionOutcome,
  ApiToken,
  BatchSummary,
  BodySearch,
  BudgetStatus,
  DailySpend,
  Notification,
  NotificationAttempt,
  NotificationPolicy,
  PoolStatus,
  ProviderHalt,
  RateTake,
  RateToken,
  RateWindowUsage,
  SpendLine,
  WebhookDeliveryRecord,
  WebhookRejectionCount,
};
export { RATE_ARRIVAL_BOUND_MS, RATE_IN_FLIGHT_RECHECK_MS, RATE_SEND_BOUND_MS, rateUnansweredExpiryMs } from "./rate-windows.js";

/**
 * The order the whole store's queue is read in (`dueQueued` without a scope): `fair` (the default: the tenant with the
 * least of a provider in flight first, store/fair-queue.ts) or `arrival` (due order alone, oldest first: what the
 * benchmark of fair share measures it against).
 */
export type QueueOrder = "fair" | "arrival";

/** See `Store.nextDueAt`: null where nothing is due later. */
export interface NextDue {
  at: number | null;
  queuedAt: number | null;
}

/** A job as first stored: validated, estimated, queued. */
export interface NewJob {
  id: string;
  ref: string;
  batchId: string | null;
  provider: ProviderId;
  model: string;
  operation: string | null;
  body: Record<string, unknown>;
  facts: Record<string, unknown>;
  warnings: string[];
  estimateMicroUsd: number | null;
  estimateSource: string;
  outDir: string;
  /** The budget its spend counts against, when the command that queued it has one. */
  budgetId?: string | null;
  /** A common request's route beyond the first target (null or absent: none). */
  route?: JobRoute | null;
  /** The API token creating it (`mediagate serve`). */
  tokenId?: string | null;
  /** Whose job it is (default LOCAL_TENANT): its ref is unique within its tenant. */
  tenant?: string;
  notifyUrl?: string | null;
  /** When it stops being wanted (`cancel_after_s` from its admission): unsent then, it is cancelled. */
  deadlineAt?: number | null;
  /** Its place in a trace (traces exported): the job span's ids, and its parent's when the request carried a `traceparent`. */
  trace?: JobTrace | null;
}

/** Fields the engine may change on a job (with or without a state change). */
export type JobPatch = Partial<
  Pick<
    Job,
    | "reason"
    | "attempts"
    | "idempotencyKey"
    | "providerJobId"
    | "handles"
    | "providerStatus"
    | "chargeMicroUsd"
    | "chargeSource"
    | "chargeState"
    | "error"
    | "leaseOwner"
    | "leaseExpiresAt"
    | "nextAttemptAt"
    | "submittedAt"
    | "submitSentAt"
    | "providerDoneAt"
    | "finishedAt"
    | "trackingDeadlineAt"
    | "lastPendingElapsedMs"
    | "pollFailures"
    | "body"
    | "blockedCode"
    | "outDir"
    // Moving to the next target of a route (issue 11).
    | "provider"
    | "model"
    | "operation"
    | "facts"
    | "warnings"
    | "estimateMicroUsd"
    | "estimateSource"
    | "route"
    // Its place at the end of the next target's line (migration 21).
    | "queueRank"
  >
>;

/** What must hold for a change to apply (compare-and-set), so two engines never both move a job. */
export interface JobExpectation {
  state: JobState | readonly JobState[];
  /** The lease owner the job must have (null: must have none); undefined: not checked. */
  leaseOwner?: string | null;
  /**
   * The target the job must still be on (its provider and model); undefined: not checked. A queued job has no lease
   * to tell that another engine moved it to the next target of its route meanwhile: its target does.
   */
  target?: { provider: ProviderId; model: string };
}

export interface TransitionExtras {
  /** Outputs saved for this job, written in the same transaction. */
  outputs?: JobOutput[];
  /** A charge for the ledger (only facts: a computed or a settled charge), written in the same transaction. */
  ledger?: { microUsd: number; source: string };
}

export interface JobFilter {
  batchId?: string;
  states?: readonly JobState[];
  provider?: ProviderId;
  ids?: readonly string[];
  /** Only one tenant's jobs (a token's, or the local operator's). */
  tenant?: string;
  ref?: string;
  /** Only the jobs whose ref starts with this ("batch-7" finds "batch-7-001"), read as a range of an index (migration 12); the other filters are checked on the jobs found. */
  refPrefix?: string;
  /** Created at or after / before these times (ms). */
  createdAfter?: number;
  createdBefore?: number;
  /** Newest first: the jobs after this one in that order (a cursor: stable under inserts, which are newer). */
  olderThan?: { createdAt: number; id: string };
  limit?: number;
  /** Newest first (default: oldest first). */
  newestFirst?: boolean;
}

export interface SlotPoolRequest {
  key: string;
  capacity: number;
}

/**
 * `instead`: the job asked for was taken by another engine first, and the
 * answer is about the job that was considered in its place (claimed, or
 * refused for a full pool or its budget): the job asked for was not touched.
 */
export type ClaimResult =
  /** `filled`: the pools this claim took the last free slot of (the next job needing one would find no slot). */
  | { kind: "claimed"; job: Job; filled: string[]; instead?: boolean }
  | { kind: "no_slot"; poolKey: string; retryAt: number | null; instead?: boolean }
  /** Sending it would commit more than its budget's ceiling: it stays queued, unsent. */
  | { kind: "over_budget"; budget: BudgetStatus; instead?: boolean }
  | { kind: "gone" };

/**
 * The jobs one engine works on. A CLI command works only on its own jobs
 * (`generate` on its job, `batch` on its batch); `worker` and `serve` have no
 * scope and work on every job in the store.
 */
export type JobScope = { batchId: string } | { jobIds: readonly string[] };

/**
 * What to claim when the job asked for was taken by another engine between
 * reading the queue and claiming (several workers read the same queue
 * head): the next due job of the same provider's queue, in `scope`, that no
 * other engine is claiming (PostgreSQL: SKIP LOCKED), if `poolsOf` accepts
 * it. Without this, workers sharing a store spend most of their claims on
 * each other's jobs.
 */
export interface ClaimInstead {
  provider: ProviderId;
  scope: { batchId: string } | null;
  /** The slot pools a candidate needs, or null when this engine would not send it now (busy, provider unavailable, pool known full). */
  poolsOf(job: Job): SlotPoolRequest[] | null;
  /**
   * The model and operation of the job asked for. A job of the same provider, model and operation needs the same
   * slot pools (`ProviderAdapter.limits`), so a store may claim one in its place with the pools given for it, in the
   * same decision (PostgreSQL). A candidate claimed so may be one this engine is still working on (a submit that put
   * it back in the queue): its claim is the engine's to follow.
   */
  sameAs?: { model: string; operation: string | null };
}

/** What following a job needs: its state, provider and why it is blocked, without its body or outputs. */
export interface JobBrief {
  id: string;
  state: JobState;
  provider: ProviderId;
  blockedCode: BlockedCode | null;
  updatedAt: number;
}

/**
 * What a command's summary needs of a job: no request body, handles or
 * provider answers, so that summing up 20,000 jobs reads (and parses) no
 * more than that.
 */
export type JobOutcome = Pick<
  Job,
  "id" | "ref" | "state" | "reason" | "attempts" | "providerJobId" | "estimateMicroUsd" | "chargeMicroUsd" | "chargeState" | "blockedCode"
> & { error: { code: string; message: string } | null };

/** How many unfinished jobs of a scope are in one state at one provider, blocked or not. */
export interface OpenCount {
  state: JobState;
  provider: ProviderId;
  blocked: boolean;
  count: number;
}

/** How many jobs of the whole store are in one state at one provider (`/metrics`). */
export interface JobCount {
  provider: ProviderId;
  state: JobState;
  count: number;
}

export interface RenderSample {
  /** Elapsed ms from submit to the poll that saw the job done (an upper bound of its render time). */
  doneElapsedMs: number;
  /** Elapsed ms of the last poll that saw it pending (a lower bound), when there was one. */
  pendingElapsedMs: number | null;
  /** Elapsed ms from submit to the job's end, its results saved; null while it had not ended. */
  finishedElapsedMs?: number | null;
  /** Ms from the submit's send (its slot already held) to the poll that saw it done: the slot's hold, the submit's own time included. */
  sentToDoneMs?: number | null;
}

/** One tenant's line at a provider: the ranks at its head and tail (migration 21), what it has in flight there, its weight. */
export interface TenantLine {
  tenant: string;
  headRank: number;
  /** When the job at its head is due: among equal turns, the line whose head has waited longer goes first. */
  headDueAt: number;
  tailRank: number;
  inFlight: number;
  weight: number;
}

/** Who waits at a provider (each tenant's line, at most QUEUE_SHAPE_TENANTS) and how many of its jobs are in flight. */
export interface QueueShape {
  provider: ProviderId;
  lines: TenantLine[];
  inFlight: number;
}

/**
 * Everything the engine, CLI and server keep. Implemented once over Kysely
 * for SQLite and PostgreSQL; nothing above this interface knows which.
 */
export interface Store {
  readonly dialect: "sqlite" | "postgres";
  /**
   * How many times this store object released slot holds or recovered pool
   * capacity: an engine that found a pool full asks again only after it
   * changed (or after a while, for releases by other processes).
   */
  readonly slotReleases: number;
  /**
   * Calls `listener` when another process sharing this store announces work
   * (jobs queued, a webhook for a job this process owns): PostgreSQL's
   * LISTEN/NOTIFY. An embedded store never calls it. Returns the unsubscriber.
   */
  onWork(listener: () => void): () => void;
  /** Tells the other processes' engines to look at the store now (a webhook nudged a job one of them owns). */
  announceWork(): Promise<void>;
  close(): Promise<void>;

  /** Inserts jobs whose ref is new in their tenant; for a ref that exists there, returns the stored job with `created: false`. One transaction. */
  insertJobs(jobs: NewJob[], now: number): Promise<Array<{ job: Job; created: boolean }>>;
  /**
   * Admits jobs (issue 35): each admission decided whole, in order, in one transaction for all of them: its idempotency
   * key taken, its jobs stored (a ref its tenant stored already is that job, unless `differs` says it is another
   * request), their estimates reserved in its budget (refused whole past the ceiling, nothing written).
   */
  admit(admissions: readonly Admission[], now: number): Promise<AdmissionOutcome[]>;
  getJob(id: string): Promise<Job | null>;
  /** By id, or by ref in `tenant` (default LOCAL_TENANT) when no id matches. */
  findJob(idOrRef: string, tenant?: string): Promise<Job | null>;
  /** Queued jobs whose deadline has passed, earliest first, at most `limit` (one range of an index, migration 20); only `scope`'s when given. */
  queuedPastDeadline(now: number, limit: number, scope?: JobScope | null): Promise<Job[]>;
  listJobs(filter?: JobFilter): Promise<Job[]>;
  /** Among the newest `window` jobs (a tenant's when given), those whose request's JSON holds a text, newest first: a bounded scan (body-search.ts). */
  searchRecentBodies(search: BodySearch): Promise<Job[]>;
  /** The job a provider knows by `providerJobId` (webhooks are matched by it). */
  jobByProviderJobId(provider: ProviderId, providerJobId: string): Promise<Job | null>;
  /** The stored jobs of `tenant` with these refs (in no particular order); a few statements for any number of refs. */
  jobsByRefs(tenant: string, refs: readonly string[]): Promise<Job[]>;
  events(jobId: string): Promise<JobEvent[]>;
  outputs(jobId: string): Promise<JobOutput[]>;
  /** The outputs of several jobs in one read (a page of the API's listing), by job id; a job without any is absent. */
  outputsOfJobs(jobIds: readonly string[]): Promise<Map<string, JobOutput[]>>;

  /**
   * Moves a job to `to` if it matches `expect`, applying `patch`, appending
   * an event, releasing all slots when `to` is terminal or running→capturing
   * and writing extras, in one transaction. Returns the new job, or null when
   * the expectation failed (another engine moved it first).
   */
  transition(
    jobId: string,
    expect: JobExpectation,
    to: JobState,
    patch: JobPatch,
    reason: string,
    now: number,
    detail?: unknown,
    extras?: TransitionExtras,
  ): Promise<Job | null>;
  /** Changes fields without a state change (poll bookkeeping, reasons). Null when the expectation failed. */
  updateJob(jobId: string, expect: JobExpectation, patch: JobPatch, now: number): Promise<Job | null>;
  /**
   * Notes that the submit of a job `owner` holds in `submitting` leaves now (`submitSentAt`), reading nothing back;
   * false when the job is no longer that owner's to send.
   */
  markSubmitSent(jobId: string, owner: string, at: number): Promise<boolean>;

  /** Every job in `scope`, briefly: where a waiting command starts from (read once). */
  jobBriefs(scope: JobScope): Promise<JobBrief[]>;
  /** What a summary needs of these jobs (at most 1,000 ids a call), in no particular order. */
  jobOutcomes(ids: readonly string[]): Promise<JobOutcome[]>;
  /**
   * Jobs in `scope` updated at or after `since`, earliest change first (then
   * by id), at most `limit`, continuing `after` the last one of a previous
   * page: a waiting command follows changes made by other processes
   * by what changed, not by reading its whole batch again.
   */
  changedBriefs(scope: JobScope, since: number, limit: number, after?: { updatedAt: number; id: string } | null): Promise<JobBrief[]>;
  /** Unfinished jobs in `scope`, counted by state, provider and whether blocked: an aggregate, no row leaves the store. */
  openCounts(scope: JobScope): Promise<OpenCount[]>;
  /** Every job counted by provider and state: one aggregate read from an index (jobs_queue), never from the rows. */
  jobCounts(): Promise<JobCount[]>;

  /** Queued jobs that are due, skipping halted providers: in due order, only those in `scope` when given, after `after` for a next page; the whole store's in fair order between tenants unless `order` is `arrival` (store/fair-queue.ts). */
  dueQueued(now: number, limit: number, skipProviders: readonly string[], scope?: JobScope | null, after?: { nextAttemptAt: number; id: string } | null, order?: QueueOrder): Promise<Job[]>;
  /**
   * Queued jobs of a common request (with a route) waiting for `provider`,
   * due or not, in queue order after `after`: what moves to the next target
   * when that provider is halted. Read once per halt, a page at a time.
   */
  routedQueued(provider: ProviderId, limit: number, scope?: JobScope | null, after?: { nextAttemptAt: number; id: string } | null): Promise<Job[]>;
  /**
   * Takes every slot pool (all or none) and, when the job has a budget, its
   * estimate in that budget (refused past the ceiling), and moves the job
   * queued → submitting under a lease, counting the attempt. One transaction.
   * When the job is no longer queued or another engine is claiming it,
   * `instead` says what may be claimed in its place.
   */
  claimForSubmit(jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult>;
  /** Jobs held by this owner that are due for work (polls, captures, settlement), but for those in `busy` (whose rows are not read). */
  dueOwned(owner: string, now: number, limit: number, busy?: { has(id: string): boolean }): Promise<Job[]>;
  /**
   * Takes over non-terminal, non-queued jobs whose lease expired or whose
   * owner is known dead. Returns them with the new lease.
   */
  adoptOrphans(owner: string, now: number, leaseMs: number, isDeadOwner: (owner: string) => boolean, scope?: JobScope | null): Promise<Job[]>;
  renewLeases(owner: string, leaseExpiresAt: number): Promise<void>;
  releaseLeases(owner: string): Promise<void>;
  /**
   * The earliest `next_attempt_at` later than `after` of work that could become due (queued jobs, this owner's jobs
   * unless `owner` is null: an engine that knows its own jobs' due times reads none, charges to settle unless
   * `settlements` is false: an engine with no provider that settles reads none, and notifications owed when
   * `notifications` is true: an engine that delivers them): `at`; and of the queued jobs alone, `queuedAt` (a nap that
   * reaches it ends a queue's emptiness).
   */
  nextDueAt(owner: string | null, skipProviders: readonly string[], after: number, scope?: JobScope | null, settlements?: boolean, notifications?: boolean): Promise<NextDue>;

  releaseSlots(jobId: string, now: number): Promise<void>;
  /** The provider pushed back: believe no more slots than are held now, and hand none out until `blockedUntil`. */
  slotPushback(poolKeys: readonly string[], blockedUntil: number, now: number): Promise<void>;
  /** Raises learned capacity by one toward the published capacity (called after a quiet period). */
  slotRecover(poolKey: string, now: number): Promise<void>;
  poolStatus(): Promise<PoolStatus[]>;

  /** A batch's jobs counted by state, with their estimates and the charges known (one aggregate over jobs_batch_queue); only one tenant's jobs when given. */
  batchSummary(batchId: string, tenant?: string): Promise<BatchSummary>;
  /**
   * Up to `limit` of a batch's jobs in `state`, in queue order (provider, due time, id), read as one range of
   * jobs_batch_queue: a page, never the batch (its failures to show; its queued jobs to cancel a page at a time).
   */
  batchJobsInState(batchId: string, state: JobState, limit: number, tenant?: string): Promise<Job[]>;
  /**
   * Spend between `from` and `to` by provider, model and token: charges in the
   * ledger then (the accounting fact) beside the estimates of the jobs created
   * then; one tenant's only when given.
   */
  spendSummary(from: number, to: number, tenant?: string): Promise<SpendLine[]>;
  /** `spendSummary` by provider and UTC day instead of model and token (the dashboard's chart); one tenant's only when given. */
  spendByDay(from: number, to: number, tenant?: string): Promise<DailySpend[]>;

  /**
   * Sliding-window rate limiting shared by every engine on this store: when
   * every window has room, records one request in each and grants a token;
   * otherwise says how many ms until one would have room. A request counts
   * from when it is sent until a full window after its answer
   * (`answerRateToken`), since the provider counted it somewhere in between;
   * one never answered stops counting after `rateUnansweredExpiryMs`.
   */
  takeRateToken(windows: readonly RateWindow[], now: number | (() => number)): Promise<RateTake>;
  /** Records when a granted request's answer came back. */
  answerRateToken(token: RateToken, at: number): Promise<void>;
  /** What each window counts at `now`, by the rule `takeRateToken` applies (one count per window, nothing written). */
  rateWindowUsage(windows: readonly RateWindow[], now: number): Promise<RateWindowUsage[]>;

  haltProvider(halt: ProviderHalt): Promise<void>;
  clearHalt(provider: ProviderId): Promise<void>;
  halts(): Promise<ProviderHalt[]>;

  /** Stores a new API token; an InputError-worthy null when its name is taken. */
  createToken(token: ApiToken): Promise<ApiToken | null>;
  /** The token whose secret has this sha256, revoked or not (the caller refuses a revoked one, saying so). */
  tokenBySecretSha256(secretSha256: string): Promise<ApiToken | null>;
  tokens(): Promise<ApiToken[]>;
  /** Revokes a token by name or id; null when there is none, the token (already revoked or not) otherwise. */
  revokeToken(nameOrId: string, at: number): Promise<ApiToken | null>;
  /** Whether any token not revoked exists (without one, `serve` binds to loopback only). */
  hasActiveTokens(): Promise<boolean>;

  recentRenderSamples(provider: string, model: string, limit: number): Promise<RenderSample[]>;
  /** The rank a job queued now by `tenant` at `provider` takes: one more than the last one's (one seek of jobs_queue_rank). */
  nextQueueRank(provider: ProviderId, tenant: string): Promise<number>;
  /** Each provider's queue as lines of tenants (queue positions, issue 37): a few seeks per tenant waiting, never a read of the jobs in line. */
  queueShapes(providers: readonly ProviderId[]): Promise<QueueShape[]>;
  ledgerTotal(filter?: { provider?: ProviderId; from?: number; to?: number }): Promise<number>;

  /** Appends an event that changes no state (an erase at the provider, a note), to the job's log. */
  noteEvent(jobId: string, reason: string, now: number, detail?: unknown): Promise<void>;

  /** Finished jobs whose charge the provider settles later (B), due for a read. */
  dueSettlements(now: number, limit: number, scope?: JobScope | null): Promise<Job[]>;
  /** Writes the settled charge and its ledger entry once (the charge replaces what the job held in its budget); null when it was already settled. */
  settleCharge(jobId: string, charge: { microUsd: number; source: string }, now: number): Promise<Job | null>;

  /** Records a delivery; "duplicate" when one with the same provider and delivery id was already recorded (nothing is written). */
  recordDelivery(delivery: WebhookDeliveryRecord): Promise<"recorded" | "duplicate">;
  deliveries(filter?: { provider?: ProviderId; jobId?: string }): Promise<WebhookDeliveryRecord[]>;

  /** Creates the budget or sets its ceiling (what is committed stays). */
  setBudget(id: string, ceilingMicroUsd: number, now: number): Promise<BudgetStatus>;
  budget(id: string): Promise<BudgetStatus | null>;
  /** Puts these jobs, where still queued and under another budget or none, under this one (a resumed batch's unsent jobs), each holding its estimate there from now. */
  assignBudget(budgetId: string, jobIds: readonly string[], now: number): Promise<void>;
  // Refused webhook deliveries, counted rather than stored one by one (migration 6).
  /** Adds each count to its (provider, reason, bucket) counter, creating it when new. One transaction. */
  countWebhookRejections(counts: readonly WebhookRejectionCount[]): Promise<void>;
  /** The counters, oldest bucket first; `from`/`to` bound the bucket start (inclusive). */
  webhookRejections(filter?: { provider?: string; from?: number; to?: number }): Promise<WebhookRejectionCount[]>;

  // Notifications out (issue 12, migration 11): owed in the same transaction as the change that owes them.
  /** Which changes owe a notification from now on, for this store object (default: a job's end, to its own `notify_url` only). */
  setNotificationPolicy(policy: NotificationPolicy): void;
  /**
   * Takes up to `limit` notifications due at `now`, one attempt each: counts
   * the attempt and moves the due time to `now + leaseMs`, so no other engine
   * takes it before the attempt ends (or, if this one dies, before then).
   * One statement (PostgreSQL: SKIP LOCKED).
   */
  claimDueNotifications(now: number, limit: number, leaseMs: number, scope?: JobScope | null): Promise<Notification[]>;
  /** How many notifications `scope`'s jobs still owe (neither delivered nor given up), and how many were never tried. */
  notificationsOwed(scope: JobScope | null): Promise<{ owed: number; neverTried: number }>;
  /** Keeps the body the first attempt sends, unless one is kept already; returns the kept one. */
  keepNotificationBody(id: string, body: string): Promise<string>;
  /**
   * Records how an attempt ended and appends its event to the job's log, in
   * one transaction, when the notification is still owed and still at that
   * attempt; false (nothing written) otherwise.
   */
  recordNotificationAttempt(attempt: NotificationAttempt): Promise<boolean>;
  /** A job's notifications, oldest first. */
  notifications(jobId: string): Promise<Notification[]>;
}

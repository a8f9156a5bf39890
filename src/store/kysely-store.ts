import type { Kysely, LogEvent } from "kysely";
import type { Job, JobEvent, JobOutput, JobState } from "../core/job.js";
import type { ProviderId, RateWindow } from "../core/provider-id.js";
import { changedBriefs, jobBriefs, jobCounts, jobOutcomes, openCounts } from "./briefs.js";
import { assignBudget, budget, setBudget, settleCharge } from "./budgets.js";
import { claimByStatements, claimForSubmit } from "./claims.js";
import { type StoreContext, storeContext } from "./context.js";
import { countWebhookRejections, deliveries, recordDelivery, webhookRejections } from "./deliveries.js";
import { dueOwned, dueQueued, dueSettlements, nextDueAt, routedQueued } from "./due.js";
import { events, noteEvent } from "./events.js";
import { clearHalt, haltProvider, halts } from "./halts.js";
import { admit, type Admission, type AdmissionOutcome } from "./admission.js";
import { findJob, getJob, insertJobs, jobByProviderJobId, jobsByRefs, listJobs, nextQueueRank, outputs, outputsOfJobs, recentRenderSamples } from "./jobs.js";
import { adoptOrphans, releaseLeases, renewLeases } from "./leases.js";
import { claimDueNotifications, keepNotificationBody, notificationsOf, notificationsOwed, recordNotificationAttempt } from "./notifications.js";
import { answerRateToken, rateWindowUsage, takeRateToken } from "./rate-windows.js";
import type { Database } from "./schema.js";
import { poolStatus, releaseSlots, slotPushback, slotRecover } from "./slots.js";
import { queuedPastDeadline } from "./deadlines.js";
import { queueShapes } from "./queue-shape.js";
import { batchJobsInState } from "./batches.js";
import { type BodySearch, searchRecentBodies } from "./body-search.js";
import { batchSummary, ledgerTotal, spendByDay, spendSummary } from "./spend.js";
import type {
  ApiToken,
  BatchSummary,
  BudgetStatus,
  ClaimInstead,
  ClaimResult,
  QueueShape,
  DailySpend,
  JobBrief,
  JobCount,
  JobExpectation,
  JobFilter,
  JobOutcome,
  JobPatch,
  JobScope,
  QueueOrder,
  NewJob,
  NextDue,
  Notification,
  NotificationAttempt,
  NotificationPolicy,
  OpenCount,
  PoolStatus,
  ProviderHalt,
  RateTake,
  RateToken,
  RateWindowUsage,
  RenderSample,
  SlotPoolRequest,
  SpendLine,
  Store,
  TransitionExtras,
  WebhookDeliveryRecord,
  WebhookRejectionCount,
} from "./store.js";
import { createToken, hasActiveTokens, revokeToken, tokenBySecretSha256, tokens } from "./tokens.js";
import { markSubmitSent, transition, updateJob } from "./transitions.js";
import type { WorkSignals } from "./work-signals.js";

/** Sees each statement as run: its SQL and its parameters. */
export type QueryListener = (sql: string, parameters: readonly unknown[], durationMs: number) => void;

/** Kysely's `log` option for a listener, or nothing. */
export function queryLog(listener: QueryListener | undefined): { log?: (event: LogEvent) => void } {
  if (!listener) return {};
  return { log: (event) => listener(event.query.sql, event.query.parameters, event.queryDurationMillis) };
}

/**
 * The Store over Kysely, shared by SQLite and PostgreSQL. The few places
 * where the dialects differ (row locks for the claim and the slot take) are
 * marked; everything else is the same SQL. Each family of statements is a
 * file of its own (jobs.ts, transitions.ts, claims.ts, due.ts, …) whose
 * functions take this store object's context; the class hands each call on.
 */
export class KyselyStore implements Store {
  /** What each family of statements takes: this store object's db, dialect, statements kept compiled, and counters. */
  private readonly context: StoreContext;

  constructor(
    readonly db: Kysely<Database>,
    readonly dialect: "sqlite" | "postgres",
    private readonly onClose: () => Promise<void> = async () => db.destroy(),
    /** Other processes told of new work (PostgreSQL's LISTEN/NOTIFY); none for an embedded store. */
    private readonly signals: WorkSignals | null = null,
    /** Told the SQL of each statement `reusable` compiles, for a driver that prepares them (PostgreSQL's named statements). */
    onReusable: ((sql: string) => void) | null = null,
  ) {
    this.context = storeContext(db, dialect, signals, onReusable);
  }

  /** See `Store.slotReleases`. */
  get slotReleases(): number {
    return this.context.slotReleases;
  }

  onWork(listener: () => void): () => void {
    return this.signals ? this.signals.subscribe(listener) : () => undefined;
  }

  async announceWork(): Promise<void> {
    await this.context.announce(this.db);
  }

  async close(): Promise<void> {
    await this.signals?.close();
    await this.onClose();
  }

  insertJobs(jobs: NewJob[], now: number): Promise<Array<{ job: Job; created: boolean }>> {
    return insertJobs(this.context, jobs, now);
  }

  admit(admissions: readonly Admission[], now: number): Promise<AdmissionOutcome[]> {
    return admit(this.context, admissions, now);
  }

  getJob(id: string): Promise<Job | null> {
    return getJob(this.context, id);
  }

  queuedPastDeadline(now: number, limit: number, scope: JobScope | null = null): Promise<Job[]> {
    return queuedPastDeadline(this.context, now, limit, scope);
  }

  findJob(idOrRef: string, tenant?: string): Promise<Job | null> {
    return findJob(this.context, idOrRef, tenant);
  }

  listJobs(filter?: JobFilter): Promise<Job[]> {
    return listJobs(this.context, filter);
  }

  searchRecentBodies(search: BodySearch): Promise<Job[]> {
    return searchRecentBodies(this.context, search);
  }

  jobByProviderJobId(provider: ProviderId, providerJobId: string): Promise<Job | null> {
    return jobByProviderJobId(this.context, provider, providerJobId);
  }

  jobsByRefs(tenant: string, refs: readonly string[]): Promise<Job[]> {
    return jobsByRefs(this.context, tenant, refs);
  }

  events(jobId: string): Promise<JobEvent[]> {
    return events(this.context, jobId);
  }

  outputs(jobId: string): Promise<JobOutput[]> {
    return outputs(this.context, jobId);
  }

  outputsOfJobs(jobIds: readonly string[]): Promise<Map<string, JobOutput[]>> {
    return outputsOfJobs(this.context, jobIds);
  }

  transition(jobId: string, expect: JobExpectation, to: JobState, patch: JobPatch, reason: string, now: number, detail?: unknown, extras?: TransitionExtras): Promise<Job | null> {
    return transition(this.context, jobId, expect, to, patch, reason, now, detail, extras);
  }

  updateJob(jobId: string, expect: JobExpectation, patch: JobPatch, now: number): Promise<Job | null> {
    return updateJob(this.context, jobId, expect, patch, now);
  }

  markSubmitSent(jobId: string, owner: string, at: number): Promise<boolean> {
    return markSubmitSent(this.context, jobId, owner, at);
  }

  jobBriefs(scope: JobScope): Promise<JobBrief[]> {
    return jobBriefs(this.context, scope);
  }

  jobOutcomes(ids: readonly string[]): Promise<JobOutcome[]> {
    return jobOutcomes(this.context, ids);
  }

  changedBriefs(scope: JobScope, since: number, limit: number, after?: { updatedAt: number; id: string } | null): Promise<JobBrief[]> {
    return changedBriefs(this.context, scope, since, limit, after);
  }

  openCounts(scope: JobScope): Promise<OpenCount[]> {
    return openCounts(this.context, scope);
  }

  jobCounts(): Promise<JobCount[]> {
    return jobCounts(this.context);
  }

  dueQueued(now: number, limit: number, skipProviders: readonly string[], scope?: JobScope | null, after?: { nextAttemptAt: number; id: string } | null, order?: QueueOrder): Promise<Job[]> {
    return dueQueued(this.context, now, limit, skipProviders, scope, after, order);
  }

  routedQueued(provider: ProviderId, limit: number, scope?: JobScope | null, after?: { nextAttemptAt: number; id: string } | null): Promise<Job[]> {
    return routedQueued(this.context, provider, limit, scope, after);
  }

  claimForSubmit(jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult> {
    return claimForSubmit(this.context, jobId, owner, pools, now, leaseMs, instead);
  }

  /** `claimForSubmit` by the store's own statements, as SQLite claims (see claims.ts); the claim-function test compares it with PostgreSQL's. */
  claimByStatements(jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult> {
    return claimByStatements(this.context, jobId, owner, pools, now, leaseMs, instead);
  }

  dueOwned(owner: string, now: number, limit: number, busy?: { has(id: string): boolean }): Promise<Job[]> {
    return dueOwned(this.context, owner, now, limit, busy);
  }

  adoptOrphans(owner: string, now: number, leaseMs: number, isDeadOwner: (owner: string) => boolean, scope?: JobScope | null): Promise<Job[]> {
    return adoptOrphans(this.context, owner, now, leaseMs, isDeadOwner, scope);
  }

  renewLeases(owner: string, leaseExpiresAt: number): Promise<void> {
    return renewLeases(this.context, owner, leaseExpiresAt);
  }

  releaseLeases(owner: string): Promise<void> {
    return releaseLeases(this.context, owner);
  }

  nextDueAt(owner: string | null, skipProviders: readonly string[], after: number, scope?: JobScope | null, settlements?: boolean, notifications?: boolean): Promise<NextDue> {
    return nextDueAt(this.context, owner, skipProviders, after, scope, settlements, notifications);
  }

  releaseSlots(jobId: string, now: number): Promise<void> {
    return releaseSlots(this.context, jobId, now);
  }

  slotPushback(poolKeys: readonly string[], blockedUntil: number, now: number): Promise<void> {
    return slotPushback(this.context, poolKeys, blockedUntil, now);
  }

  slotRecover(poolKey: string, now: number): Promise<void> {
    return slotRecover(this.context, poolKey, now);
  }

  poolStatus(): Promise<PoolStatus[]> {
    return poolStatus(this.context);
  }

  batchSummary(batchId: string, tenant?: string): Promise<BatchSummary> {
    return batchSummary(this.context, batchId, tenant);
  }

  batchJobsInState(batchId: string, state: JobState, limit: number, tenant?: string): Promise<Job[]> {
    return batchJobsInState(this.context, batchId, state, limit, tenant);
  }

  spendSummary(from: number, to: number, tenant?: string): Promise<SpendLine[]> {
    return spendSummary(this.context, from, to, tenant);
  }

  spendByDay(from: number, to: number, tenant?: string): Promise<DailySpend[]> {
    return spendByDay(this.context, from, to, tenant);
  }

  takeRateToken(windows: readonly RateWindow[], now: number | (() => number)): Promise<RateTake> {
    return takeRateToken(this.context, windows, now);
  }

  answerRateToken(token: RateToken, at: number): Promise<void> {
    return answerRateToken(this.context, token, at);
  }

  rateWindowUsage(windows: readonly RateWindow[], now: number): Promise<RateWindowUsage[]> {
    return rateWindowUsage(this.context, windows, now);
  }

  haltProvider(halt: ProviderHalt): Promise<void> {
    return haltProvider(this.context, halt);
  }

  clearHalt(provider: ProviderId): Promise<void> {
    return clearHalt(this.context, provider);
  }

  halts(): Promise<ProviderHalt[]> {
    return halts(this.context);
  }

  createToken(token: ApiToken): Promise<ApiToken | null> {
    return createToken(this.context, token);
  }

  tokenBySecretSha256(secretSha256: string): Promise<ApiToken | null> {
    return tokenBySecretSha256(this.context, secretSha256);
  }

  tokens(): Promise<ApiToken[]> {
    return tokens(this.context);
  }

  revokeToken(nameOrId: string, at: number): Promise<ApiToken | null> {
    return revokeToken(this.context, nameOrId, at);
  }

  hasActiveTokens(): Promise<boolean> {
    return hasActiveTokens(this.context);
  }

  recentRenderSamples(provider: string, model: string, limit: number): Promise<RenderSample[]> {
    return recentRenderSamples(this.context, provider, model, limit);
  }

  nextQueueRank(provider: ProviderId, tenant: string): Promise<number> {
    return nextQueueRank(this.context.db, provider, tenant);
  }

  queueShapes(providers: readonly ProviderId[]): Promise<QueueShape[]> {
    return queueShapes(this.context, providers);
  }

  ledgerTotal(filter?: { provider?: ProviderId; from?: number; to?: number }): Promise<number> {
    return ledgerTotal(this.context, filter);
  }

  noteEvent(jobId: string, reason: string, now: number, detail?: unknown): Promise<void> {
    return noteEvent(this.context, jobId, reason, now, detail);
  }

  dueSettlements(now: number, limit: number, scope?: JobScope | null): Promise<Job[]> {
    return dueSettlements(this.context, now, limit, scope);
  }

  settleCharge(jobId: string, charge: { microUsd: number; source: string }, now: number): Promise<Job | null> {
    return settleCharge(this.context, jobId, charge, now);
  }

  recordDelivery(delivery: WebhookDeliveryRecord): Promise<"recorded" | "duplicate"> {
    return recordDelivery(this.context, delivery);
  }

  deliveries(filter?: { provider?: ProviderId; jobId?: string }): Promise<WebhookDeliveryRecord[]> {
    return deliveries(this.context, filter);
  }

  setBudget(id: string, ceilingMicroUsd: number, now: number): Promise<BudgetStatus> {
    return setBudget(this.context, id, ceilingMicroUsd, now);
  }

  budget(id: string): Promise<BudgetStatus | null> {
    return budget(this.context, id);
  }

  assignBudget(budgetId: string, jobIds: readonly string[], now: number): Promise<void> {
    return assignBudget(this.context, budgetId, jobIds, now);
  }

  countWebhookRejections(counts: readonly WebhookRejectionCount[]): Promise<void> {
    return countWebhookRejections(this.context, counts);
  }

  webhookRejections(filter?: { provider?: string; from?: number; to?: number }): Promise<WebhookRejectionCount[]> {
    return webhookRejections(this.context, filter);
  }

  setNotificationPolicy(policy: NotificationPolicy): void {
    this.context.notificationPolicy = { ...policy };
  }

  claimDueNotifications(now: number, limit: number, leaseMs: number, scope: JobScope | null = null): Promise<Notification[]> {
    return claimDueNotifications(this.db, this.dialect, now, limit, leaseMs, scope);
  }

  notificationsOwed(scope: JobScope | null): Promise<{ owed: number; neverTried: number }> {
    return notificationsOwed(this.db, scope);
  }

  keepNotificationBody(id: string, body: string): Promise<string> {
    return keepNotificationBody(this.db, id, body);
  }

  recordNotificationAttempt(attempt: NotificationAttempt): Promise<boolean> {
    return recordNotificationAttempt(this.db, attempt);
  }

  notifications(jobId: string): Promise<Notification[]> {
    return notificationsOf(this.db, jobId);
  }
}

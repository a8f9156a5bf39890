import type { FastifyInstance } from "fastify";
import type { ProviderEmulator, SandboxContext } from "../context.js";
import { countBy, peakConcurrency } from "../emulator-stats.js";
import { statusAt, type EDownloadRecord, type EOutcome, type EPollRecord } from "./jobs.js";
import { E_OPERATIONS, type EOperation, type EOperationSpec } from "./operations.js";
import { resolveEOptions, type EDurationRange, type EEmulatorOptions } from "./options.js";
import type { EQuotaStats } from "./quota.js";
import { E_FILES_PREFIX } from "./results.js";
import { registerEApiRoutes, registerEFileRoutes, registerEStatusRoutes, registerETokenRoutes } from "./routes.js";
import { E_STATUS_PREFIX, EService, type ERequestRecord, type EV4ErrorStatus } from "./service.js";
import type { EContentClass, EImageSize } from "./submit-request.js";
import type { ETokenRecord } from "./tokens.js";
import type { EUploadRecord } from "./uploads.js";

export type { EClientCredentials, EDurationRange, EEmulatorOptions } from "./options.js";
export { DEFAULT_E_CLIENT, E_REQUIRED_SCOPES } from "./options.js";
export type { EDownloadRecord, EOutcome, EPollRecord } from "./jobs.js";
export type { EOperation, EOperationSpec } from "./operations.js";
export { E_OPERATIONS } from "./operations.js";
export type { EQuotaStats } from "./quota.js";
export type { ERequestKind, ERequestRecord, EV4ErrorStatus } from "./service.js";
export type { EStatusBody, EJobResult } from "./status-body.js";
export type { ETokenRecord } from "./tokens.js";
export type { EUploadRecord } from "./uploads.js";

/** What the sandbox knows about one job, for tests to assert on (times are virtual ms). */
export interface EJobView {
  /** The id in the status and cancel paths. */
  id: string;
  /** The urn returned on submit. */
  jobId: string;
  clientId: string;
  operation: EOperation;
  /** The status a read would answer now. */
  status: string;
  statusUrl: string;
  cancelUrl: string;
  prompt?: string;
  contentClass: EContentClass;
  size: EImageSize;
  seeds: number[];
  customModelId?: string;
  sourceUploadId?: string;
  maskUploadId?: string;
  /** The submit body as received. */
  body: unknown;
  submittedAt: number;
  /** When the job ends or ended (Infinity when stuck). */
  finishAt: number;
  outcome: EOutcome;
  /** When it reached succeeded or failed, if it has: the start of "time from completion to capture". */
  completedAt?: number;
  cancelledAt?: number;
  /** The first status read that answered succeeded. */
  firstSucceededReadAt?: number;
  polls: EPollRecord[];
  downloads: EDownloadRecord[];
}

export interface EQuotaReport {
  /** 429 answers over all organisations. */
  rejected: number;
  perOrganization: Record<string, EQuotaStats>;
}

export interface EEmulator extends ProviderEmulator {
  readonly id: "e";
  readonly operations: readonly EOperationSpec[];
  jobs(): EJobView[];
  /** By path id or by urn. */
  job(id: string): EJobView | undefined;
  uploads(): EUploadRecord[];
  /** Every token issued, in order. */
  tokens(): readonly ETokenRecord[];
  /** Every request that reached E's routes (token, API, status host, result links), in order. */
  requests(): readonly ERequestRecord[];
  quota(): EQuotaReport;
  setRenderMs(range: EDurationRange): void;
  /** The next `count` jobs submitted end as `outcome` ("stuck": never leave running). */
  injectOutcome(outcome: Exclude<EOutcome, "succeeded">, count?: number): void;
  /** Changes how an unfinished job ends; false when the job is unknown or already ended. */
  setJobOutcome(id: string, outcome: EOutcome): boolean;
  /** The next `count` jobs answer `value` (e.g. "queued") instead of running for their first `forMs` of virtual time. */
  injectUnknownStatus(value: string, forMs: number, count?: number): void;
  /** The next `count` submits to /v4/images/generate-async answer `status` (counted against the quota). */
  injectV4Error(status: EV4ErrorStatus, count?: number, retryAfterSeconds?: number): void;
  /** Lifetime of tokens issued from now on. */
  setTokenLifetimeSeconds(seconds: number): void;
  /** Every token issued so far expires now. */
  expireTokens(): void;
  setQuota(limits: { perMinute?: number; perDay?: number }): void;
}

/**
 * Emulator of image service E: API under `/e` (client base `{sandbox}/e`),
 * token endpoint under `/e-auth` (auth base `{sandbox}/e-auth`), the
 * tenant-specific status host under `/e-status` on `alternateBaseUrl()`, and
 * result links under `/e-files`. Choices where the spec is silent: README.md here.
 */
export function createEEmulator(options: EEmulatorOptions = {}): EEmulator {
  const resolved = resolveEOptions(options);
  let service: EService | undefined;
  let clockNow: () => number = () => Date.now();

  const registered = (): EService => {
    if (!service) throw new Error("the E emulator is not registered with a sandbox yet");
    return service;
  };

  const findJob = (id: string) => {
    const jobs = registered().jobs;
    return jobs.find(id) ?? jobs.all().find((job) => job.jobId === id);
  };

  const view = (id: string): EJobView | undefined => {
    const job = findJob(id);
    if (!job) return undefined;
    const { request } = job;
    const completedAt = registered().completedAt(job);
    return {
      id: job.id,
      jobId: job.jobId,
      clientId: job.clientId,
      operation: job.operation,
      status: statusAt(job, clockNow(), resolved.cancelledStatus),
      statusUrl: job.statusUrl,
      cancelUrl: job.cancelUrl,
      ...(request.prompt !== undefined ? { prompt: request.prompt } : {}),
      contentClass: job.contentClass,
      size: { ...request.size },
      seeds: [...request.seeds],
      ...(request.customModelId !== undefined ? { customModelId: request.customModelId } : {}),
      ...(request.source ? { sourceUploadId: request.source.id } : {}),
      ...(request.mask ? { maskUploadId: request.mask.id } : {}),
      body: job.body,
      submittedAt: job.submittedAt,
      finishAt: job.finishAt,
      outcome: job.outcome,
      ...(completedAt !== undefined ? { completedAt } : {}),
      ...(job.cancelledAt !== undefined ? { cancelledAt: job.cancelledAt } : {}),
      ...(job.firstSucceededReadAt !== undefined ? { firstSucceededReadAt: job.firstSucceededReadAt } : {}),
      polls: [...job.polls],
      downloads: [...job.downloads],
    };
  };

  return {
    id: "e",
    operations: E_OPERATIONS,
    async register(app: FastifyInstance, context: SandboxContext) {
      const ready = new EService(context, resolved);
      service = ready;
      clockNow = () => context.clock.now();
      await app.register(async (scope) => registerETokenRoutes(scope, ready), { prefix: "/e-auth" });
      await app.register(async (scope) => registerEApiRoutes(scope, ready), { prefix: "/e" });
      await app.register(async (scope) => registerEStatusRoutes(scope, ready), { prefix: E_STATUS_PREFIX });
      await app.register(async (scope) => registerEFileRoutes(scope, ready), { prefix: E_FILES_PREFIX });
    },
    sandboxStats() {
      const ready = registered();
      const now = clockNow();
      const jobs = ready.jobs.all();
      let limitRefusals = 0;
      for (const stats of ready.quota.report().values()) limitRefusals += stats.rejected;
      return {
        tasks: countBy(jobs, (job) => statusAt(job, now, resolved.cancelledStatus)),
        peakConcurrency: peakConcurrency(jobs.map((job) => ({ start: job.submittedAt, end: Math.min(job.finishAt, job.cancelledAt ?? Infinity) }))),
        limitRefusals,
      };
    },
    reset: () => registered().reset(),
    jobs: () => registered().jobs.all().flatMap((job) => view(job.id) ?? []),
    job: view,
    uploads: () => registered().uploads.all(),
    tokens: () => registered().tokens.all(),
    requests: () => registered().requests,
    quota() {
      const perOrganization: Record<string, EQuotaStats> = {};
      let rejected = 0;
      for (const [clientId, stats] of registered().quota.report()) {
        rejected += stats.rejected;
        perOrganization[clientId] = { ...stats };
      }
      return { rejected, perOrganization };
    },
    setRenderMs(range) {
      registered().renderMs = range;
    },
    injectOutcome: (outcome, count = 1) => registered().injectOutcome(outcome, count),
    setJobOutcome(id, outcome) {
      const job = findJob(id);
      if (!job) return false;
      const status = statusAt(job, clockNow(), resolved.cancelledStatus);
      if (status === "succeeded" || status === "failed" || job.cancelledAt !== undefined) return false;
      job.outcome = outcome;
      if (outcome === "stuck") job.finishAt = Infinity;
      else if (!Number.isFinite(job.finishAt)) job.finishAt = clockNow();
      return true;
    },
    injectUnknownStatus: (value, forMs, count = 1) => registered().injectUnknownStatus(value, forMs, count),
    injectV4Error: (status, count = 1, retryAfterSeconds) => registered().injectV4Error(status, count, retryAfterSeconds),
    setTokenLifetimeSeconds(seconds) {
      registered().tokens.lifetimeSeconds = seconds;
    },
    expireTokens: () => registered().tokens.expireAll(),
    setQuota(limits) {
      const { quota } = registered();
      if (limits.perMinute !== undefined) quota.perMinute = Math.max(1, limits.perMinute);
      if (limits.perDay !== undefined) quota.perDay = Math.max(1, limits.perDay);
    },
  };
}

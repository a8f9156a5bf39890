import type { IncomingHttpHeaders } from "node:http";
import { newId } from "../../core/ids.js";
import type { SandboxContext } from "../context.js";
import { authenticate } from "./auth.js";
import { B_CATALOG, findOperation } from "./catalog-entries.js";
import { expandedRecord, summaryRecord } from "./catalog-record.js";
import { BApiError } from "./errors.js";
import { idempotencyKeyOf, IdempotencyKeys, requestFingerprint } from "./idempotency.js";
import { jobObject } from "./job-object.js";
import { chargeMicroUsd, isFinishedAt, isReservingAt, settledAt, statusAt, type BJobError, type BJobOutcome, type BJobRecord } from "./jobs.js";
import { mediaFile, mediaFileName, type BMediaFile } from "./media.js";
import type { BOperation } from "./operation.js";
import { drawRenderTime, resolveBOptions, type BEmulatorOptions, type ResolvedBOptions } from "./options.js";
import { priceMicroUsd, quoteMicroUsd } from "./pricing.js";
import { dailySpend } from "./spend.js";
import { bodyProblems } from "./validation.js";
import { VirtualTimers } from "./virtual-timers.js";
import { webhookUrlProblem } from "./webhook-url.js";
import { BWebhooks } from "./webhooks.js";

/** What a route sends: status, JSON body (or none) and extra headers. */
export interface BAnswer {
  httpStatus: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export const B_FILES_PATH = "/b/files";
const RATE_WINDOW_MS = 60_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function retryAfterSeconds(waitMs: number): string {
  return String(Math.max(1, Math.ceil(waitMs / 1000)));
}

/** The state and rules of the emulated account; routes.ts maps HTTP onto it. */
export class BService {
  options: ResolvedBOptions;
  readonly jobs = new Map<string, BJobRecord>();
  private idempotency = new IdempotencyKeys();
  private readonly submitTimes = new Map<string, number[]>();
  private readonly failNext: BJobError[] = [];
  /** Starting balance plus every later adjustment; settled charges are taken from it when read. */
  private balanceBaseMicroUsd: number;
  submitCount = 0;
  rejected429Count = 0;
  private context: SandboxContext | undefined;
  timers: VirtualTimers | undefined;
  webhooks: BWebhooks | undefined;

  constructor(private rawOptions: BEmulatorOptions) {
    this.options = resolveBOptions(rawOptions);
    this.balanceBaseMicroUsd = this.options.balanceMicroUsd;
  }

  bind(context: SandboxContext): void {
    this.context = context;
    this.timers = new VirtualTimers(context.clock);
    this.webhooks = new BWebhooks({
      clock: context.clock,
      timers: this.timers,
      options: () => this.options,
      random: context.random,
      payloadOf: (jobId) => {
        const job = this.jobs.get(jobId);
        return job ? jobObject(job, this.now(), this.outputUrl, false) : null;
      },
    });
  }

  async close(): Promise<void> {
    this.timers?.close();
    await this.webhooks?.close();
  }

  /**
   * Forgets every job, idempotency key, submit time, webhook delivery and
   * injected failure, and the balance is the starting one again; knobs set
   * with `configure` stay.
   */
  async reset(): Promise<void> {
    await this.close();
    this.jobs.clear();
    this.idempotency = new IdempotencyKeys();
    this.submitTimes.clear();
    this.failNext.length = 0;
    this.balanceBaseMicroUsd = this.options.balanceMicroUsd;
    this.submitCount = 0;
    this.rejected429Count = 0;
    if (this.context) this.bind(this.context);
  }

  configure(changes: BEmulatorOptions): void {
    const { balanceMicroUsd, ...knobs } = changes;
    this.rawOptions = { ...this.rawOptions, ...knobs };
    this.options = resolveBOptions({ ...this.rawOptions, balanceMicroUsd: this.options.balanceMicroUsd });
    if (balanceMicroUsd !== undefined) this.setBalance(balanceMicroUsd);
  }

  failNextJobs(count: number, error: BJobError): void {
    for (let index = 0; index < count; index++) this.failNext.push({ ...error });
  }

  now(): number {
    if (!this.context) throw new Error("the B emulator is not registered with a sandbox yet");
    return this.context.clock.now();
  }

  authenticate(headers: IncomingHttpHeaders): string {
    return authenticate(headers, this.options.apiKeys);
  }

  // --- money ---

  balanceMicroUsd(): number {
    const now = this.context ? this.now() : 0;
    let settled = 0;
    for (const job of this.jobs.values()) if (!job.rejectedAtSubmit && settledAt(job) <= now) settled += chargeMicroUsd(job);
    return this.balanceBaseMicroUsd - settled;
  }

  setBalance(balanceMicroUsd: number): void {
    if (!Number.isSafeInteger(balanceMicroUsd)) throw new RangeError("balanceMicroUsd must be an integer");
    this.balanceBaseMicroUsd += balanceMicroUsd - this.balanceMicroUsd();
  }

  settledChargesByKey(): Record<string, number> {
    const now = this.now();
    const totals: Record<string, number> = Object.fromEntries(this.options.apiKeys.map((key) => [key, 0]));
    for (const job of this.jobs.values()) {
      if (job.rejectedAtSubmit || settledAt(job) > now) continue;
      totals[job.apiKey] = (totals[job.apiKey] ?? 0) + chargeMicroUsd(job);
    }
    return totals;
  }

  /** Prices of accepted jobs whose charge is not final yet: a submit may only spend what they leave. */
  private reservedMicroUsd(now: number): number {
    let reserved = 0;
    for (const job of this.jobs.values()) if (isReservingAt(job, now)) reserved += job.priceMicroUsd;
    return reserved;
  }

  balance(): BAnswer {
    return { httpStatus: 200, body: { balance_micro_usd: this.balanceMicroUsd(), unit: "micro_usd" } };
  }

  spend(query: { start_date?: unknown; end_date?: unknown }): BAnswer {
    return { httpStatus: 200, body: dailySpend(this.jobs.values(), this.now(), query) };
  }

  // --- catalog ---

  catalogList(): BAnswer {
    return { httpStatus: 200, body: { data: B_CATALOG.map(summaryRecord), count: B_CATALOG.length } };
  }

  catalogRecord(apiPath: string, expand: unknown): BAnswer {
    const operation = this.operationAt(apiPath);
    const expanded = typeof expand === "string" && expand.split(",").includes("inputs");
    return { httpStatus: 200, body: expanded ? expandedRecord(operation) : summaryRecord(operation) };
  }

  /** spec B: a quote prices a body without running it, needs no key and never reports balance or validity. */
  quote(apiPath: string, body: unknown): BAnswer {
    const operation = this.operationAt(apiPath);
    const input = isObject(body) ? Object.fromEntries(Object.entries(body).filter(([name]) => name !== "webhook_url")) : body;
    return { httpStatus: 200, body: { api_id: operation.apiId, amount_micro_usd: quoteMicroUsd(operation, input), currency: "USD" } };
  }

  /**
   * spec B rule 1: slashes inside api_id are literal and sent as is, so an
   * encoded slash (%2F) names no operation. Other escapes are decoded.
   */
  private operationAt(apiPath: string): BOperation {
    let apiId: string | undefined;
    if (!/%2f/i.test(apiPath)) {
      try {
        apiId = decodeURIComponent(apiPath);
      } catch {
        apiId = undefined;
      }
    }
    const operation = apiId === undefined ? undefined : findOperation(apiId);
    if (!operation) throw new BApiError(404, "operation_not_found", `no operation ${apiPath} in the catalog`);
    return operation;
  }

  // --- jobs ---

  /**
   * `POST /v1/media/{vendor}/{model}/{function}`. Order: operation (404),
   * webhook_url (400), Idempotency-Key (replay or 422), rate and concurrency
   * (429, nothing created), then a job: failed at once for a body the
   * input_schema refuses, an unavailable operation or an insufficient
   * balance; queued otherwise.
   */
  submit(apiKey: string, apiPath: string, headers: IncomingHttpHeaders, body: unknown): BAnswer {
    const operation = this.operationAt(apiPath);
    const now = this.now();
    let webhookUrl: string | null = null;
    if (isObject(body) && Object.hasOwn(body, "webhook_url")) {
      const problem = webhookUrlProblem(body.webhook_url, this.options.allowLocalWebhookUrls);
      if (problem) throw new BApiError(400, "invalid_webhook_url", problem);
      webhookUrl = body.webhook_url as string;
    }
    const idempotencyKey = idempotencyKeyOf(headers["idempotency-key"]);
    const fingerprint = requestFingerprint(operation.apiId, body);
    if (idempotencyKey !== null) {
      const existing = this.jobs.get(this.idempotency.find(apiKey, idempotencyKey) ?? "");
      if (existing) {
        if (existing.fingerprint !== fingerprint) {
          throw new BApiError(422, "idempotency_key_reused", "this Idempotency-Key was used with another body; use a new key");
        }
        // spec B Idempotency 1: the existing job as it is, a failed one included (billing null, as on every submit answer).
        return { httpStatus: 200, body: jobObject(existing, now, this.outputUrl, false), headers: { "idempotent-replayed": "true" } };
      }
    }
    const refusal = this.limitRefusal(apiKey, operation, now);
    if (refusal) return refusal;
    this.recordSubmitTime(apiKey, now);

    const job = this.createJob(apiKey, operation, body, fingerprint, idempotencyKey, webhookUrl, now);
    this.jobs.set(job.id, job);
    if (idempotencyKey !== null) this.idempotency.remember(apiKey, idempotencyKey, job.id);
    if (webhookUrl !== null) this.webhooks?.schedule(job.id, webhookUrl, job.finishesAt);
    const httpStatus = job.rejectedAtSubmit ? this.options.rejectedSubmitStatus : 200;
    return { httpStatus, body: jobObject(job, now, this.outputUrl, false) };
  }

  private createJob(
    apiKey: string,
    operation: BOperation,
    body: unknown,
    fingerprint: string,
    idempotencyKey: string | null,
    webhookUrl: string | null,
    now: number,
  ): BJobRecord {
    const input = isObject(body) ? Object.fromEntries(Object.entries(body).filter(([name]) => name !== "webhook_url")) : {};
    const random = this.context!.random;
    const job: BJobRecord = {
      id: newId("req", now),
      apiKey,
      operation,
      body: input,
      fingerprint,
      idempotencyKey,
      webhookUrl,
      createdAt: now,
      startsAt: now,
      finishesAt: now,
      outcome: { kind: "completed" },
      rejectedAtSubmit: true,
      priceMicroUsd: 0,
      settlementDelayMs: this.options.settlementDelayMs,
      billingUnavailableMs: this.options.billingUnavailableMs,
      seed: typeof input.seed === "number" ? input.seed : Math.floor(random() * 2 ** 31),
      deletedAt: null,
      reads: 0,
    };
    const reject = (error: BJobError): BJobRecord => ({ ...job, outcome: { kind: "failed", error } });

    if (!isObject(body)) return reject({ code: "invalid_request", message: "the body must be a JSON object" });
    const problems = bodyProblems(operation, input);
    if (problems) return reject({ code: "invalid_request", message: problems });
    if (operation.availability !== "available") {
      return reject({ code: "operation_unavailable", message: `${operation.apiId} is not available; check the catalog` });
    }
    const price = priceMicroUsd(operation, input);
    if (price === null) return reject({ code: "invalid_request", message: "no published rate for this combination" });
    const spendable = this.balanceMicroUsd() - this.reservedMicroUsd(now);
    if (price > spendable) {
      return reject({ code: "insufficient_balance", message: `the job costs ${price} micro-USD; ${Math.max(0, spendable)} is available` });
    }

    const startsAt = now + this.options.queueTimeMs;
    const finishesAt = startsAt + drawRenderTime(this.options.renderTimeMs, random);
    const injected = this.failNext.shift();
    let outcome: BJobOutcome = { kind: "completed" };
    if (injected) outcome = { kind: "failed", error: injected };
    else if (this.options.failureProbability > 0 && random() < this.options.failureProbability) {
      outcome = { kind: "failed", error: { code: "generation_failed", message: "the generation failed upstream" } };
    }
    return { ...job, startsAt, finishesAt, outcome, rejectedAtSubmit: false, priceMicroUsd: price };
  }

  /** Unfinished accepted jobs of a key. */
  activeJobs(apiKey: string, now: number): BJobRecord[] {
    return [...this.jobs.values()].filter((job) => job.apiKey === apiKey && !isFinishedAt(job, now));
  }

  private recordSubmitTime(apiKey: string, now: number): void {
    const times = (this.submitTimes.get(apiKey) ?? []).filter((at) => at > now - RATE_WINDOW_MS);
    times.push(now);
    this.submitTimes.set(apiKey, times);
  }

  /**
   * spec B Errors: "Rate or concurrency exceeded → HTTP 429 with a failed
   * envelope carrying the job object; read Retry-After". Ceilings are not
   * shown: `concurrencyLimit` unfinished jobs per key (default 8) and,
   * when set, `submitsPerMinute` per key. Nothing is created: the envelope's
   * job id is never stored (a read of it answers 404). Retry-After: whole
   * virtual seconds until the key's first unfinished job finishes (or the
   * oldest submit leaves the minute window), at least 1.
   */
  private limitRefusal(apiKey: string, operation: BOperation, now: number): BAnswer | null {
    let error: BJobError | null = null;
    let waitMs = 0;
    const active = this.activeJobs(apiKey, now);
    const perMinute = this.options.submitsPerMinute;
    const recent = (this.submitTimes.get(apiKey) ?? []).filter((at) => at > now - RATE_WINDOW_MS);
    if (active.length >= this.options.concurrencyLimit) {
      error = { code: "concurrency_limit_exceeded", message: `${active.length} jobs are queued or running on this key; the limit is ${this.options.concurrencyLimit}` };
      waitMs = Math.min(...active.map((job) => job.finishesAt)) - now;
    } else if (perMinute !== null && recent.length >= perMinute) {
      error = { code: "rate_limit_exceeded", message: `more than ${perMinute} submits in a minute on this key` };
      waitMs = Math.min(...recent) + RATE_WINDOW_MS - now;
    }
    if (!error) return null;
    this.rejected429Count += 1;
    const created = new Date(now).toISOString();
    const job = { id: newId("req", now), api_id: operation.apiId, status: "failed", created_at: created, finished_at: created, error, usage: {}, billing: null };
    return { httpStatus: 429, body: { status: "failed", error, job }, headers: { "retry-after": retryAfterSeconds(waitMs) } };
  }

  private jobOrThrow(id: string): BJobRecord {
    const job = this.jobs.get(id);
    if (!job) throw new BApiError(404, "job_not_found", `no job ${id}`);
    return job;
  }

  read(id: string): BAnswer {
    const job = this.jobOrThrow(id);
    job.reads += 1;
    return { httpStatus: 200, body: jobObject(job, this.now(), this.outputUrl, true) };
  }

  /** spec B: `{url}` once completed, 409 before. A failed job is 409 too (it never completes); erased media is 410. */
  content(id: string): BAnswer {
    const job = this.jobOrThrow(id);
    const status = statusAt(job, this.now());
    if (job.deletedAt !== null) throw new BApiError(410, "media_deleted", "the job's media was deleted");
    if (status === "failed") throw new BApiError(409, "job_failed", "the job failed; it has no content");
    if (status !== "completed") throw new BApiError(409, "job_not_completed", `the job is ${status}`);
    // A fresh address each call, valid resultUrlTtlMs from now.
    const url = this.context!.signedUrls.sign(this.context!.baseUrl(), this.filePath(job), this.options.resultUrlTtlMs);
    return { httpStatus: 200, body: { url } };
  }

  /**
   * spec B: DELETE erases stored media and prompts. The sandbox keeps the
   * job (status, usage, billing still read) but drops every free-text and URL
   * field of its body and marks it `deleted_at`; its output address and
   * /content then answer 410. An unfinished job answers 409; a second DELETE 204.
   */
  remove(id: string): BAnswer {
    const job = this.jobOrThrow(id);
    const now = this.now();
    if (!isFinishedAt(job, now)) throw new BApiError(409, "job_not_completed", `the job is ${statusAt(job, now)}; delete it once it has finished`);
    if (job.deletedAt === null) {
      job.deletedAt = now;
      for (const field of job.operation.fields) if (field.type === "string" && !field.enum) delete job.body[field.name];
    }
    return { httpStatus: 204 };
  }

  private filePath(job: BJobRecord): string {
    return `${B_FILES_PATH}/${job.id}/${mediaFileName(job)}`;
  }

  /** The output address in the job object: valid resultUrlTtlMs from the job's completion. */
  private readonly outputUrl = (job: BJobRecord): string => {
    const ttlMs = job.finishesAt + this.options.resultUrlTtlMs - this.now();
    return this.context!.signedUrls.sign(this.context!.baseUrl(), this.filePath(job), ttlMs);
  };

  /** `GET /b/files/{id}/{name}?expires&sig`: no key, the signature is the credential. */
  file(jobId: string, name: string, query: { expires?: unknown; sig?: unknown }): BMediaFile {
    const check = this.context!.signedUrls.check(`${B_FILES_PATH}/${jobId}/${name}`, query);
    if (check === "bad_signature") throw new BApiError(403, "bad_signature", "the address's signature does not match");
    if (check === "expired") throw new BApiError(403, "url_expired", "the address has expired; read /content for a new one");
    const job = this.jobOrThrow(jobId);
    if (job.deletedAt !== null) throw new BApiError(410, "media_deleted", "the job's media was deleted");
    if (statusAt(job, this.now()) !== "completed" || name !== mediaFileName(job)) throw new BApiError(404, "not_found", "no such file");
    return mediaFile(job);
  }
}

import { randomUUID } from "node:crypto";
import type { SandboxContext } from "../context.js";
import { DAccount } from "./account.js";
import { authenticate } from "./auth.js";
import { findEndpoint } from "./endpoints.js";
import { DApiError } from "./errors.js";
import { statusAt, type DJobOutcome, type DJobRecord, type DJobStatus } from "./jobs.js";
import { drawRenderTime, resolveDOptions, type DEmulatorOptions, type ResolvedDOptions } from "./options.js";
import { jobCostMicroUsd } from "./pricing.js";
import { DResults } from "./results.js";
import { parseSubmitRequest } from "./validation.js";

/** The polling path, under its own `/d-` prefix (and served to the client on the other host name). */
export const D_POLLING_PREFIX = "/d-poll";
export const D_POLLING_PATH = "/v1/get_result";

export interface DSubmitAnswer {
  id: string;
  polling_url: string;
}

/** `status` is a known value or an injected unknown one; `result` only when Ready. */
export interface DPollAnswer {
  id: string;
  status: DJobStatus | (string & {});
  result?: { sample: string };
}

/** A seed the sandbox picks when none is given: a non-negative 31-bit integer. */
const SEED_RANGE = 2 ** 31;

/** Everything service D does, independent of HTTP routing. Created with the emulator, bound to a sandbox at registration. */
export class DService {
  account: DAccount;
  readonly jobs = new Map<string, DJobRecord>();
  /** Submit requests that passed the key check, whatever their answer. */
  submitCount = 0;
  rejected429Count = 0;
  rejected402Count = 0;
  private readonly injectedOutcomes: DJobOutcome[] = [];
  private readonly injectedUnknownStatuses: { status: string; polls: number }[] = [];
  private bound?: { context: SandboxContext; results: DResults };

  constructor(readonly options: ResolvedDOptions) {
    this.account = new DAccount(options.apiKeys, options.balanceMicroUsd);
  }

  bind(context: SandboxContext): DResults {
    const results = new DResults(context, this.jobs, this.options.sampleTtlMs);
    this.bound = { context, results };
    return results;
  }

  /** Virtual now, or undefined before the emulator is registered with a sandbox. */
  now(): number | undefined {
    return this.bound?.context.clock.now();
  }

  authenticate(headers: Record<string, string | string[] | undefined>): string {
    return authenticate(headers, this.account.apiKeys);
  }

  submit(apiKey: string, endpointIdentifier: string, body: unknown): DSubmitAnswer {
    const { context } = this.registered();
    const endpoint = findEndpoint(endpointIdentifier);
    if (!endpoint) {
      throw new DApiError(404, "endpoint_not_found", `no hosted endpoint ${endpointIdentifier} (the dev tier and base variants are not offered)`);
    }
    const referenceLimit = this.options.referenceLimits[endpoint.id] ?? endpoint.referenceLimit;
    const request = parseSubmitRequest(body, endpoint, referenceLimit);
    const chargeMicroUsd = jobCostMicroUsd(endpoint, request.outputSize, request.references, this.options.rates);

    const now = context.clock.now();
    try {
      this.account.checkAdmission(
        endpoint,
        apiKey,
        chargeMicroUsd,
        { perKey: this.options.concurrencyLimit, contextEditingPerKey: this.options.contextEditingConcurrencyLimit },
        now,
      );
    } catch (error) {
      if (error instanceof DApiError && error.httpStatus === 429) this.rejected429Count += 1;
      if (error instanceof DApiError && error.httpStatus === 402) this.rejected402Count += 1;
      throw error;
    }

    const unknownStatus = this.injectedUnknownStatuses.shift() ?? this.drawUnknownStatus(context);
    const job: DJobRecord = {
      id: randomUUID(),
      endpoint: endpoint.id,
      apiKey,
      request,
      seed: request.seed ?? Math.floor(context.random() * SEED_RANGE),
      chargeMicroUsd,
      createdAt: now,
      finishesAt: now + drawRenderTime(this.options.renderTimeMs, context.random),
      outcome: this.injectedOutcomes.shift() ?? this.drawOutcome(context),
      ...(unknownStatus ? { unknownStatus: { status: unknownStatus.status, pollsLeft: unknownStatus.polls } } : {}),
      polls: 0,
      downloads: 0,
    };
    this.account.take(job, now);
    this.jobs.set(job.id, job);
    return { id: job.id, polling_url: this.pollingUrl(context, job.id) };
  }

  /**
   * The poll answer. An id the service does not know answers "Task not found"
   * (200): the spec names no status code for it, and a status value keeps the
   * answer in the poll's own shape.
   */
  poll(id: string): DPollAnswer {
    const { context, results } = this.registered();
    const job = this.jobs.get(id);
    if (!job) return { id, status: "Task not found" };
    job.polls += 1;
    if (job.unknownStatus && job.unknownStatus.pollsLeft > 0) {
      job.unknownStatus.pollsLeft -= 1;
      return { id, status: job.unknownStatus.status };
    }
    const status = statusAt(job, context.clock.now());
    if (status === "Ready") return { id, status, result: { sample: results.sampleUrl(job) } };
    return { id, status };
  }

  configure(changes: DEmulatorOptions): void {
    const { apiKeys, balanceMicroUsd, ...knobs } = changes;
    const resolved = resolveDOptions({ ...this.options, ...knobs });
    Object.assign(this.options, resolved, { apiKeys: this.options.apiKeys, balanceMicroUsd: this.options.balanceMicroUsd });
    if (apiKeys !== undefined) {
      this.account.replaceKeys(apiKeys);
      this.options.apiKeys = [...apiKeys];
    }
    if (balanceMicroUsd !== undefined) this.account.balanceMicroUsd = balanceMicroUsd;
  }

  /** Forgets every job, counter and injected outcome; the account has its starting balance and no active task again (knobs set with `configure` stay). */
  reset(): void {
    this.jobs.clear();
    this.account = new DAccount(this.options.apiKeys, this.options.balanceMicroUsd);
    this.submitCount = 0;
    this.rejected429Count = 0;
    this.rejected402Count = 0;
    this.injectedOutcomes.length = 0;
    this.injectedUnknownStatuses.length = 0;
  }

  failNextJobs(outcome: Exclude<DJobOutcome, "Ready">, count: number): void {
    for (let index = 0; index < count; index++) this.injectedOutcomes.push(outcome);
  }

  injectUnknownStatus(status: string, polls: number, jobCount: number): void {
    for (let index = 0; index < jobCount; index++) this.injectedUnknownStatuses.push({ status, polls });
  }

  /** The host a poll must arrive on: the alternate host name the polling URL was built from. */
  pollingHostname(): string {
    return new URL(this.registered().context.alternateBaseUrl()).hostname;
  }

  /**
   * spec D: `polling_url` is an address "to poll; use it as given". The
   * sandbox puts it on the other host name and under another prefix than
   * submit, so a client that rebuilds it from the submit address fails.
   */
  private pollingUrl(context: SandboxContext, id: string): string {
    return `${context.alternateBaseUrl()}${D_POLLING_PREFIX}${D_POLLING_PATH}?id=${encodeURIComponent(id)}`;
  }

  private drawOutcome(context: SandboxContext): DJobOutcome {
    const { errorRate, failedRate } = this.options.outcomeRates;
    if (errorRate === 0 && failedRate === 0) return "Ready";
    const draw = context.random();
    if (draw < errorRate) return "Error";
    if (draw < errorRate + failedRate) return "Failed";
    return "Ready";
  }

  private drawUnknownStatus(context: SandboxContext): { status: string; polls: number } | undefined {
    const rule = this.options.unknownStatus;
    if (!rule || rule.polls <= 0) return undefined;
    const probability = rule.probability ?? 1;
    if (probability < 1 && context.random() >= probability) return undefined;
    return { status: rule.status, polls: rule.polls };
  }

  private registered(): { context: SandboxContext; results: DResults } {
    if (!this.bound) throw new Error("the D emulator is not registered with a sandbox yet");
    return this.bound;
  }
}

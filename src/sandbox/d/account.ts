import { D_ENDPOINTS, type DEndpoint } from "./endpoints.js";
import { DApiError } from "./errors.js";
import { isActiveAt, type DJobRecord } from "./jobs.js";
import { MICRO_USD_PER_CREDIT } from "./pricing.js";

export interface DConcurrencyLimits {
  perKey: number;
  contextEditingPerKey: number;
}

/**
 * The one account behind every configured key: one credit balance (keys are
 * created on the account's dashboard, spec D Authentication 2) and, per key,
 * the tasks still active.
 */
export class DAccount {
  private keys: ReadonlySet<string>;
  private balance: number;
  private readonly activeByKey = new Map<string, DJobRecord[]>();
  /** The most tasks active at once on any one key. */
  peakActive = 0;

  constructor(apiKeys: readonly string[], balanceMicroUsd: number) {
    this.keys = new Set(apiKeys);
    this.balance = balanceMicroUsd;
  }

  get apiKeys(): ReadonlySet<string> {
    return this.keys;
  }

  replaceKeys(apiKeys: readonly string[]): void {
    if (apiKeys.length === 0) throw new RangeError("the D emulator needs at least one API key");
    this.keys = new Set(apiKeys);
  }

  get balanceMicroUsd(): number {
    return this.balance;
  }

  set balanceMicroUsd(value: number) {
    if (!Number.isSafeInteger(value)) throw new RangeError(`balanceMicroUsd must be an integer, got ${value}`);
    this.balance = value;
  }

  /** The key's tasks still active at `now` (finished ones are dropped as a side effect). */
  active(apiKey: string, now: number): readonly DJobRecord[] {
    const still = (this.activeByKey.get(apiKey) ?? []).filter((job) => isActiveAt(job, now));
    this.activeByKey.set(apiKey, still);
    return still;
  }

  /**
   * Refuses a job the account cannot take now, before anything is created or
   * charged. spec D Errors: 429 beyond the allowed concurrent tasks (24 per
   * key; 6 on the older context-editing endpoint, whose tasks also count in
   * the 24), 402 when credits do not cover it. Concurrency is checked first:
   * a job that could not run anyway is not a billing question.
   */
  checkAdmission(endpoint: DEndpoint, apiKey: string, costMicroUsd: number, limits: DConcurrencyLimits, now: number): void {
    const active = this.active(apiKey, now);
    if (active.length >= limits.perKey) {
      throw new DApiError(429, "too_many_active_tasks", `at most ${limits.perKey} tasks may be active at once`);
    }
    if (endpoint.contextEditing) {
      const activeContextEditing = active.filter((job) => D_ENDPOINTS[job.endpoint].contextEditing).length;
      if (activeContextEditing >= limits.contextEditingPerKey) {
        throw new DApiError(429, "too_many_active_tasks", `at most ${limits.contextEditingPerKey} ${endpoint.id} tasks may be active at once`);
      }
    }
    if (costMicroUsd > this.balance) {
      const credits = (micro: number) => (micro / MICRO_USD_PER_CREDIT).toFixed(2);
      throw new DApiError(
        402,
        "insufficient_credits",
        `the job costs ${credits(costMicroUsd)} credits and the balance is ${credits(this.balance)} credits`,
      );
    }
  }

  /** Charges an admitted job and counts it as active. */
  take(job: DJobRecord, now: number): void {
    this.balance -= job.chargeMicroUsd;
    const active = [...this.active(job.apiKey, now), job];
    this.activeByKey.set(job.apiKey, active);
    this.peakActive = Math.max(this.peakActive, active.length);
  }
}

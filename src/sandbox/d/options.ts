import type { DEndpointId, DPricedEndpointId } from "./endpoints.js";
import { D_RATES, type DRate } from "./pricing.js";

/** Virtual milliseconds: a fixed value, or a range each job draws from uniformly (seeded randomness). */
export type DRenderTime = number | { minMs: number; maxMs: number };

/** How jobs end, drawn per job at submit. */
export interface DOutcomeRates {
  /** Chance (0..1) that a job ends in `Error`. Default 0. */
  errorRate?: number;
  /** Chance (0..1) that a job ends in `Failed`. Default 0. */
  failedRate?: number;
}

/**
 * Status values outside the known ones, answered to a job's first `polls`
 * polls before its real status (spec D: the full set of status values is not
 * shown, so a client must keep polling on a value it does not know).
 */
export interface DUnknownStatusRule {
  /** e.g. "Request Moderated", "Task not found", "Processing". */
  status: string;
  /** How many polls of the job get it. */
  polls: number;
  /** Chance (0..1) that a new job is affected. Default 1. */
  probability?: number;
}

export interface DEmulatorOptions {
  /** Keys of the one account (they share its balance; each has its own concurrency). Default ["sandbox-d-key"]. */
  apiKeys?: string[];
  /** The account's starting balance, micro-USD. Default 1,000,000,000 (1,000 USD = 100,000 credits). */
  balanceMicroUsd?: number;
  /** How long a job renders, virtual ms. Default 2,000 to 8,000. */
  renderTimeMs?: DRenderTime;
  /** Lifetime of `result.sample`, virtual ms, counted from the moment the job became Ready. Default ten minutes (spec D). */
  sampleTtlMs?: number;
  /** Active tasks per key (spec D: 24). */
  concurrencyLimit?: number;
  /** Active gen-ctx-max tasks per key (spec D: 6), counted in `concurrencyLimit` as well. */
  contextEditingConcurrencyLimit?: number;
  /** Overrides of the per-endpoint reference-image limits (defaults: compact 4, max/pro/flex 8, gen-ctx-max 4). */
  referenceLimits?: Partial<Record<DEndpointId, number>>;
  /** Overrides of the pricing-page rates. */
  rates?: Partial<Record<DPricedEndpointId, DRate>>;
  outcomeRates?: DOutcomeRates;
  /** Unknown statuses drawn for new jobs; null or absent: none. */
  unknownStatus?: DUnknownStatusRule | null;
  /**
   * The polling URL lives on another host (`localhost`) than submit
   * (`127.0.0.1`); a poll that reaches the polling path through the submit
   * host answers 404, as a different real host would not serve it. Default true.
   */
  pollingHostCheck?: boolean;
}

export interface ResolvedDOptions {
  apiKeys: string[];
  balanceMicroUsd: number;
  renderTimeMs: DRenderTime;
  sampleTtlMs: number;
  concurrencyLimit: number;
  contextEditingConcurrencyLimit: number;
  referenceLimits: Partial<Record<DEndpointId, number>>;
  rates: Record<DPricedEndpointId, DRate>;
  outcomeRates: Required<DOutcomeRates>;
  unknownStatus: DUnknownStatusRule | null;
  pollingHostCheck: boolean;
}

export const DEFAULT_D_API_KEY = "sandbox-d-key";
/** spec D Limits: result.sample is valid ten minutes. */
export const SAMPLE_TTL_MS = 10 * 60_000;
/** spec D Limits "Concurrent tasks": 24; the older context-editing endpoint 6. */
export const D_CONCURRENCY_LIMIT = 24;
export const D_CONTEXT_EDITING_CONCURRENCY_LIMIT = 6;

export function resolveDOptions(options: DEmulatorOptions): ResolvedDOptions {
  const apiKeys = options.apiKeys ?? [DEFAULT_D_API_KEY];
  if (apiKeys.length === 0) throw new RangeError("the D emulator needs at least one API key");
  const balanceMicroUsd = options.balanceMicroUsd ?? 1_000_000_000;
  if (!Number.isSafeInteger(balanceMicroUsd)) throw new RangeError("balanceMicroUsd must be an integer");
  return {
    apiKeys,
    balanceMicroUsd,
    renderTimeMs: options.renderTimeMs ?? { minMs: 2_000, maxMs: 8_000 },
    sampleTtlMs: options.sampleTtlMs ?? SAMPLE_TTL_MS,
    concurrencyLimit: options.concurrencyLimit ?? D_CONCURRENCY_LIMIT,
    contextEditingConcurrencyLimit: options.contextEditingConcurrencyLimit ?? D_CONTEXT_EDITING_CONCURRENCY_LIMIT,
    referenceLimits: { ...options.referenceLimits },
    rates: { ...D_RATES, ...options.rates },
    outcomeRates: { errorRate: options.outcomeRates?.errorRate ?? 0, failedRate: options.outcomeRates?.failedRate ?? 0 },
    unknownStatus: options.unknownStatus ?? null,
    pollingHostCheck: options.pollingHostCheck ?? true,
  };
}

export function drawRenderTime(renderTime: DRenderTime, random: () => number): number {
  if (typeof renderTime === "number") return renderTime;
  return Math.round(renderTime.minMs + (renderTime.maxMs - renderTime.minMs) * random());
}

import type { Job } from "../core/job.js";
import { PROVIDER_IDS, type ProviderId } from "../core/provider-id.js";
import { validatedOf } from "../engine/context.js";
import type { ProviderLimits, ValidatedRequest } from "../providers/adapter.js";
import type { ProviderHalt, RateWindowUsage } from "../store/store.js";
import { scopeOf, type Caller } from "./caller.js";
import type { Runtime } from "./runtime.js";

/** Recent errors are looked for among this many of the newest jobs the caller can see: one bounded read. */
const RECENT_JOBS = 100;
const ERRORS_SHOWN = 3;

export interface ProviderState {
  id: ProviderId;
  name: string;
  configured: boolean;
  missing: string[];
  slots: Array<{ pool: string; inUse: number; capacity: number; pausedUntil: number | null }>;
  rates: RateWindowUsage[];
  halt: ProviderHalt | null;
  errors: Array<{ jobId: string; ref: string; code: string; at: number }>;
}

/** What a provider's limits are for a request like `job` (or, with none seen, for a bare request; null when the adapter cannot say). */
function limitsOf(runtime: Runtime, provider: ProviderId, job: Job | undefined): ProviderLimits | null {
  const adapter = runtime.providers.get(provider)?.adapter;
  if (!adapter) return null;
  const request: ValidatedRequest = job ? validatedOf(job) : { provider, model: "", operation: null, body: {}, warnings: [], facts: {} };
  try {
    return adapter.limits(request);
  } catch {
    return null;
  }
}

/**
 * Each provider as the panel shows it: configured or what is missing, slots
 * in use against the cap (as `GET /v1/providers`), what its rate windows
 * count now, its halt, and the errors among the newest jobs the caller can see.
 */
export async function providerStates(runtime: Runtime, caller: Caller, now: number): Promise<ProviderState[]> {
  const store = await runtime.store();
  const tenant = scopeOf(caller);
  const [pools, halts, recent] = await Promise.all([
    store.poolStatus(),
    store.halts(),
    store.listJobs({ newestFirst: true, limit: RECENT_JOBS, ...(tenant !== undefined ? { tenant } : {}) }),
  ]);
  const states: ProviderState[] = [];
  for (const id of PROVIDER_IDS) {
    const entry = runtime.providers.get(id);
    const limits = limitsOf(runtime, id, recent.find((job) => job.provider === id));
    const slots = new Map<string, ProviderState["slots"][number]>();
    for (const pool of limits?.slotPools ?? []) slots.set(pool.key, { pool: pool.key, inUse: 0, capacity: pool.capacity, pausedUntil: null });
    for (const pool of pools.filter((each) => each.key.startsWith(`${id}:`))) {
      slots.set(pool.key, { pool: pool.key, inUse: pool.held, capacity: Math.min(pool.configuredCapacity, pool.learnedCapacity), pausedUntil: pool.blockedUntil > now ? pool.blockedUntil : null });
    }
    const errors = recent
      .filter((job) => job.provider === id && job.error !== null)
      .slice(0, ERRORS_SHOWN)
      .map((job) => ({ jobId: job.id, ref: job.ref, code: job.error!.code, at: job.finishedAt ?? job.updatedAt }));
    states.push({
      id,
      name: entry?.adapter?.displayName ?? id.toUpperCase(),
      configured: entry !== undefined && entry.adapter !== null && entry.missing.length === 0,
      missing: entry?.missing ?? [],
      slots: [...slots.values()],
      rates: limits?.rateWindows.length ? await store.rateWindowUsage(limits.rateWindows, now) : [],
      halt: halts.find((halt) => halt.provider === id) ?? null,
      errors,
    });
  }
  return states;
}

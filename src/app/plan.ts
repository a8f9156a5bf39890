import type { ProviderId } from "../core/provider-id.js";
import type { Store } from "../store/store.js";
import { entryFor, type PreparedJob } from "./prepare.js";
import type { Runtime } from "./runtime.js";

export interface ProviderPlan {
  provider: ProviderId;
  jobs: number;
  /** The tightest slot pool, or null when the provider has no concurrency cap. */
  slots: number | null;
  waves: number | null;
  /** Median observed render time of finished jobs of these models, or null when none finished yet. */
  renderMs: number | null;
  /** Lower bound from request-rate windows (a submit and one poll per job at least). */
  rateFloorMs: number;
  expectedWallMs: number | null;
  estimateMicroUsd: number;
  unpriced: number;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** waves = ceil(tasks / slots); wall time ≈ waves × observed render time (and never below the rate floor). */
export async function planBatch(runtime: Runtime, store: Store, prepared: PreparedJob[]): Promise<ProviderPlan[]> {
  const groups = new Map<ProviderId, PreparedJob[]>();
  for (const item of prepared) {
    const group = groups.get(item.validated.provider);
    if (group) group.push(item);
    else groups.set(item.validated.provider, [item]);
  }
  const plans: ProviderPlan[] = [];
  for (const [provider, items] of groups) {
    const adapter = entryFor(runtime, provider).adapter;
    const limits = items.map((item) => adapter.limits(item.validated));
    let slots: number | null = null;
    for (const limit of limits) for (const pool of limit.slotPools) slots = slots === null ? pool.capacity : Math.min(slots, pool.capacity);
    const samples: number[] = [];
    for (const model of new Set(items.map((item) => item.validated.model))) {
      samples.push(...(await store.recentRenderSamples(provider, model, 50)).map((sample) => sample.doneElapsedMs));
    }
    const renderMs = median(samples);
    const waves = slots ? Math.ceil(items.length / slots) : null;
    const windows = limits[0]?.rateWindows ?? [];
    const requests = items.length * 2;
    const rateFloorMs = Math.max(0, ...windows.map((window) => Math.max(0, Math.ceil(requests / window.limit) - 1) * window.windowMs));
    const wall = renderMs === null ? null : Math.max(rateFloorMs, (waves ?? 1) * renderMs);
    plans.push({
      provider,
      jobs: items.length,
      slots,
      waves,
      renderMs,
      rateFloorMs,
      expectedWallMs: wall,
      estimateMicroUsd: items.reduce((sum, item) => sum + (item.estimate.microUsd ?? 0), 0),
      unpriced: items.filter((item) => item.estimate.microUsd === null).length,
    });
  }
  return plans;
}

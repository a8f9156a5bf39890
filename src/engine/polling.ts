import type { Job } from "../core/job.js";
import type { ProviderLimits } from "../providers/adapter.js";
import type { RenderSample, Store } from "../store/store.js";

const SAMPLE_LIMIT = 50;

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (position - low);
}

/** A render-time estimate from one finished job: the middle of what its polls bracketed. */
function finishEstimate(sample: RenderSample): number {
  if (sample.pendingElapsedMs === null || sample.pendingElapsedMs > sample.doneElapsedMs) return sample.doneElapsedMs;
  return (sample.pendingElapsedMs + sample.doneElapsedMs) / 2;
}

/**
 * Adaptive polling: learns the render-time distribution per provider and
 * model from finished jobs and polls near the expected finish, inside the
 * provider's pace. Unknown models are polled on a slowly growing interval.
 */
export class PollScheduler {
  private readonly estimates = new Map<string, number[]>();
  private readonly loaded = new Set<string>();

  /** `fixedIntervalMs` replaces the learned schedule by a fixed pace (still within the provider's bounds). */
  constructor(
    private readonly store: Store,
    private readonly fixedIntervalMs: number | null = null,
  ) {}

  /** Records a finished job so the next schedules use it. */
  record(provider: string, model: string, sample: RenderSample): void {
    const key = `${provider}\u0000${model}`;
    const list = this.estimates.get(key) ?? [];
    list.push(finishEstimate(sample));
    if (list.length > SAMPLE_LIMIT) list.shift();
    this.estimates.set(key, list);
  }

  /** Milliseconds from now until the next poll of `job`, which has been running `elapsedMs`. */
  async nextDelay(job: Pick<Job, "provider" | "model">, elapsedMs: number, limits: ProviderLimits): Promise<number> {
    const { minIntervalMs, maxIntervalMs } = limits.poll;
    if (this.fixedIntervalMs !== null) return Math.min(maxIntervalMs, Math.max(minIntervalMs, this.fixedIntervalMs));
    const sorted = [...(await this.samples(job.provider, job.model))].sort((a, b) => a - b);
    let delay: number;
    if (sorted.length === 0) {
      // Nothing learned yet: start after a second, then stretch the interval slowly as the job ages
      // (a first wave detected late delays every later wave, so early lateness costs more than a few polls).
      delay = Math.max(1_000, elapsedMs * 0.15);
    } else {
      const early = quantile(sorted, 0.1) * 0.95;
      const median = quantile(sorted, 0.5);
      const late = quantile(sorted, 0.9);
      if (elapsedMs < early) delay = early - elapsedMs;
      else if (elapsedMs < late * 1.5 + 1_000) delay = median * 0.04;
      else delay = elapsedMs * 0.2;
    }
    return Math.round(Math.min(maxIntervalMs, Math.max(minIntervalMs, delay)));
  }

  /** The median render time learned for this provider and model, or null before any job of it finished. */
  async expectedRenderMs(provider: string, model: string): Promise<number | null> {
    const sorted = [...(await this.samples(provider, model))].sort((a, b) => a - b);
    return sorted.length ? Math.round(quantile(sorted, 0.5)) : null;
  }

  private async samples(provider: string, model: string): Promise<number[]> {
    const key = `${provider}\u0000${model}`;
    if (!this.loaded.has(key)) {
      this.loaded.add(key);
      const stored = await this.store.recentRenderSamples(provider, model, SAMPLE_LIMIT);
      const known = this.estimates.get(key) ?? [];
      this.estimates.set(key, [...stored.reverse().map(finishEstimate), ...known].slice(-SAMPLE_LIMIT));
    }
    return this.estimates.get(key) ?? [];
  }
}

import type { Job } from "../core/job.js";
import type { ProviderId } from "../core/provider-id.js";
import type { ProviderLimits, ValidatedRequest } from "../providers/adapter.js";
import type { PoolStatus, QueueShape, RenderSample, Store, TenantLine } from "../store/store.js";
import type { Runtime } from "./runtime.js";

/**
 * When a job will start and finish (issue 37, part 1): its place in line and
 * what the engine knows of the line's pace, on every face (the API's
 * `queue_position`, `expected_start_at`, `expected_finish_at`, `show`, the
 * dashboard, the library).
 *
 * A queued job's position counts the jobs that fair share sends before it:
 * the jobs ahead of it in its tenant's line (a difference of queue ranks,
 * migration 21) and, of every other tenant waiting at its provider, those
 * whose place (in flight plus ahead, over weight) comes before its own. The
 * line drains at the provider's pace: its free slot capacity over the learned
 * time a job holds a slot (submit to done, the mean over the last finished
 * jobs of the model), and no faster than its rate windows allow at two
 * requests a job. Its finish is its start plus the learned time from submit
 * to saved results. A running job's finish is the learned times longer than
 * it has run so far (their mean less its age).
 *
 * No provider publishes a render time (every spec says "not shown"), so the
 * prior is nothing: until one job of the model has finished, the times are
 * null and only the position is known.
 *
 * Cost: per provider, the tenants waiting and two index seeks each (store's
 * queueShapes); per model, the last SAMPLES finished jobs. Both are kept for
 * FRESH_MS, so a page of fifty jobs or a dashboard refreshing every second
 * reads them once: never the queue itself, whatever its length.
 */

/** Finished jobs a model's pace is learned from. */
const SAMPLES = 50;
/** How long a provider's queue shape and a model's pace are reused. */
const FRESH_MS = 1_000;
/** Requests a job costs at least against a provider's rate windows: its submit and one poll. */
const REQUESTS_PER_JOB = 2;

export interface JobTiming {
  /** 1-based among the jobs waiting for the same provider; null when not waiting (or queued before positions were kept). */
  queuePosition: number | null;
  /** When it is (or was) expected to be sent; null while unknown. */
  expectedStartAt: number | null;
  /** When its results are expected to be saved; null while unknown. */
  expectedFinishAt: number | null;
}

export const NO_TIMING: JobTiming = { queuePosition: null, expectedStartAt: null, expectedFinishAt: null };

/** What a queued job's times are made of: what it asks of its provider, when it is due, whether a budget holds it. */
type QueuedLike = ValidatedRequest & Pick<Job, "nextAttemptAt" | "blockedCode">;

/** What a model's finished jobs say of its pace. */
interface Pace {
  /** Mean ms from the submit's send to done at the provider: a slot's hold, of which the line's pace is made. */
  holdMs: number;
  /** Median ms from submit to the results saved. */
  totalMs: number;
  /** Each finished job's ms from submit to saved results, ascending (a running job's remaining time). */
  totals: number[];
  /** The same of the jobs whose results were saved only (no render time standing in for one still being saved), ascending. */
  finished: number[];
}

interface Cached<T> {
  at: number;
  value: Promise<T>;
}

/** What one store's estimates were made from lately (FRESH_MS): queue shapes by provider, paces by model, the slot pools. */
class Recent {
  readonly shapes = new Map<ProviderId, Cached<QueueShape>>();
  readonly paces = new Map<string, Cached<Pace | null>>();
  pools: Cached<PoolStatus[]> | null = null;
}

const recentByStore = new WeakMap<Store, Recent>();

function fresh<T>(cached: Cached<T> | null | undefined, now: number): cached is Cached<T> {
  return cached !== undefined && cached !== null && now - cached.at < FRESH_MS && now >= cached.at;
}

function median(sorted: readonly number[]): number {
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** A model's pace from its last finished jobs; null when none finished yet. */
export function paceOf(samples: readonly RenderSample[]): Pace | null {
  const renders = samples.map((sample) => sample.doneElapsedMs).filter((ms) => ms >= 0).sort((a, b) => a - b);
  if (renders.length === 0) return null;
  const totals = samples
    .map((sample) => sample.finishedElapsedMs ?? null)
    .filter((ms): ms is number => ms !== null && ms >= 0)
    .sort((a, b) => a - b);
  // A slot is held from before the submit is sent: its hold counts from the send where it is known.
  const holds = samples.map((sample) => sample.sentToDoneMs ?? sample.doneElapsedMs).filter((ms) => ms >= 0);
  const holdMs = holds.reduce((sum, ms) => sum + ms, 0) / Math.max(1, holds.length);
  const renderMs = median(renders);
  return { holdMs, totalMs: totals.length > 0 ? Math.max(renderMs, median(totals)) : renderMs, totals: totals.length > 0 ? totals : renders, finished: totals };
}

/**
 * How many jobs fair share sends before a job `ahead` jobs behind its own
 * tenant's head: its own line's, and of each other line those whose place
 * comes first (store/fair-queue.ts: in flight plus ahead, over weight).
 */
export function fairPosition(lines: readonly TenantLine[], tenant: string, ahead: number, dueAt: number): number {
  const own = lines.find((line) => line.tenant === tenant);
  const place = ((own?.inFlight ?? 0) + ahead) / (own?.weight ?? 1);
  let before = ahead;
  for (const line of lines) {
    if (line.tenant === tenant) continue;
    const length = line.tailRank - line.headRank + 1;
    // Its jobs whose place comes first; an equal place goes to the job that has waited longer, as the engine gives it
    // (the line's head standing for its jobs), then to one tenant of the two, so that no two jobs share a position.
    const reach = place * line.weight - line.inFlight;
    const goesFirst = line.headDueAt < dueAt || (line.headDueAt === dueAt && line.tenant < tenant);
    before += Math.min(length, Math.max(0, goesFirst ? Math.floor(reach) + 1 : Math.ceil(reach)));
  }
  return before + 1;
}

/** A queued job's place among the jobs waiting at its provider, or null (no rank, or its line not read). */
export function queuePositionOf(job: Pick<Job, "state" | "tenant" | "queueRank" | "blockedCode" | "nextAttemptAt">, shape: QueueShape | undefined): number | null {
  // A job its budget holds waits for no slot: it has no place in line (migration 21 leaves it out).
  if (job.state !== "queued" || job.queueRank === null || job.blockedCode !== null || !shape) return null;
  const rank = job.queueRank;
  const own = shape.lines.find((line) => line.tenant === job.tenant);
  // A shape read (within FRESH_MS) before the job was queued: its line reaches it now, or starts with it. Not read
  // again for it: admission answers every job it queues with its position.
  const line = own ? { ...own, tailRank: Math.max(own.tailRank, rank) } : { tenant: job.tenant, headRank: rank, headDueAt: job.nextAttemptAt, tailRank: rank, inFlight: 0, weight: 1 };
  const lines = own ? shape.lines.map((each) => (each === own ? line : each)) : [...shape.lines, line];
  // A job sent back to the queue keeps its rank, now before the head: it goes first.
  return fairPosition(lines, job.tenant, Math.max(0, rank - line.headRank), job.nextAttemptAt);
}

/** The slots a job needs, as free and as many as the store says now (learned capacity included); null where the provider has none. */
function slotsFor(limits: ProviderLimits, pools: readonly PoolStatus[], now: number): { capacity: number; free: number; blockedUntil: number } | null {
  if (limits.slotPools.length === 0) return null;
  let capacity = Infinity;
  let free = Infinity;
  let blockedUntil = 0;
  for (const pool of limits.slotPools) {
    const status = pools.find((each) => each.key === pool.key);
    const cap = status ? Math.min(pool.capacity, status.configuredCapacity, status.learnedCapacity) : pool.capacity;
    capacity = Math.min(capacity, Math.max(1, cap));
    free = Math.min(free, Math.max(0, cap - (status?.held ?? 0)));
    if (status && status.blockedUntil > now) blockedUntil = Math.max(blockedUntil, status.blockedUntil);
  }
  return { capacity, free, blockedUntil };
}

/** Jobs a ms the provider's line can move at: slots over a slot's hold, and no faster than its rate windows. */
function drainPerMs(limits: ProviderLimits, slots: { capacity: number } | null, pace: Pace): number {
  let rate = slots ? slots.capacity / Math.max(1, pace.holdMs) : Infinity;
  for (const window of limits.rateWindows) rate = Math.min(rate, window.limit / window.windowMs / REQUESTS_PER_JOB);
  return rate;
}

/** The mean of what is left of the learned totals longer than `ageMs`; null when none ran that long. */
function remainingAfter(totals: readonly number[], ageMs: number): number | null {
  const longer = totals.filter((total) => total > ageMs);
  if (longer.length === 0) return null;
  return longer.reduce((sum, total) => sum + total, 0) / longer.length - ageMs;
}

/**
 * How far along a job is that has run `ageMs` since its submit: the share of
 * its model's learned totals (ascending) that were no longer, drawn linearly
 * between them, from 0 to 1. It never falls as the job ages, where the
 * expected finish of a running job (the mean of the totals still longer than
 * its age) moves later each time it outlives one.
 */
export function shareDoneAt(totals: readonly number[], ageMs: number): number {
  if (totals.length === 0 || ageMs <= 0) return 0;
  let below = 0;
  while (below < totals.length && totals[below]! <= ageMs) below++;
  if (below === totals.length) return 1;
  const from = below === 0 ? 0 : totals[below - 1]!;
  return (below + (ageMs - from) / (totals[below]! - from)) / totals.length;
}

/** Reads (or reuses) what estimates are made of, and makes them. */
export class Timings {
  private readonly recent: Recent;

  constructor(
    private readonly runtime: Pick<Runtime, "providers">,
    private readonly store: Store,
  ) {
    let recent = recentByStore.get(store);
    if (!recent) {
      recent = new Recent();
      recentByStore.set(store, recent);
    }
    this.recent = recent;
  }

  /** Each job's timing (NO_TIMING for ended ones), by id. */
  async of(jobs: readonly Job[], now: number): Promise<Map<string, JobTiming>> {
    const open = jobs.filter((job) => job.state === "queued" || job.state === "submitting" || job.state === "running" || job.state === "capturing");
    const timings = new Map<string, JobTiming>();
    if (open.length === 0) return timings;
    const queuedAt = [...new Set(open.filter((job) => job.state === "queued").map((job) => job.provider))];
    const [shapes, pools] = await Promise.all([this.shapes(queuedAt, now), this.pools(now)]);
    for (const job of open) timings.set(job.id, await this.timingOf(job, shapes.get(job.provider), pools, now));
    return timings;
  }

  /**
   * When the last job queued in `like`'s tenant line at its provider (of its
   * model) is expected to finish: a batch's expected end, its jobs being the
   * tail of its tenant's line. Null when nothing of that tenant waits there.
   */
  async lineEnd(like: Job, now: number): Promise<number | null> {
    const shape = (await this.shapes([like.provider], now)).get(like.provider);
    const line = shape?.lines.find((each) => each.tenant === like.tenant);
    if (!line) return null;
    const last: Job = { ...like, state: "queued", queueRank: line.tailRank, blockedCode: null, nextAttemptAt: 0 };
    return (await this.of([last], now)).get(last.id)?.expectedFinishAt ?? null;
  }

  /**
   * For each job running or saving its results, how far along its model's
   * learned times from submit to saved results it is (`shareDoneAt`); absent
   * while no job of the model has had its results saved. A job of the model
   * finishing meanwhile changes what is learned, and may move it a little.
   */
  async shares(jobs: readonly Job[], now: number): Promise<Map<string, number>> {
    const shares = new Map<string, number>();
    for (const job of jobs) {
      if ((job.state !== "running" && job.state !== "capturing") || job.submittedAt === null) continue;
      const pace = await this.pace(job.provider, job.model, now);
      // Saved results only: a render time standing in for a job still being saved would be replaced by its longer total, and the share would fall.
      if (pace && pace.finished.length > 0) shares.set(job.id, shareDoneAt(pace.finished, now - job.submittedAt));
    }
    return shares;
  }

  /** One job's timing. */
  async one(job: Job, now: number): Promise<JobTiming> {
    return (await this.of([job], now)).get(job.id) ?? NO_TIMING;
  }

  /**
   * When a request would finish if it were queued now by `tenant` at the
   * tail of its line, behind `aheadHere` more jobs queued there by the same
   * call (a batch's earlier lines): what `route_by: "time"` compares. Null
   * while the model's pace is not known.
   */
  async finishIfQueued(request: ValidatedRequest, tenant: string, aheadHere: number, now: number): Promise<number | null> {
    const [shapes, pools] = await Promise.all([this.shapes([request.provider], now), this.pools(now)]);
    const lines = shapes.get(request.provider)?.lines ?? [];
    const own = lines.find((line) => line.tenant === tenant);
    const ahead = (own ? own.tailRank - own.headRank + 1 : 0) + aheadHere;
    const like = { provider: request.provider, model: request.model, operation: request.operation, body: request.body, facts: request.facts, warnings: request.warnings, nextAttemptAt: now, blockedCode: null };
    return (await this.queuedTiming(like, fairPosition(lines, tenant, ahead, now), pools, now)).expectedFinishAt;
  }

  private async timingOf(job: Job, shape: QueueShape | undefined, pools: readonly PoolStatus[], now: number): Promise<JobTiming> {
    const queuePosition = queuePositionOf(job, shape);
    if (job.state === "queued") return this.queuedTiming(job, queuePosition, pools, now);
    const pace = await this.pace(job.provider, job.model, now);
    if (!pace) return NO_TIMING;
    switch (job.state) {
      case "submitting":
        return { queuePosition: null, expectedStartAt: job.submitSentAt ?? now, expectedFinishAt: Math.round(now + pace.totalMs) };
      case "running":
      case "capturing": {
        const sent = job.submittedAt ?? now;
        const left = remainingAfter(pace.totals, now - sent);
        return { queuePosition: null, expectedStartAt: sent, expectedFinishAt: left === null ? null : Math.round(now + left) };
      }
      default:
        return NO_TIMING;
    }
  }

  /** A queued job's (or request's) expected start and finish, from its position, the slots free and its model's pace. */
  private async queuedTiming(job: QueuedLike, queuePosition: number | null, pools: readonly PoolStatus[], now: number): Promise<JobTiming> {
    const pace = await this.pace(job.provider, job.model, now);
    if (!pace || job.blockedCode !== null || queuePosition === null) return { ...NO_TIMING, queuePosition };
    const limits = this.limitsOf(job);
    if (!limits) return { ...NO_TIMING, queuePosition };
    const slots = slotsFor(limits, pools, now);
    const rate = drainPerMs(limits, slots, pace);
    // With slots, the jobs ahead beyond those free must leave first; with none (a rate window only), the first goes now.
    const waiting = slots ? Math.max(0, queuePosition - slots.free) : queuePosition - 1;
    const start = Math.max(now + (Number.isFinite(rate) ? waiting / rate : 0), job.nextAttemptAt, slots?.blockedUntil ?? 0);
    return { queuePosition, expectedStartAt: Math.round(start), expectedFinishAt: Math.round(start + pace.totalMs) };
  }

  private limitsOf(job: ValidatedRequest): ProviderLimits | null {
    const adapter = this.runtime.providers.get(job.provider)?.adapter;
    if (!adapter) return null;
    try {
      return adapter.limits(job);
    } catch {
      return null;
    }
  }

  private async shapes(providers: readonly ProviderId[], now: number): Promise<Map<ProviderId, QueueShape>> {
    const missing = providers.filter((provider) => !fresh(this.recent.shapes.get(provider), now));
    if (missing.length > 0) {
      const read = this.store.queueShapes(missing);
      // One read for every provider missing; each provider's entry is its part of it.
      for (const provider of missing) this.recent.shapes.set(provider, { at: now, value: read.then((all) => all.find((shape) => shape.provider === provider)!) });
      read.catch(() => {
        for (const provider of missing) this.recent.shapes.delete(provider);
      });
    }
    const shapes = new Map<ProviderId, QueueShape>();
    for (const provider of providers) shapes.set(provider, await this.recent.shapes.get(provider)!.value);
    return shapes;
  }

  private async pools(now: number): Promise<PoolStatus[]> {
    if (!fresh(this.recent.pools, now)) {
      const value = this.store.poolStatus();
      this.recent.pools = { at: now, value };
      value.catch(() => {
        this.recent.pools = null;
      });
    }
    return this.recent.pools!.value;
  }

  private async pace(provider: ProviderId, model: string, now: number): Promise<Pace | null> {
    const key = `${provider}\u0000${model}`;
    let cached = this.recent.paces.get(key);
    if (!fresh(cached, now)) {
      const value = this.store.recentRenderSamples(provider, model, SAMPLES).then(paceOf);
      cached = { at: now, value };
      this.recent.paces.set(key, cached);
      // No pace yet is not kept: the first job of a model to finish gives one at once (reading none is one seek).
      value.then((pace) => pace === null && this.recent.paces.get(key) === cached && this.recent.paces.delete(key)).catch(() => this.recent.paces.delete(key));
    }
    return cached!.value;
  }
}

/** The timings of `jobs` now, read from the runtime's store (NO_TIMING for ended ones), by id. */
export async function timingsOf(runtime: Pick<Runtime, "providers" | "store">, jobs: readonly Job[], now = Date.now()): Promise<Map<string, JobTiming>> {
  return new Timings(runtime, await runtime.store()).of(jobs, now);
}

/** How far along their models' learned times these jobs are, read from the runtime's store (`Timings.shares`). */
export async function sharesDoneOf(runtime: Pick<Runtime, "providers" | "store">, jobs: readonly Job[], now = Date.now()): Promise<Map<string, number>> {
  return new Timings(runtime, await runtime.store()).shares(jobs, now);
}

/**
 * Admission's warning (issue 37, part 2) when a job is expected to finish
 * after its deadline: it may be cancelled unsent, or sent and run past it.
 */
export function deadlineWarning(job: Pick<Job, "deadlineAt">, timing: JobTiming): string | null {
  if (job.deadlineAt === null || timing.expectedFinishAt === null || timing.expectedFinishAt <= job.deadlineAt) return null;
  const expected = new Date(timing.expectedFinishAt).toISOString();
  const deadline = new Date(job.deadlineAt).toISOString();
  return `expected to finish at ${expected}, after its deadline ${deadline} (cancel_after_s): not sent by then it is cancelled, and sent it may run past it`;
}

/** A time of day as the CLI prints it (UTC, to the second): 14:02:10Z. */
export function clockTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)}Z`;
}

/**
 * A job's timing in words, for the CLI: "queue position 12 · starts ~14:02:10Z
 * · done ~14:02:31Z" (`short`, for the progress line: "#12 · …"); null when
 * nothing is known (an ended job).
 */
export function timingWords(timing: JobTiming, now = Date.now(), short = false): string | null {
  const parts: string[] = [];
  if (timing.queuePosition !== null) parts.push(short ? `#${timing.queuePosition}` : `queue position ${timing.queuePosition}`);
  if (timing.queuePosition !== null && timing.expectedStartAt !== null && timing.expectedStartAt > now) parts.push(`starts ~${clockTime(timing.expectedStartAt)}`);
  if (timing.expectedFinishAt !== null) parts.push(`done ~${clockTime(timing.expectedFinishAt)}`);
  else if (timing.queuePosition !== null) parts.push(short ? "finish not known yet" : "finish not known yet (no job of its model has finished)");
  return parts.length === 0 ? null : parts.join(" · ");
}

import type { Job } from "../core/job.js";
import type { ProviderLimits } from "../providers/adapter.js";
import type { RenderSample, Store } from "../store/store.js";

const SAMPLE_LIMIT = 50;
/** The first poll of a model nothing is known of yet: no image is ready sooner. */
const UNKNOWN_FIRST_POLL_MS = 500;
/** While probing, one first poll in this many is a probe. */
const PROBE_EVERY = 8;
/** First polls found done that must be known before their send-based bound places the safe delay (one fast job does not). */
const DONE_BOUNDS_NEEDED = 5;
/** Probing stops once a first poll found its job pending within this share of the safe delay below it. */
const CLOSE_ENOUGH = 0.02;
/** After probing has settled, probe again after this many first polls (render times drift). */
const REPROBE_AFTER = 256;
/** A spread first poll moves by this share of the poll cadence per answer (see `PollScheduler.trackSpread`). */
const SPREAD_STEP_OF_CADENCE = 0.25;
/** Plans of jobs whose first poll was never answered (cancelled, taken over) are dropped past this many. */
const PLAN_LIMIT = 10_000;

type PlanKind = "unknown" | "spread" | "spread-second" | "safe" | "probe";

interface FirstPollPlan {
  key: string;
  kind: PlanKind;
  delayMs: number;
}

/**
 * What is known of one provider and model: its finished jobs, and the first
 * poll's "safe" delay — the shortest after which first polls have found jobs
 * done, lowered by probes and raised whenever a first poll there finds one
 * still pending.
 */
interface ModelState {
  samples: RenderSample[];
  /**
   * Where render times spread wider than the poll pace: the first poll's
   * delay, moved by the answers of first and second polls (see `answered`).
   */
  spreadMs: number | null;
  spreadStepMs: number;
  safeMs: number | null;
  /**
   * How long after its submit's send each first poll planned before anything
   * was learned found its job done (when the poll left, not when its answer
   * was read): the render took no longer. The safe delay starts at their 10th
   * percentile when there are DONE_BOUNDS_NEEDED of them, if that is sooner
   * than the finished jobs' (a first wave's answers read late by a busy loop
   * say more about the loop than about the render).
   */
  doneBoundsMs: number[];
  /**
   * The latest a first poll has found a job still pending since probing
   * (re)started, counted from the submit's send: the render and the send's
   * lead on it take longer, so no probe goes there again.
   */
  floorMs: number | null;
  probeGapMs: number | null;
  firstPollsSinceProbe: number;
  probeOut: boolean;
  /** The job whose first poll is the probe out now. */
  probeJobId: string | null;
}

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
 * The first-poll delay that costs least in expected detection lag, for jobs
 * that take `sortedEstimates`: a job done before the poll waits for it, a job
 * not yet done waits half a `cadenceMs` on average for a later poll.
 */
function leastLagDelay(sortedEstimates: number[], cadenceMs: number): number {
  let best = sortedEstimates[0]!;
  let bestCost = Infinity;
  let doneSum = 0;
  for (let index = 0; index < sortedEstimates.length; index++) {
    const at = sortedEstimates[index]!;
    doneSum += at;
    const done = index + 1;
    const cost = done * at - doneSum + (sortedEstimates.length - done) * (cadenceMs / 2);
    if (cost < bestCost) {
      bestCost = cost;
      best = at;
    }
  }
  return best;
}

/**
 * Adaptive polling: learns render times per provider and model and places
 * the first poll where it finds most jobs just done.
 *
 * Two schedules, chosen by whether the learned times spread wider than the
 * poll pace (`spreadWide`). Where they do, the first poll starts where the
 * learned distribution makes the expected lag least and is then moved by what
 * first and second polls find (`trackSpread`); polls follow at the pace.
 * Where they are tight (a fixed render time), the first poll comes at the
 * "safe" delay: a poll there finds the job done, and a job found still pending
 * raises it. A safe delay only learned from first polls that found jobs done
 * could never come down to the true render time, so while it is not settled
 * one first poll in PROBE_EVERY probes a little earlier: done, the safe delay
 * comes down to it and the next probe reaches further; pending, the next probe
 * stays closer. One probe found pending costs that one job a poll interval.
 */
export class PollScheduler {
  private readonly models = new Map<string, ModelState>();
  private readonly plans = new Map<string, FirstPollPlan>();
  /** Samples recorded before the store's were loaded, kept until they are. */
  private readonly early = new Map<string, RenderSample[]>();

  /** `fixedIntervalMs` replaces the learned schedule by a fixed pace (still within the provider's bounds). */
  constructor(
    private readonly store: Store,
    private readonly fixedIntervalMs: number | null = null,
  ) {}

  /** Records a finished job so the next schedules use it. */
  record(provider: string, model: string, sample: RenderSample): void {
    const state = this.models.get(keyOf(provider, model));
    const samples = state ? state.samples : this.pendingSamples(keyOf(provider, model));
    samples.push(sample);
    if (samples.length > SAMPLE_LIMIT) samples.shift();
  }

  /**
   * Milliseconds from the submit's answer until the first poll of `job`, whose
   * submit left `sinceSentMs` before that answer. A probe is placed from the
   * send, as the safe delay it tests was learned (see `answered`); every other
   * first poll from the answer, the latest the provider can have taken the job.
   */
  async firstDelay(job: Pick<Job, "id" | "provider" | "model">, limits: ProviderLimits, sinceSentMs = 0): Promise<number> {
    const { minIntervalMs } = limits.poll;
    if (this.fixedIntervalMs !== null) return this.clamp(this.fixedIntervalMs, limits);
    const key = keyOf(job.provider, job.model);
    const state = await this.state(job.provider, job.model);
    const plan = this.planFirstPoll(key, state, limits);
    if (this.plans.size >= PLAN_LIMIT) this.plans.clear();
    this.plans.set(job.id, plan);
    if (plan.kind === "probe") {
      state.probeJobId = job.id;
      return Math.round(Math.max(minIntervalMs, plan.delayMs - Math.max(0, sinceSentMs)));
    }
    return Math.round(Math.max(minIntervalMs, plan.delayMs));
  }

  /**
   * The answer to a job's poll, sent `sentElapsedMs` after its submit was
   * answered and `sinceSubmitSentMs` after the submit was sent (the first
   * answer is the one that teaches the first-poll schedule; later ones are
   * ignored). What is learned is when the poll was sent, not when it was
   * planned: a busy loop sends late, and a probe that found a job done only
   * because it went out late must not pull the safe delay below what the
   * render takes.
   *
   * The provider starts the render somewhere between the submit's send and
   * its answer, so each answer bounds the render time from one side only: a
   * job still pending was not done `sentElapsedMs` after the answer (the
   * latest the render can have started), and a job found done was done
   * `sinceSubmitSentMs` after the send (the earliest). Lowering the safe delay
   * by a done poll counted from the answer instead would trust a job whose
   * answer reached the engine late (a busy loop, a slow network) and send
   * every job answered promptly too early: measured, a fifth of first polls
   * found pending in a 200-job batch.
   *
   * So the safe delay is a time since the send, and a probe tests a lower one
   * from the send too: placed from the answer, a probe found done taught
   * nothing whenever the answer was read later than the probe's gap (a busy
   * loop reading a wave's answers 30–60 ms late kept the safe delay 50 ms above
   * the render for three waves). A job found pending was not done, counted
   * from its send either, `sinceSubmitSentMs` after it: no probe goes there.
   */
  answered(jobId: string, pending: boolean, sentElapsedMs: number, sinceSubmitSentMs: number = sentElapsedMs): void {
    const plan = this.plans.get(jobId);
    if (!plan) return;
    this.plans.delete(jobId);
    const state = this.models.get(plan.key);
    if (!state) return;
    if (plan.kind === "spread" || plan.kind === "spread-second") {
      this.trackSpread(jobId, plan, state, pending);
      return;
    }
    if (plan.kind === "unknown" && !pending && state.doneBoundsMs.length < SAMPLE_LIMIT) state.doneBoundsMs.push(Math.max(plan.delayMs, sinceSubmitSentMs));
    if (state.safeMs === null) return;
    const step = Math.max(2, state.safeMs * 0.01);
    if (pending) {
      // Too early for this job: no probe need go there again, and a first poll placed from the answer (not a probe)
      // must come later than this one did.
      state.floorMs = Math.max(state.floorMs ?? 0, plan.delayMs, sinceSubmitSentMs);
      if (plan.kind !== "probe" && plan.kind !== "unknown") state.safeMs = Math.max(state.safeMs, Math.max(plan.delayMs, sentElapsedMs) + step);
    } else if (plan.kind !== "safe") {
      // Done earlier than the safe delay. (A job planned at an older, lower safe delay and found done says
      // nothing new: other jobs found pending there are why it was raised.)
      state.safeMs = Math.min(state.safeMs, Math.max(plan.delayMs, sinceSubmitSentMs));
    }
    if (plan.kind === "probe") {
      state.probeOut = false;
      state.firstPollsSinceProbe = 0;
      state.probeGapMs = pending ? state.probeGapMs! / 2 : Math.min(state.safeMs * 0.25, state.probeGapMs! * 1.5);
    }
  }

  /**
   * Moves a spread first poll by what its job's first two polls found. A
   * first poll a little later costs every job found done at it that much more
   * lag, and saves the jobs that would have been found done at the second poll
   * half a cadence each on average: the least expected lag is where jobs are
   * found done at the first poll half as often as at the second. So a job
   * found done at its first poll moves it earlier by a step, one found done at
   * its second later by half a step; that settles where the two balance.
   * (The render times learned do not place it: a job found done at its first
   * poll says only that it was done by then, and taken as its render time it
   * pulls the first poll later and later.)
   */
  private trackSpread(jobId: string, plan: FirstPollPlan, state: ModelState, pending: boolean): void {
    if (state.spreadMs === null) return;
    if (plan.kind === "spread") {
      if (pending) this.plans.set(jobId, { ...plan, kind: "spread-second" });
      else state.spreadMs = Math.max(0, state.spreadMs - state.spreadStepMs);
    } else if (!pending) {
      state.spreadMs += state.spreadStepMs / 2;
    }
  }

  /** Milliseconds from now until the next poll of `job`, which was seen pending `elapsedMs` after its submit. */
  async nextDelay(job: Pick<Job, "provider" | "model">, elapsedMs: number, limits: ProviderLimits): Promise<number> {
    if (this.fixedIntervalMs !== null) return this.clamp(this.fixedIntervalMs, limits);
    const sorted = estimatesOf((await this.state(job.provider, job.model)).samples);
    let delay: number;
    if (sorted.length === 0) {
      // Nothing learned yet: stretch the interval slowly as the job ages (a first wave detected late
      // delays every later wave, so early lateness costs more than a few polls).
      delay = elapsedMs * 0.15;
    } else {
      const early = quantile(sorted, 0.1) * 0.95;
      const late = quantile(sorted, 0.9);
      // Before the expected window, wait for it, but no longer than the cadence: a job pending at a first poll
      // placed before the window (spread render times) is polled through it at the cadence.
      if (elapsedMs < early) delay = Math.min(early - elapsedMs, cadenceOf(sorted));
      else if (elapsedMs < late * 1.5 + 1_000) delay = cadenceOf(sorted);
      else delay = elapsedMs * 0.2;
    }
    return this.clamp(delay, limits);
  }

  /** The median render time learned for this provider and model, or null before any job of it finished. */
  async expectedRenderMs(provider: string, model: string): Promise<number | null> {
    const sorted = estimatesOf((await this.state(provider, model)).samples);
    return sorted.length ? Math.round(quantile(sorted, 0.5)) : null;
  }

  private planFirstPoll(key: string, state: ModelState, limits: ProviderLimits): FirstPollPlan {
    if (state.samples.length === 0) return { key, kind: "unknown", delayMs: Math.max(UNKNOWN_FIRST_POLL_MS, limits.poll.minIntervalMs) };
    const sorted = estimatesOf(state.samples);
    const cadence = Math.max(limits.poll.minIntervalMs, cadenceOf(sorted));
    // Where jobs were found done soonest (the 10th percentile, so that one job answered late does not place it): with
    // one render time every job is done there. The later done polls went out late (a wave of first polls all due
    // together) and say nothing more; a job found pending raises it.
    if (state.safeMs === null) {
      const bounds = state.doneBoundsMs.length >= DONE_BOUNDS_NEEDED ? quantile([...state.doneBoundsMs].sort((a, b) => a - b), 0.1) : Infinity;
      state.safeMs = Math.min(quantile(state.samples.map((sample) => sample.doneElapsedMs).sort((a, b) => a - b), 0.1), bounds);
    }
    const safe = state.safeMs;
    if (spreadWide(state.samples, cadence)) {
      // Started where the learned times put it, then moved by the first polls' answers (see `answered`).
      state.spreadMs ??= leastLagDelay(sorted, cadence);
      state.spreadStepMs = cadence * SPREAD_STEP_OF_CADENCE;
      return { key, kind: "spread", delayMs: state.spreadMs };
    }
    state.firstPollsSinceProbe++;
    // A probe whose answer will never come (its job cancelled or taken over, its plan dropped) must not
    // stop probing for good: dropped, it is over at once; otherwise re-probing starts it afresh.
    if (state.probeOut && (state.probeJobId === null || !this.plans.has(state.probeJobId))) state.probeOut = false;
    if (state.probeGapMs === null || state.firstPollsSinceProbe > REPROBE_AFTER) {
      // Render times drift: a re-probe may go below where jobs were found pending before.
      state.probeGapMs = safe * 0.05;
      state.floorMs = null;
      state.firstPollsSinceProbe = PROBE_EVERY;
      state.probeOut = false;
    }
    const least = Math.max(2, safe * 0.005);
    // Never where a job was found pending: that probe would find pending again, and a probe found pending costs its job a poll interval.
    const probeAt = Math.max(0, safe - state.probeGapMs, state.floorMs === null ? 0 : state.floorMs + least);
    // Close enough once a job was found pending within CLOSE_ENOUGH of the safe delay: what is left to gain is less
    // than that share of a render a wave, and a probe found pending costs its job a whole poll interval (in a batch's
    // last wave, the batch's end).
    const closeEnough = state.floorMs !== null && safe - state.floorMs <= Math.max(least, safe * CLOSE_ENOUGH);
    const settled = closeEnough || state.probeGapMs < least || safe - probeAt < least;
    if (!settled && !state.probeOut && state.firstPollsSinceProbe >= PROBE_EVERY) {
      state.probeOut = true;
      return { key, kind: "probe", delayMs: probeAt };
    }
    return { key, kind: "safe", delayMs: safe };
  }

  private clamp(delay: number, limits: ProviderLimits): number {
    const { minIntervalMs, maxIntervalMs } = limits.poll;
    return Math.round(Math.min(maxIntervalMs, Math.max(minIntervalMs, delay)));
  }

  private pendingSamples(key: string): RenderSample[] {
    const list = this.early.get(key) ?? [];
    this.early.set(key, list);
    return list;
  }

  private async state(provider: string, model: string): Promise<ModelState> {
    const key = keyOf(provider, model);
    const known = this.models.get(key);
    if (known) return known;
    const stored = await this.store.recentRenderSamples(provider, model, SAMPLE_LIMIT);
    const raced = this.models.get(key);
    if (raced) return raced;
    const samples = [...stored.reverse(), ...(this.early.get(key) ?? [])].slice(-SAMPLE_LIMIT);
    this.early.delete(key);
    const state: ModelState = { samples, spreadMs: null, spreadStepMs: 0, safeMs: null, doneBoundsMs: [], floorMs: null, probeGapMs: null, firstPollsSinceProbe: 0, probeOut: false, probeJobId: null };
    this.models.set(key, state);
    return state;
  }
}

function keyOf(provider: string, model: string): string {
  return `${provider}\u0000${model}`;
}

function estimatesOf(samples: RenderSample[]): number[] {
  return samples.map(finishEstimate).sort((a, b) => a - b);
}

/**
 * Whether render times spread wider than the cadence: what the polls
 * bracketed cannot all hold one render time. Each finished job was pending at
 * its last pending poll (or at its submit) and done at the poll after; with
 * one fixed render time every job's pending poll comes before every job's
 * done poll. Spread is when the later pending polls (the 90th percentile)
 * come more than a cadence after the earlier done polls (the 10th). (Not
 * judged by the midpoints, which spread as wide as the polls' gaps while
 * nothing is learned; nor by the safe delay, which is set from the first
 * jobs to finish, the fastest.)
 */
function spreadWide(samples: readonly RenderSample[], cadenceMs: number): boolean {
  const pending = samples.map((sample) => Math.min(sample.pendingElapsedMs ?? 0, sample.doneElapsedMs)).sort((a, b) => a - b);
  const done = samples.map((sample) => sample.doneElapsedMs).sort((a, b) => a - b);
  return quantile(pending, 0.9) > quantile(done, 0.1) + cadenceMs;
}

/** Polls through the expected window come this often (before the provider's pace is applied). */
function cadenceOf(sortedEstimates: number[]): number {
  return quantile(sortedEstimates, 0.5) * 0.04;
}

import type { FastifyInstance } from "fastify";
import type { ProviderEmulator, SandboxContext } from "../context.js";
import { countBy, peakConcurrency } from "../emulator-stats.js";
import { C_ERR } from "./envelope.js";
import { resolveCOptions, type CEmulatorOptions, type CTier } from "./options.js";
import { registerCRoutes } from "./routes.js";
import { CService } from "./service.js";
import {
  finishedAtOrUndefined,
  holdsSlotAt,
  isRefundedAt,
  SLOT_RELEASE_MS,
  statusAt,
  type COutcome,
  type CStatus,
} from "./tasks.js";
import type { CTraceIdReport } from "./trace-ids.js";

export type { CAccountOptions, CAcceptedValues, CEmulatorOptions, CTier } from "./options.js";
export { C_TIER_SLOTS, DEFAULT_C_ACCEPTED } from "./options.js";
export type { COutcome, CStatus } from "./tasks.js";
export { C_ERR } from "./envelope.js";
export type { CTraceIdReport } from "./trace-ids.js";

/** What the sandbox knows about one task, for tests to assert on (times are virtual ms). */
export interface CTaskView {
  videoId: string;
  apiKey: string;
  prompt: string;
  model: string;
  aspectRatio: string;
  duration: number;
  quality: string;
  motionMode: string;
  seed: number;
  status: CStatus;
  createdAt: number;
  /** When it left status 5 (finished, or deleted while generating); undefined while generating. */
  finishedAt?: number;
  /** True while it counts against the tier's cap. */
  holdsSlot: boolean;
  /** When the ten-minute rule releases (or released) its slot. */
  slotReleaseAt: number;
  costCredits: number;
  refunded: boolean;
  downloads: number;
}

export interface CStats {
  /** Submit requests received, whatever their answer. */
  submits: number;
  /** Answers per ErrCode (0 included), submit and result alike. */
  errCodes: Record<number, number>;
  /** Shortcut for errCodes[500044]. */
  concurrentLimitRejections: number;
  /** Most slots held at once, per key. */
  peakConcurrency: Record<string, number>;
}

export interface CEmulator extends ProviderEmulator {
  readonly id: "c";
  tasks(): CTaskView[];
  task(videoId: string): CTaskView | undefined;
  stats(): CStats;
  /** Credits now (refunds of tasks that reached status 7 included). Default: the primary account. */
  balance(apiKey?: string): number;
  setBalance(credits: number, apiKey?: string): void;
  /** Slots held now, against the tier's cap. */
  slotsInUse(apiKey?: string): number;
  setTier(tier: CTier, apiKey?: string): void;
  traceIds(): CTraceIdReport;
  /** The next `count` tasks end in moderation failure (7) or generation failure (8). */
  injectOutcome(outcome: Exclude<COutcome, 1>, count?: number): void;
  /** Changes how a still-generating task ends; false when unknown or already ended. */
  setTaskOutcome(videoId: string, outcome: COutcome): boolean;
  /** The next `count` submits answer 500069 (and take no slot, cost nothing). */
  injectRetryLater(count?: number): void;
  /** Status 6: how it is reached is not shown, so only this knob reaches it. Frees the slot; no refund. */
  deleteTask(videoId: string): boolean;
}

/** Emulator of video service C, under `/c` (client base URL `{sandbox}/c`). Choices where the spec is silent: README.md here. */
export function createCEmulator(options: CEmulatorOptions = {}): CEmulator {
  const resolved = resolveCOptions(options);
  const primaryKey = resolved.accounts[0]!.apiKey;
  let service: CService | undefined;
  let now: () => number = () => Date.now();

  const registered = (): CService => {
    if (!service) throw new Error("the C emulator is not registered with a sandbox yet");
    return service;
  };
  const account = (apiKey = primaryKey) => {
    const found = registered().accounts.get(apiKey);
    if (!found) throw new RangeError(`no C account with key ${apiKey}`);
    return found;
  };

  const view = (videoId: string): CTaskView | undefined => {
    const task = registered().tasks.get(videoId);
    if (!task) return undefined;
    const at = now();
    const finishedAt = finishedAtOrUndefined(task, at);
    const { request } = task;
    return {
      videoId,
      apiKey: task.apiKey,
      prompt: request.prompt,
      model: request.model,
      aspectRatio: request.aspectRatio,
      duration: request.duration,
      quality: request.quality,
      motionMode: request.motionMode,
      seed: request.seed,
      status: statusAt(task, at),
      createdAt: task.createdAt,
      ...(finishedAt !== undefined ? { finishedAt } : {}),
      holdsSlot: holdsSlotAt(task, at),
      slotReleaseAt: task.createdAt + SLOT_RELEASE_MS,
      costCredits: task.costCredits,
      refunded: isRefundedAt(task, at),
      downloads: task.downloads,
    };
  };

  return {
    id: "c",
    async register(app: FastifyInstance, context: SandboxContext) {
      const ready = new CService(context, resolved);
      service = ready;
      now = () => context.clock.now();
      await app.register(async (scope) => registerCRoutes(scope, ready), { prefix: "/c" });
    },
    sandboxStats() {
      const ready = registered();
      const at = now();
      const tasks = [...ready.tasks.values()];
      // spec C Limits: a slot is held while generating, ten minutes at most.
      const slotSpans = tasks.map((task) => ({
        start: task.createdAt,
        end: Math.min(task.finishedAt, task.deletedAt ?? Infinity, task.createdAt + SLOT_RELEASE_MS),
      }));
      return {
        tasks: countBy(tasks, (task) => String(statusAt(task, at))),
        peakConcurrency: peakConcurrency(slotSpans),
        limitRefusals: ready.errCodeCounts.get(C_ERR.concurrentLimit) ?? 0,
        creditsLeft: { amount: account().balanceCredits(at), unit: "credits" },
      };
    },
    reset: () => registered().reset(),
    tasks: () => [...registered().tasks.keys()].flatMap((videoId) => view(videoId) ?? []),
    task: view,
    stats() {
      const errCodes = Object.fromEntries(registered().errCodeCounts);
      return {
        submits: registered().submitCount,
        errCodes,
        concurrentLimitRejections: errCodes[500044] ?? 0,
        peakConcurrency: Object.fromEntries(registered().accounts.all().map((each) => [each.apiKey, each.peakConcurrency])),
      };
    },
    balance: (apiKey) => account(apiKey).balanceCredits(now()),
    setBalance: (credits, apiKey) => account(apiKey).setBalance(credits, now()),
    slotsInUse: (apiKey) => account(apiKey).slotsInUse(now()),
    setTier(tier, apiKey) {
      account(apiKey).tier = tier;
    },
    traceIds: () => registered().traceIds.report(),
    injectOutcome: (outcome, count = 1) => registered().injectOutcome(outcome, count),
    setTaskOutcome(videoId, outcome) {
      const task = registered().tasks.get(videoId);
      if (!task || statusAt(task, now()) !== 5) return false;
      task.outcome = outcome;
      return true;
    },
    injectRetryLater: (count = 1) => registered().injectRetryLater(count),
    deleteTask(videoId) {
      const task = registered().tasks.get(videoId);
      if (!task || task.deletedAt !== undefined) return false;
      task.deletedAt = now();
      return true;
    },
  };
}

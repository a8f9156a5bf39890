import type { FastifyInstance } from "fastify";
import type { ProviderEmulator, SandboxContext } from "../context.js";
import { countBy, peakConcurrency } from "../emulator-stats.js";
import type { APlan } from "./accounts.js";
import type { ACallbackDelivery } from "./callbacks.js";
import { modelCatalogue, type AModel } from "./models.js";
import { resolveAOptions, type AEmulatorOptions } from "./options.js";
import type { ARateWindowStats } from "./rate-limit.js";
import { registerARoutes } from "./routes.js";
import { AService } from "./service.js";
import type { ATaskKind } from "./task-kind.js";
import { goneAt, statusAt, type ACancelResult, type AOutcome, type AStatus } from "./tasks.js";

export type { AEmulatorOptions } from "./options.js";
export type { AModel } from "./models.js";
export type { ACallbackDelivery } from "./callbacks.js";
export type { ACancelResult, AOutcome, AStatus } from "./tasks.js";
export type { ATaskKind } from "./task-kind.js";
export type { ATaskObject } from "./task-object.js";
export { DEFAULT_A_MODELS } from "./models.js";

/** What the sandbox knows about one task, for tests to assert on (times are virtual ms). */
export interface ATaskView {
  id: string;
  apiKey: string;
  plan: APlan;
  model: string;
  kind: ATaskKind;
  status: AStatus;
  prompt: string;
  createdAt: number;
  runningAt: number;
  finishedAt: number;
  cancelledAt?: number;
  /** When the id stops existing (7 days after creation, or 24 h after cancellation). */
  goneAt: number;
  requestedRatio: string;
  ratio: string;
  duration: number;
  resolution: string;
  outputFormat: string;
  seed: number;
  callbackUrl?: string;
  ignoredFlags: string[];
  downloads: number;
}

export interface ARateLimitReport {
  /** 429 answers over all keys. */
  rejected: number;
  perKey: Record<string, ARateWindowStats & { plan: APlan }>;
}

export interface AEmulator extends ProviderEmulator {
  readonly id: "a";
  /** The configured models, with the generation each belongs to. */
  readonly models: readonly AModel[];
  /** Every task that still exists, with its status now. */
  tasks(): ATaskView[];
  task(id: string): ATaskView | undefined;
  /**
   * The cancel operation is not shown in the spec, so there is no route for
   * it; tests cancel here. Only a queued task can be cancelled.
   */
  cancelTask(id: string): ACancelResult;
  /** The next `count` tasks created end as `outcome` instead of succeeding. */
  injectOutcome(outcome: Exclude<AOutcome, "succeeded">, count?: number): void;
  /** Changes how an unfinished task ends; false when the task is unknown or already ended. */
  setTaskOutcome(id: string, outcome: AOutcome): boolean;
  rateLimits(): ARateLimitReport;
  callbacks(): readonly ACallbackDelivery[];
}

/** Emulator of video service A, under `/a` (client base URL `{sandbox}/a`). Choices where the spec is silent: README.md here. */
export function createAEmulator(options: AEmulatorOptions = {}): AEmulator {
  const resolved = resolveAOptions(options);
  const models = [...modelCatalogue(resolved.models).values()];
  let service: AService | undefined;
  let clockNow: () => number = () => Date.now();

  const registered = (): AService => {
    if (!service) throw new Error("the A emulator is not registered with a sandbox yet");
    return service;
  };

  const view = (id: string): ATaskView | undefined => {
    const task = registered().tasks.find(id);
    if (!task) return undefined;
    const { request } = task;
    return {
      id: task.id,
      apiKey: task.apiKey,
      plan: task.plan,
      model: request.model.id,
      kind: request.kind,
      status: statusAt(task, clockNow()),
      prompt: request.prompt,
      createdAt: task.createdAt,
      runningAt: task.runningAt,
      finishedAt: task.finishedAt,
      ...(task.cancelledAt !== undefined ? { cancelledAt: task.cancelledAt } : {}),
      goneAt: goneAt(task),
      requestedRatio: request.ratio,
      ratio: request.videoRatio,
      duration: request.duration,
      resolution: request.resolution,
      outputFormat: request.outputFormat,
      seed: request.seed,
      ...(request.callbackUrl !== undefined ? { callbackUrl: request.callbackUrl } : {}),
      ignoredFlags: request.ignoredFlags,
      downloads: task.downloads,
    };
  };

  return {
    id: "a",
    models,
    async register(app: FastifyInstance, context: SandboxContext) {
      service = new AService(context, resolved);
      clockNow = () => context.clock.now();
      const ready = service;
      await app.register(async (scope) => registerARoutes(scope, ready), { prefix: "/a" });
    },
    async close() {
      await service?.callbacks.close();
    },
    sandboxStats() {
      const ready = registered();
      const now = clockNow();
      const tasks = ready.tasks.all();
      let limitRefusals = 0;
      for (const stats of ready.limiter.report().values()) limitRefusals += stats.rejected;
      return {
        tasks: countBy(tasks, (task) => statusAt(task, now)),
        peakConcurrency: peakConcurrency(tasks.map((task) => ({ start: task.createdAt, end: task.cancelledAt ?? task.finishedAt }))),
        limitRefusals,
      };
    },
    reset: () => registered().reset(),
    tasks: () => registered().tasks.all().flatMap((task) => view(task.id) ?? []),
    task: view,
    cancelTask: (id) => registered().tasks.cancel(id),
    injectOutcome: (outcome, count = 1) => registered().injectOutcome(outcome, count),
    setTaskOutcome(id, outcome) {
      const task = registered().tasks.find(id);
      if (!task) return false;
      const status = statusAt(task, clockNow());
      if (status !== "queued" && status !== "running") return false;
      task.outcome = outcome;
      return true;
    },
    rateLimits() {
      const perKey: ARateLimitReport["perKey"] = {};
      let rejected = 0;
      for (const [apiKey, stats] of registered().limiter.report()) {
        rejected += stats.rejected;
        perKey[apiKey] = { ...stats, plan: resolved.enterpriseKeys.includes(apiKey) ? "enterprise" : "standard" };
      }
      return { rejected, perKey };
    },
    callbacks: () => registered().callbacks.all(),
  };
}

import type { VideoRatio } from "../media/video.js";
import { DEFAULT_A_MODELS } from "./models.js";

/** A range of virtual milliseconds; each task draws uniformly from it with the sandbox's seeded randomness. */
export type ADurationRange = number | { min: number; max: number };

export interface AEmulatorOptions {
  /** Keys of individual (standard-plan) accounts. Default ["sandbox-a-key"]. */
  standardKeys?: string[];
  /** Keys of enterprise accounts, used on /api/plan/v3. Default ["sandbox-a-enterprise-key"]. */
  enterpriseKeys?: string[];
  /** Model ids (`vidgen-<major>-<minor>-<yymmdd>`); the highest generation is "newest". Default DEFAULT_A_MODELS. */
  models?: readonly string[];
  /** How long a task stays queued, virtual ms. Default 2 000. */
  queueMs?: ADurationRange;
  /** How long a task runs before it ends, virtual ms. Default 30 000 to 60 000. */
  renderMs?: ADurationRange;
  /** spec A Limits: 180 per minute for individual users. */
  standardRequestsPerMinute?: number;
  /** spec A Limits: 600 per minute for enterprise users. */
  enterpriseRequestsPerMinute?: number;
  /** spec A Limits: at most 100 downloads of a newest-generation result. */
  newestGenerationDownloadLimit?: number;
  /** The ratio an "adaptive" task is rendered at. Default "16:9". */
  adaptiveRatio?: VideoRatio;
  /**
   * Length in seconds of a referenced video, for the editing rule "the
   * reference video must be 4 to 30 seconds long". The sandbox never fetches
   * media, so without this hook (or when it returns undefined) the rule is
   * not checked.
   */
  referenceVideoSeconds?: (url: string) => number | undefined;
}

export type ResolvedAOptions = Required<Omit<AEmulatorOptions, "referenceVideoSeconds">> &
  Pick<AEmulatorOptions, "referenceVideoSeconds">;

export function resolveAOptions(options: AEmulatorOptions): ResolvedAOptions {
  return {
    standardKeys: options.standardKeys ?? ["sandbox-a-key"],
    enterpriseKeys: options.enterpriseKeys ?? ["sandbox-a-enterprise-key"],
    models: options.models ?? DEFAULT_A_MODELS,
    queueMs: options.queueMs ?? 2_000,
    renderMs: options.renderMs ?? { min: 30_000, max: 60_000 },
    standardRequestsPerMinute: options.standardRequestsPerMinute ?? 180,
    enterpriseRequestsPerMinute: options.enterpriseRequestsPerMinute ?? 600,
    newestGenerationDownloadLimit: options.newestGenerationDownloadLimit ?? 100,
    adaptiveRatio: options.adaptiveRatio ?? "16:9",
    referenceVideoSeconds: options.referenceVideoSeconds,
  };
}

export function drawDuration(range: ADurationRange, random: () => number): number {
  if (typeof range === "number") return range;
  return Math.round(range.min + (range.max - range.min) * random());
}

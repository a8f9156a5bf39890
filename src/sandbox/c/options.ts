/** spec C Limits: concurrent generating tasks per account, by membership tier. */
export const C_TIER_SLOTS = { free: 3, essential: 15, scale: 20, business: 25 } as const;
export type CTier = keyof typeof C_TIER_SLOTS;

/** A range of virtual milliseconds; each task draws uniformly from it with the sandbox's seeded randomness. */
export type CDurationRange = number | { min: number; max: number };

export interface CAccountOptions {
  apiKey: string;
  /** Default "free". */
  tier?: CTier;
  /** Starting balance in credits. Default 10 000. */
  balanceCredits?: number;
}

/**
 * The values the submit body accepts. The spec shows one value per field
 * ("Values seen") and says the complete sets are not shown; the defaults
 * below accept the seen value plus plausible neighbours, and a test can
 * narrow or widen them.
 */
export interface CAcceptedValues {
  models: string[];
  aspectRatios: string[];
  durations: number[];
  qualities: string[];
  motionModes: string[];
}

export const DEFAULT_C_ACCEPTED: CAcceptedValues = {
  models: ["v6", "v5", "v4.5", "v4", "v3.5"],
  aspectRatios: ["16:9", "9:16", "1:1", "4:3", "3:4", "21:9"],
  durations: [5, 8],
  qualities: ["360p", "540p", "720p", "1080p"],
  motionModes: ["normal", "fast"],
};

export interface CEmulatorOptions {
  /** The primary account's key. Default "sandbox-c-key". */
  apiKey?: string;
  /** The primary account's tier. Default "free". */
  tier?: CTier;
  /** The primary account's starting balance, credits. Default 10 000. */
  balanceCredits?: number;
  /** More accounts, each with its own key, tier, balance and slots. */
  additionalAccounts?: CAccountOptions[];
  /** How long a task generates (status 5), virtual ms. Default 30 000 to 90 000. */
  renderMs?: CDurationRange;
  /** Lifetime of a result URL (not shown in the spec), virtual ms. Default 24 h. */
  resultUrlTtlMs?: number;
  /** HTTP status of an error envelope (not shown in the spec). Default "always-200". */
  errorHttpStatus?: "always-200" | "by-error";
  accepted?: Partial<CAcceptedValues>;
  /** Chance (0..1) that a task ends in moderation failure (7) / generation failure (8). Default 0. */
  moderationRate?: number;
  failureRate?: number;
}

export interface ResolvedCOptions {
  accounts: Required<CAccountOptions>[];
  renderMs: CDurationRange;
  resultUrlTtlMs: number;
  errorHttpStatus: "always-200" | "by-error";
  accepted: CAcceptedValues;
  moderationRate: number;
  failureRate: number;
}

const DEFAULT_BALANCE_CREDITS = 10_000;

function resolveAccount(account: CAccountOptions): Required<CAccountOptions> {
  return {
    apiKey: account.apiKey,
    tier: account.tier ?? "free",
    balanceCredits: account.balanceCredits ?? DEFAULT_BALANCE_CREDITS,
  };
}

export function resolveCOptions(options: CEmulatorOptions): ResolvedCOptions {
  const primary: CAccountOptions = {
    apiKey: options.apiKey ?? "sandbox-c-key",
    ...(options.tier !== undefined ? { tier: options.tier } : {}),
    ...(options.balanceCredits !== undefined ? { balanceCredits: options.balanceCredits } : {}),
  };
  return {
    accounts: [primary, ...(options.additionalAccounts ?? [])].map(resolveAccount),
    renderMs: options.renderMs ?? { min: 30_000, max: 90_000 },
    resultUrlTtlMs: options.resultUrlTtlMs ?? 24 * 3_600_000,
    errorHttpStatus: options.errorHttpStatus ?? "always-200",
    accepted: { ...DEFAULT_C_ACCEPTED, ...options.accepted },
    moderationRate: options.moderationRate ?? 0,
    failureRate: options.failureRate ?? 0,
  };
}

export function drawDuration(range: CDurationRange, random: () => number): number {
  if (typeof range === "number") return range;
  return Math.round(range.min + (range.max - range.min) * random());
}

import type { FDeliveryFault } from "./deliveries.js";

/** A range of virtual milliseconds; each generation draws uniformly from it with the sandbox's seeded randomness. */
export type FDurationRange = number | { min: number; max: number };

/** spec F: `<model>` is a slug containing the model family and major version. The sandbox's slugs: family "img", major version. */
export const DEFAULT_F_MODELS: readonly string[] = ["img-v3", "img-v2"];

export interface FEmulatorOptions {
  /** spec F Authentication: `Api-Key: <API_KEY>`. Default "sandbox-f-key". */
  apiKey?: string;
  /** The account behind the key; X-Img-Webhook-User-Id is its base64. Default "sandbox-f-account". */
  accountId?: string;
  /** Model slugs served. Default DEFAULT_F_MODELS. */
  models?: readonly string[];
  /** spec F: "the value FLASH currently returns 400 for this model version". Default ["img-v3"]. */
  flashRefusedModels?: readonly string[];
  /** How long a generation stays pending, virtual ms. Default 5 000 to 15 000. */
  renderMs?: FDurationRange;
  /** spec F: image links expire, lifetime not shown. Default 1 h of virtual time from readiness. */
  imageUrlTtlMs?: number;
  /**
   * Documented deviation: the real service refuses loopback webhook hosts
   * (and anything but https). When true, loopback hosts (127.0.0.0/8, ::1,
   * localhost) are accepted, over http or https, so local tests can receive
   * deliveries. Private, link-local and metadata hosts stay refused.
   */
  allowLoopbackWebhooks?: boolean;
  /** Resolves a webhook host to addresses for the filter. Default: the system resolver (node:dns lookup, all addresses). */
  resolveHost?: (host: string) => Promise<string[]>;
  /** spec F Events 8: the retry schedule is unpublished. Virtual ms after each failed attempt. Default [5 000, 30 000, 120 000]. */
  retryDelaysMs?: readonly number[];
  /** spec F Events 8: the callback timeout is unpublished. Real ms (network time is not scaled). Default 10 000. */
  deliveryTimeoutMs?: number;
  /** After a rotation, how long the previous key stays in the JWKS, virtual ms. Default 24 h; 0 drops it at once. */
  rotatedKeyListedMs?: number;
  /**
   * The clock of X-Img-Webhook-Timestamp. Default "real" (wall clock): the
   * receiver is outside the sandbox and checks the timestamp against its own
   * clock, which a time scale above 1 would leave behind. "virtual" uses the
   * sandbox's clock (as `created` and every other time it reports do), for a
   * receiver that runs on that clock too.
   */
  webhookTimestampClock?: "virtual" | "real";
  /** Faults applied to the deliveries of the first generations created, in order (see injectDeliveryFault). */
  deliveryFaults?: readonly FDeliveryFault[];
}

export type ResolvedFOptions = Required<Omit<FEmulatorOptions, "resolveHost">> & Pick<FEmulatorOptions, "resolveHost">;

export function resolveFOptions(options: FEmulatorOptions): ResolvedFOptions {
  return {
    apiKey: options.apiKey ?? "sandbox-f-key",
    accountId: options.accountId ?? "sandbox-f-account",
    models: options.models ?? DEFAULT_F_MODELS,
    flashRefusedModels: options.flashRefusedModels ?? ["img-v3"],
    renderMs: options.renderMs ?? { min: 5_000, max: 15_000 },
    imageUrlTtlMs: options.imageUrlTtlMs ?? 3_600_000,
    allowLoopbackWebhooks: options.allowLoopbackWebhooks ?? false,
    resolveHost: options.resolveHost,
    retryDelaysMs: options.retryDelaysMs ?? [5_000, 30_000, 120_000],
    deliveryTimeoutMs: options.deliveryTimeoutMs ?? 10_000,
    rotatedKeyListedMs: options.rotatedKeyListedMs ?? 24 * 3_600_000,
    webhookTimestampClock: options.webhookTimestampClock ?? "real",
    deliveryFaults: options.deliveryFaults ?? [],
  };
}

export function drawDuration(range: FDurationRange, random: () => number): number {
  if (typeof range === "number") return range;
  return Math.round(range.min + (range.max - range.min) * random());
}

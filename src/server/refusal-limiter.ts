import { isIPv6 } from "node:net";

/**
 * How many refused deliveries one source may have before its refusals are
 * answered 429: a burst, then one more every `refillMs`. A genuine provider
 * whose deliveries we refuse (a wrong secret, a clock off by minutes) retries
 * on a schedule of seconds to hours, and a few providers behind one address
 * stay far below this; a forger posting in a loop passes it at once.
 */
export const REFUSAL_BURST = 20;
export const REFUSAL_REFILL_MS = 2_000;
/** Sources remembered at once; past this the least recently refused is forgotten, so memory stays bounded whatever the number of addresses. */
export const MAX_TRACKED_SOURCES = 10_000;

export type RefusalDecision =
  | { throttled: false }
  /** `firstRefusal`: the source just passed its bound (log it once, not every request). */
  | { throttled: true; retryAfterMs: number; firstRefusal: boolean };

interface Bucket {
  tokens: number;
  updatedAt: number;
  throttled: boolean;
}

/**
 * A token bucket per source address, in memory, spent only by refused
 * deliveries: past the bound a source's refusals are answered 429. It never
 * decides whether a delivery is genuine: a verified delivery from a throttled
 * address (the provider behind the same proxy as a forger) is still applied.
 */
export class RefusalLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly options: { burst: number; refillMs: number; maxSources: number } = {
      burst: REFUSAL_BURST,
      refillMs: REFUSAL_REFILL_MS,
      maxSources: MAX_TRACKED_SOURCES,
    },
  ) {}

  /** Spends one token of the source for a refusal. */
  refuse(address: string, now: number): RefusalDecision {
    const key = sourceKey(address);
    const bucket = this.buckets.get(key) ?? { tokens: this.options.burst, updatedAt: now, throttled: false };
    const refilled = Math.max(0, now - bucket.updatedAt) / this.options.refillMs;
    bucket.tokens = Math.min(this.options.burst, bucket.tokens + refilled);
    bucket.updatedAt = now;
    // Re-inserted on every refusal, so the map's first entry is the least recently refused source.
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > this.options.maxSources) this.buckets.delete(this.buckets.keys().next().value!);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      bucket.throttled = false;
      return { throttled: false };
    }
    const firstRefusal = !bucket.throttled;
    bucket.throttled = true;
    return { throttled: true, retryAfterMs: Math.ceil((1 - bucket.tokens) * this.options.refillMs), firstRefusal };
  }

  /** How many sources are remembered (for tests of the memory bound). */
  get trackedSources(): number {
    return this.buckets.size;
  }
}

/**
 * The unit a limit applies to: an IPv4 address, or an IPv6 /64, since one
 * host commonly holds a whole /64 and could otherwise change address per request.
 */
export function sourceKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = "", tail = ""] = address.toLowerCase().split("::");
  const headGroups = head ? head.split(":") : [];
  const tailGroups = address.includes("::") ? (tail ? tail.split(":") : []) : [];
  const groups = [...headGroups, ...Array<string>(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill("0"), ...tailGroups];
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

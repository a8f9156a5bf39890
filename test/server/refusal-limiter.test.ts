import { describe, expect, it } from "vitest";
import { RefusalLimiter, sourceKey } from "../../src/server/refusal-limiter.js";

describe("refusal limiter (per-source bound on refused webhook deliveries)", () => {
  it("an IPv6 /64 is one source, since one host can change address within it at will; IPv4 and IPv4-mapped addresses are one address each", () => {
    expect(sourceKey("2001:db8:1:2::1")).toBe(sourceKey("2001:db8:1:2:ffff:ffff:ffff:fffe"));
    expect(sourceKey("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(sourceKey("2001:db8:1:3::1")).not.toBe(sourceKey("2001:db8:1:2::1"));
    expect(sourceKey("::1")).toBe("0:0:0:0::/64");
    expect(sourceKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(sourceKey("192.0.2.7")).not.toBe(sourceKey("192.0.2.8"));
  });

  it("addresses in one /64 share one bound", () => {
    const limiter = new RefusalLimiter({ burst: 2, refillMs: 1_000, maxSources: 10 });
    expect(limiter.refuse("2001:db8::1", 0).throttled).toBe(false);
    expect(limiter.refuse("2001:db8::2", 0).throttled).toBe(false);
    expect(limiter.refuse("2001:db8::3", 0)).toEqual({ throttled: true, retryAfterMs: 1_000, firstRefusal: true });
    expect(limiter.refuse("2001:db8::4", 0)).toMatchObject({ throttled: true, firstRefusal: false });
  });

  it("memory holds at most maxSources sources: the least recently refused is forgotten first", () => {
    const limiter = new RefusalLimiter({ burst: 1, refillMs: 60_000, maxSources: 3 });
    for (let host = 1; host <= 50; host++) limiter.refuse(`192.0.2.${host}`, 0);
    expect(limiter.trackedSources).toBe(3);
    // 192.0.2.48–50 are remembered (spent), 192.0.2.1 was forgotten and starts afresh.
    expect(limiter.refuse("192.0.2.50", 0).throttled).toBe(true);
    expect(limiter.refuse("192.0.2.1", 0).throttled).toBe(false);
  });
});

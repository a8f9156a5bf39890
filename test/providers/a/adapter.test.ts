import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/core/errors.js";
import type { ProviderStatus } from "../../../src/providers/adapter.js";
import { createAAdapter, type AAdapterConfig } from "../../../src/providers/a/index.js";

const DAY_MS = 24 * 3_600_000;

function adapter(config: Partial<AAdapterConfig> = {}) {
  return createAAdapter({ baseUrl: "https://a.example", apiKey: "key", enterprise: false, ...config });
}

function validated(config: Partial<AAdapterConfig> = {}) {
  const a = adapter(config);
  return { a, request: a.validate({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "x" } }) };
}

const succeeded = (usage: unknown): ProviderStatus => ({ kind: "succeeded", providerStatus: "succeeded", outputs: [{ url: "https://e.com/v.mp4" }], usage, raw: {} });

describe("A: limits, deadline, prices", () => {
  it("A: 180 requests per minute on a standard key, 600 on an enterprise key, polls included", () => {
    const { a, request } = validated();
    expect(a.limits(request).rateWindows).toEqual([{ key: "a:standard", limit: 180, windowMs: 60_000 }]);
    const enterprise = validated({ enterprise: true });
    expect(enterprise.a.limits(enterprise.request).rateWindows).toEqual([{ key: "a:enterprise", limit: 600, windowMs: 60_000 }]);
    expect(a.limits(request)).toMatchObject({ slotPools: [], idempotentSubmit: false });
  });

  it("A: the tracking deadline is never beyond the 7-day lookup window", () => {
    const { a, request } = validated();
    expect(a.limits(request).trackingDeadlineMs).toBe(DAY_MS);
    const long = validated({ trackingDeadlineMs: 30 * DAY_MS });
    expect(long.a.limits(long.request).trackingDeadlineMs).toBe(7 * DAY_MS);
    const short = validated({ trackingDeadlineMs: 3_600_000 });
    expect(short.a.limits(short.request).trackingDeadlineMs).toBe(3_600_000);
  });

  it("A: without a per-token rate, estimate and charge are unpriced", async () => {
    const { a, request } = validated();
    expect(await a.estimate(request)).toEqual({ microUsd: null, source: "unpriced: A bills in tokens; set a per-token rate" });
    const charge = a.charge(request, succeeded({ tokens: 108_000, raw: { total_tokens: 108_000 } }));
    expect(charge.microUsd).toBeNull();
    expect(charge.source).toMatch(/^unpriced: A bills in tokens; set a per-token rate/);
  });

  it("A: with a per-token rate the charge is tokens × rate; the estimate stays unpriced and says why", async () => {
    const { a, request } = validated({ microUsdPerToken: 2.5 });
    const estimate = await a.estimate(request);
    expect(estimate.microUsd).toBeNull();
    expect(estimate.source).toMatch(/no way to predict/);
    expect(a.charge(request, succeeded({ tokens: 108_001, raw: {} }))).toEqual({
      microUsd: 270_003,
      source: "108001 tokens × 2.5 micro-USD per token (configured rate)",
    });
    expect(a.charge(request, succeeded({ tokens: null, raw: {} })).microUsd).toBeNull();
    expect(a.charge(request, { kind: "failed", providerStatus: "failed", code: "generation_failed", message: "", raw: {} }).microUsd).toBeNull();
    expect(() => adapter({ microUsdPerToken: -1 })).toThrow(ConfigError);
  });

  it("A: there is no cancel (the operation is not published)", () => {
    expect(adapter().cancel).toBeUndefined();
  });
});

describe("A: base paths", () => {
  it("A: /v1/ and /v2/ paths are never built", () => {
    expect(() => adapter({ baseUrl: "https://a.example/v1" })).toThrow(ConfigError);
    expect(() => adapter({ baseUrl: "https://a.example/v2/" })).toThrow(/no such API version|\/v1\/ or \/v2\//);
    expect(() => adapter({ baseUrl: "https://a.example/proxy/v1/a" })).toThrow(ConfigError);
  });

  it("A: the base URL stops before /api, so a key and a base path of different plans are never mixed", () => {
    expect(() => adapter({ baseUrl: "https://a.example/api/v3" })).toThrow(/stop before \/api/);
    expect(() => adapter({ baseUrl: "https://a.example/api/plan/v3", enterprise: false })).toThrow(ConfigError);
    expect(() => adapter({ baseUrl: "ftp://a.example" })).toThrow(ConfigError);
    expect(() => adapter({ baseUrl: "https://a.example/proxy/a/" })).not.toThrow();
  });
});

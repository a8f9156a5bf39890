import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/core/errors.js";
import type { JobRequest, ProviderStatus } from "../../../src/providers/adapter.js";
import { createCAdapter, type CAdapterConfig } from "../../../src/providers/c/index.js";
import { inputError } from "../../helpers/errors.js";

function adapter(config: Partial<CAdapterConfig> = {}) {
  return createCAdapter({ baseUrl: "https://c.example", apiKey: "key", tier: "free", ...config });
}

function validate(input: Record<string, unknown>, extra: Partial<JobRequest> = {}) {
  return adapter().validate({ provider: "c", model: "v6", input, ...extra });
}


describe("C: submit body", () => {
  it("C: the body carries the prompt, the model and only the fields given", () => {
    expect(validate({ prompt: "a paper boat" }).body).toEqual({ prompt: "a paper boat", model: "v6" });
    const seen = { prompt: "a paper boat", aspect_ratio: "16:9", duration: 5, quality: "720p", motion_mode: "normal", seed: 0 };
    const validated = validate(seen);
    expect(validated.body).toEqual({ ...seen, model: "v6" });
    expect(validated.warnings).toEqual([]);
  });

  it("C: the prompt is required", () => {
    expect(inputError(() => validate({})).field).toBe("prompt");
    expect(inputError(() => validate({ prompt: "  " })).field).toBe("prompt");
  });

  it("C: field types are checked; the allowed sets are not published, so other values are sent with a warning", () => {
    expect(inputError(() => validate({ prompt: "x", duration: "5" })).field).toBe("duration");
    expect(inputError(() => validate({ prompt: "x", duration: 0 })).field).toBe("duration");
    expect(inputError(() => validate({ prompt: "x", seed: -1 })).field).toBe("seed");
    expect(inputError(() => validate({ prompt: "x", aspect_ratio: 1.77 })).field).toBe("aspect_ratio");
    const validated = validate({ prompt: "x", aspect_ratio: "9:16", duration: 8 });
    expect(validated.body).toMatchObject({ aspect_ratio: "9:16", duration: 8 });
    expect(validated.warnings).toHaveLength(2);
    expect(validated.warnings[0]).toMatch(/aspect_ratio 9:16 is not the value the spec shows \(16:9\)/);
  });

  it("C: fields C does not have, images and other operations are refused", () => {
    expect(inputError(() => validate({ prompt: "x", ratio: "16:9" })).allowed).toMatch(/aspect_ratio/);
    expect(inputError(() => validate({ prompt: "x", width: 512 })).reason).toMatch(/no width or height/);
    expect(inputError(() => validate({ prompt: "x" }, { images: ["https://e.com/a.png"] })).reason).toMatch(/image-to-video route is not published/);
    expect(inputError(() => validate({ prompt: "x" }, { operation: "image_to_video" })).field).toBe("operation");
    expect(inputError(() => validate({ prompt: "x", model: "v5" })).field).toBe("model");
  });
});

describe("C: limits and prices", () => {
  it("C: slots by tier: free 3, essential 15, scale 20, business 25", () => {
    const request = validate({ prompt: "x" });
    for (const [tier, capacity] of [["free", 3], ["essential", 15], ["scale", 20], ["business", 25]] as const) {
      expect(adapter({ tier }).limits(request).slotPools).toEqual([{ key: "c:account", capacity }]);
    }
    expect(() => adapter({ tier: "gold" as never })).toThrow(ConfigError);
  });

  it("C: polled every 3 to 5 seconds, with no published request rate and no idempotent submit", () => {
    const limits = adapter().limits(validate({ prompt: "x" }));
    expect(limits).toMatchObject({ poll: { minIntervalMs: 3_000, maxIntervalMs: 5_000 }, rateWindows: [], idempotentSubmit: false, trackingDeadlineMs: 3_600_000 });
    expect(adapter({ trackingDeadlineMs: 120_000 }).limits(validate({ prompt: "x" })).trackingDeadlineMs).toBe(120_000);
  });

  it("C: estimates are unpriced (C's prices are not in the spec)", async () => {
    const c = adapter();
    const request = validate({ prompt: "x" });
    expect(await c.estimate(request)).toEqual({ microUsd: null, source: "unpriced: C's prices are not in the spec" });
    const done: ProviderStatus = { kind: "succeeded", providerStatus: "1 (success)", outputs: [{ url: "https://e.com/v.mp4" }], raw: {} };
    expect(c.charge(request, done).microUsd).toBeNull();
  });

  it("C: there is no cancel (no cancel endpoint)", () => {
    expect(adapter().cancel).toBeUndefined();
  });
});

describe("C: prompt length", () => {
  it("C: a prompt over 1,000 characters is sent as given with a warning that C publishes no prompt length limit", () => {
    const validated = validate({ prompt: "x".repeat(1_001) });
    expect(validated.body.prompt).toHaveLength(1_001);
    expect(validated.warnings.join("\n")).toMatch(/^prompt is 1,001 characters long; C publishes no prompt length limit/);
    expect(validate({ prompt: "x".repeat(1_000) }).warnings).toEqual([]);
  });
});

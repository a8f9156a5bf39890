import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/core/errors.js";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createFAdapter, F_PRICE_SOURCE, type FAdapterConfig } from "../../../src/providers/f/index.js";
import { inputError } from "../../helpers/errors.js";

const adapter = createFAdapter({ baseUrl: "https://f.example", apiKey: "key" });
const request = (input: Record<string, unknown>, extra: Partial<JobRequest> = {}): JobRequest => ({ provider: "f", model: "img-v3", input, ...extra });
const validate = (input: Record<string, unknown>, extra: Partial<JobRequest> = {}, config: Partial<FAdapterConfig> = {}) =>
  createFAdapter({ baseUrl: "https://f.example", apiKey: "key", ...config }).validate(request(input, extra));

describe("F: prompts", () => {
  it("F: text_prompt alone is sent as the text_prompt form field", () => {
    const validated = validate({ text_prompt: "a red kite over dunes" });
    expect(validated.body).toEqual({ text_prompt: "a red kite over dunes" });
    expect(validated.facts).toMatchObject({ promptKind: "text", model: "img-v3" });
    expect(validated.warnings).toEqual([]);
  });

  it("F: json_prompt given as an object is sent as its JSON text", () => {
    const validated = validate({ json_prompt: { subject: "kite", style: { palette: ["red"] } } });
    expect(validated.body).toEqual({ json_prompt: '{"subject":"kite","style":{"palette":["red"]}}' });
    expect(validated.facts).toMatchObject({ promptKind: "json" });
  });

  it("F: json_prompt given as JSON text of an object is sent exactly as given", () => {
    const text = '{ "subject": "kite" }';
    expect(validate({ json_prompt: text }).body).toEqual({ json_prompt: text });
  });

  it("F: text_prompt and json_prompt together are refused (mutually exclusive)", () => {
    const error = inputError(() => validate({ text_prompt: "kite", json_prompt: { subject: "kite" } }));
    expect(error.field).toBe("text_prompt");
    expect(error.reason).toMatch(/mutually exclusive/);
  });

  it("F: neither text_prompt nor json_prompt is refused", () => {
    expect(inputError(() => validate({ resolution: "1024x1024" })).field).toBe("text_prompt");
  });

  it("F: an empty text_prompt is refused", () => {
    expect(inputError(() => validate({ text_prompt: "  " })).field).toBe("text_prompt");
  });

  it("F: json_prompt must be a structured object (not an array, a number, non-JSON text or {})", () => {
    for (const value of [["kite"], 3, "not json", "[1]", {}, "{}"]) {
      expect(inputError(() => validate({ json_prompt: value })).field).toBe("json_prompt");
    }
  });
});

describe("F: resolution", () => {
  it("F: resolution in WIDTHxHEIGHT form is sent as given", () => {
    const validated = validate({ text_prompt: "kite", resolution: "1280x768" });
    expect(validated.body.resolution).toBe("1280x768");
    expect(validated.facts).toMatchObject({ resolution: "1280x768", width: 1280, height: 768 });
  });

  it("F: resolution not in width x height form is refused", () => {
    for (const value of ["1024", "1024*1024", "1024 x 1024", "1024X1024", "0x512", "-1x5", "01024x1024", 1024]) {
      expect(inputError(() => validate({ text_prompt: "kite", resolution: value })).field).toBe("resolution");
    }
  });

  it("F: without resolution nothing is sent and F's default applies", () => {
    const validated = validate({ text_prompt: "kite" });
    expect(validated.body).not.toHaveProperty("resolution");
    expect(validated.facts).toMatchObject({ resolution: null });
  });
});

describe("F: rendering speed", () => {
  it("F: FLASH is refused before sending (it returns 400 on this model version)", () => {
    const error = inputError(() => validate({ text_prompt: "kite", rendering_speed: "FLASH" }));
    expect(error.field).toBe("rendering_speed");
    expect(error.reason).toMatch(/FLASH returns 400/);
    expect(inputError(() => validate({ text_prompt: "kite", rendering_speed: "flash" })).field).toBe("rendering_speed");
  });

  it("F: FLASH is accepted on a model configured as allowing it", () => {
    const validated = validate({ text_prompt: "kite", rendering_speed: "FLASH" }, { model: "img-v2" }, { flashAllowedModels: ["img-v2"] });
    expect(validated.body.rendering_speed).toBe("FLASH");
  });

  it("F: other rendering_speed values are not published: sent unchecked with a warning", () => {
    const validated = validate({ text_prompt: "kite", rendering_speed: "TURBO" });
    expect(validated.body.rendering_speed).toBe("TURBO");
    expect(validated.warnings).toEqual([expect.stringMatching(/rendering_speed "TURBO".*not publish/)]);
  });

  it("F: with configured rendering_speed values, others are refused and known ones pass silently", () => {
    const config = { renderingSpeeds: ["TURBO", "DEFAULT", "QUALITY"] };
    expect(validate({ text_prompt: "kite", rendering_speed: "QUALITY" }, {}, config).warnings).toEqual([]);
    expect(inputError(() => validate({ text_prompt: "kite", rendering_speed: "WARP" }, {}, config)).field).toBe("rendering_speed");
  });

  it("F: rendering_speed must be a non-empty string", () => {
    for (const value of ["", 2, null]) expect(inputError(() => validate({ text_prompt: "kite", rendering_speed: value })).field).toBe("rendering_speed");
  });
});

describe("F: other fields and the model", () => {
  it("F: fields the spec does not show are passed through as text with a warning", () => {
    const validated = validate({ text_prompt: "kite", num_images: 2, seed: 7, magic_prompt: "OFF", tiled: false });
    expect(validated.body).toEqual({ text_prompt: "kite", num_images: "2", seed: "7", magic_prompt: "OFF", tiled: "false" });
    expect(validated.facts).toMatchObject({ uncheckedFields: ["num_images", "seed", "magic_prompt", "tiled"] });
    expect(validated.warnings).toHaveLength(4);
    expect(validated.warnings[0]).toMatch(/num_images is not a field the F spec shows/);
  });

  it("F: an unshown field that has no plain text form (object, array, null) is refused", () => {
    for (const value of [{ a: 1 }, [1], null]) expect(inputError(() => validate({ text_prompt: "kite", style: value })).field).toBe("style");
  });

  it("F: webhook_url is not an input field (it comes from MEDIAGATE_PUBLIC_URL as a query parameter)", () => {
    expect(inputError(() => validate({ text_prompt: "kite", webhook_url: "https://hooks.example/f" })).field).toBe("webhook_url");
  });

  it("F: reference images cannot be sent (the spec shows no field for them)", () => {
    expect(inputError(() => validate({ text_prompt: "kite" }, { images: ["https://img.example/a.png"] })).field).toBe("images");
  });

  it("F: one operation, generate", () => {
    expect(validate({ text_prompt: "kite" }, { operation: "generate" }).operation).toBeNull();
    expect(inputError(() => validate({ text_prompt: "kite" }, { operation: "edit" })).field).toBe("operation");
  });

  it("F: the model is a slug that stays one path segment", () => {
    for (const model of ["", "img/v3", "..", "img v3", "img-v3?x=1"]) {
      expect(inputError(() => adapter.validate({ provider: "f", model, input: { text_prompt: "kite" } })).field).toBe("model");
    }
  });

  it("F: with configured models, other slugs are refused and models() lists them", () => {
    const configured = createFAdapter({ baseUrl: "https://f.example", apiKey: "key", models: ["img-v3"] });
    expect(configured.models()).toEqual(["img-v3"]);
    expect(inputError(() => configured.validate({ provider: "f", model: "img-v9", input: { text_prompt: "kite" } })).field).toBe("model");
    expect(adapter.models()).toEqual([]);
  });
});

describe("F: limits, pricing and configuration", () => {
  const validated = validate({ text_prompt: "kite" });

  it("F: no limits are published: a conservative 60 requests a minute and 8 generations in flight, configurable", () => {
    expect(adapter.limits(validated)).toMatchObject({
      rateWindows: [{ key: "f:account", limit: 60, windowMs: 60_000 }],
      slotPools: [{ key: "f:account", capacity: 8 }],
      poll: { minIntervalMs: 1_000, maxIntervalMs: 10_000 },
      trackingDeadlineMs: 30 * 60_000,
    });
    const tuned = createFAdapter({ baseUrl: "https://f.example", apiKey: "key", requestsPerMinute: 300, concurrency: 20, trackingDeadlineMs: 60_000 });
    expect(tuned.limits(validated)).toMatchObject({ rateWindows: [{ limit: 300 }], slotPools: [{ capacity: 20 }], trackingDeadlineMs: 60_000 });
  });

  it("F: submit is not idempotent (a lost answer is never resent automatically)", () => {
    expect(adapter.limits(validated).idempotentSubmit).toBe(false);
  });

  it("F: billed per image with no published price: unpriced, and the source says so", async () => {
    expect(await adapter.estimate(validated)).toEqual({ microUsd: null, source: F_PRICE_SOURCE });
    const charge = adapter.charge(validated, { kind: "succeeded", providerStatus: "ready", outputs: [{ url: "https://x/1" }, { url: "https://x/2" }], raw: {} });
    expect(charge).toEqual({ microUsd: null, source: `${F_PRICE_SOURCE}; 2 images generated` });
  });

  it("F: the adapter has webhooks and no cancel (the spec shows none)", () => {
    expect(adapter.id).toBe("f");
    expect(adapter.webhooks).toBeDefined();
    expect(adapter.cancel).toBeUndefined();
  });

  it("F: non-positive limits or tolerance are configuration errors", () => {
    for (const bad of [{ webhookToleranceMs: 0 }, { concurrency: -1 }, { requestsPerMinute: Number.NaN }, { trackingDeadlineMs: 0 }, { jwksRefreshCooldownMs: -5 }]) {
      expect(() => createFAdapter({ baseUrl: "", apiKey: "", ...bad })).toThrow(ConfigError);
    }
  });
});

describe("F: prompt length", () => {
  it("F: a text_prompt or json_prompt over 1,000 characters is sent as given with a warning that F publishes no prompt length limit", () => {
    const text = validate({ text_prompt: "x".repeat(1_001) });
    expect(text.body.text_prompt).toHaveLength(1_001);
    expect(text.warnings.join("\n")).toMatch(/text_prompt is 1,001 characters long; F publishes no prompt length limit/);
    const json = validate({ json_prompt: { subject: "x".repeat(1_000) } });
    expect(json.warnings.join("\n")).toMatch(/json_prompt is 1,014 characters long; F publishes no prompt length limit/);
    expect(validate({ text_prompt: "x".repeat(1_000) }).warnings).toEqual([]);
  });
});

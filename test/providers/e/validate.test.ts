import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/core/errors.js";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createEAdapter, E_OPERATIONS, E_UNPRICED_SOURCE, mediaTypeOf, type EAdapterConfig } from "../../../src/providers/e/index.js";
import { renderPng } from "../../../src/sandbox/media/png.js";
import { inputError } from "../../helpers/errors.js";

const config: EAdapterConfig = { baseUrl: "https://e.example", authUrl: "https://auth.example", clientId: "client", clientSecret: "secret-value" };
const adapter = createEAdapter(config);
const PNG = renderPng(8, 8, "x", 1);
const local = (bytes: Buffer = PNG, fileName = "a.png") => ({ fileName, bytes });

function job(input: Record<string, unknown>, extra: Partial<JobRequest> = {}): JobRequest {
  return { provider: "e", model: "v3", input, ...extra };
}

describe("E: models and operations", () => {
  it("E: the model chooses the generate version, v3 or v4; anything else is refused", () => {
    expect(adapter.models()).toEqual(["v3", "v4"]);
    expect(adapter.validate(job({ prompt: "x" })).model).toBe("v3");
    expect(adapter.validate(job({ prompt: "x" }, { model: "v4" })).facts.path).toBe("/v4/images/generate-async");
    expect(inputError(() => adapter.validate(job({ prompt: "x" }, { model: "v5" }))).field).toBe("model");
    expect(inputError(() => adapter.validate(job({ prompt: "x" }, { model: "" }))).field).toBe("model");
  });

  it("E: the operation defaults to generate-image; the spec's five operations are accepted by name or short alias", () => {
    expect(E_OPERATIONS).toEqual(["generate-image", "expand-image", "fill-image", "generate-object-composite", "generate-similar-images"]);
    expect(adapter.validate(job({ prompt: "x" }))).toMatchObject({ operation: "generate-image", facts: { path: "/v3/images/generate-async" } });
    const aliases: Record<string, string> = { expand: "expand-image", fill: "fill-image", "object-composite": "generate-object-composite", similar: "generate-similar-images" };
    for (const [alias, operation] of Object.entries(aliases)) {
      expect(adapter.validate(job({ prompt: "x" }, { operation: alias, images: [local()] })).operation).toBe(operation);
    }
    const error = inputError(() => adapter.validate(job({ prompt: "x" }, { operation: "upscale" })));
    expect(error.field).toBe("operation");
    expect(error.allowed).toContain("generate-similar-images");
  });

  it("E: v4 is only the newer model's generate: other operations with v4 are refused", () => {
    const error = inputError(() => adapter.validate(job({ prompt: "x" }, { model: "v4", operation: "expand-image", images: [local()] })));
    expect(error).toMatchObject({ field: "model", allowed: "v3" });
  });

  it("E: expand goes to the shown /v3/images/expand-async; fill, composite and similar paths are not shown: a warning names the path used", () => {
    expect(adapter.validate(job({}, { operation: "expand-image", images: [local()] }))).toMatchObject({ facts: { path: "/v3/images/expand-async", pathShown: true }, warnings: [] });
    const paths = { "fill-image": "/v3/images/fill-async", "generate-object-composite": "/v3/images/generate-object-composite-async", "generate-similar-images": "/v3/images/generate-similar-async" };
    for (const [operation, path] of Object.entries(paths)) {
      const validated = adapter.validate(job({}, { operation, images: [local()] }));
      expect(validated.facts).toMatchObject({ path, pathShown: false });
      expect(validated.warnings).toEqual([`E's spec does not show the path of ${operation}; mediagate sends it to ${path}`]);
    }
  });

  it("E: the unshown paths are configurable, the shown ones are not", () => {
    const custom = createEAdapter({ ...config, operationPaths: { "fill-image": "/v3/images/fill-custom-async" } });
    expect(custom.validate(job({}, { operation: "fill-image", images: [local()] })).facts.path).toBe("/v3/images/fill-custom-async");
    expect(() => createEAdapter({ ...config, operationPaths: { "expand-image": "/x" } as never })).toThrow(ConfigError);
    expect(() => createEAdapter({ ...config, operationPaths: { "fill-image": "/v3/../admin" } })).toThrow(ConfigError);
    expect(() => createEAdapter({ ...config, operationPaths: { "fill-image": "https://elsewhere.example/fill" } })).toThrow(ConfigError);
  });
});

describe("E: submit fields", () => {
  it("E: generate needs a text prompt, a non-empty string", () => {
    expect(inputError(() => adapter.validate(job({})))).toMatchObject({ field: "prompt" });
    expect(inputError(() => adapter.validate(job({ prompt: "  " })))).toMatchObject({ field: "prompt" });
    expect(inputError(() => adapter.validate(job({ prompt: 3 })))).toMatchObject({ field: "prompt" });
    expect(inputError(() => adapter.validate(job({ prompt: "" }, { operation: "expand-image", images: [local()] })))).toMatchObject({ field: "prompt" });
  });

  it("E: contentClass art and photo are the values seen; another string passes with a warning, a non-string is refused", () => {
    expect(adapter.validate(job({ prompt: "x", contentClass: "art" })).warnings).toEqual([]);
    expect(adapter.validate(job({ prompt: "x", contentClass: "photo" })).warnings).toEqual([]);
    expect(adapter.validate(job({ prompt: "x", contentClass: "vector" })).warnings).toEqual([expect.stringContaining('contentClass "vector" is not one of the values')]);
    expect(inputError(() => adapter.validate(job({ prompt: "x", contentClass: 1 })))).toMatchObject({ field: "contentClass" });
  });

  it("E: fields the spec does not name are sent unchanged, and the warnings say they are unchecked", () => {
    const input = { prompt: "x", style: { presets: ["bw"] }, customModelId: "cm-1", size: { width: 2048, height: 2048 } };
    const validated = adapter.validate(job(input));
    expect(validated.body).toEqual(input);
    expect(validated.warnings).toEqual([
      "style is not a field E's spec shows; sent unchanged and unchecked",
      "customModelId is not a field E's spec shows; sent unchanged and unchecked",
      "size is not a field E's spec shows; sent unchanged and unchecked",
    ]);
  });

  it("E: image-to-image operations need a source image: a local file, or a native field sent unchecked", () => {
    for (const operation of ["expand-image", "fill-image", "generate-object-composite", "generate-similar-images"]) {
      expect(inputError(() => adapter.validate(job({ prompt: "x" }, { operation })))).toMatchObject({ field: "images" });
    }
    const native = adapter.validate(job({ image: { source: { url: "https://cdn.example/a.png" } } }, { operation: "expand-image" }));
    expect(native.body).toEqual({ image: { source: { url: "https://cdn.example/a.png" } } });
    expect(native.warnings).toEqual(["image is not a field E's spec shows; sent unchanged and unchecked"]);
  });

  it("E: a URL as a source image is refused: the spec shows source images only as uploads", () => {
    const error = inputError(() => adapter.validate(job({}, { operation: "expand-image", images: ["https://cdn.example/a.png"] })));
    expect(error.field).toBe("images[0]");
    expect(error.reason).toMatch(/only as uploads/);
  });

  it("E: generate takes no source image; expand, composite and similar one; fill two (image and mask)", () => {
    expect(inputError(() => adapter.validate(job({ prompt: "x" }, { images: [local()] })))).toMatchObject({ field: "images" });
    expect(inputError(() => adapter.validate(job({}, { operation: "expand-image", images: [local(), local()] })))).toMatchObject({ field: "images[1]" });
    const fill = adapter.validate(job({ prompt: "x" }, { operation: "fill-image", images: [local(), local(renderPng(8, 8, "m", 2), "m.png")] }));
    expect((fill.facts.uploads as Array<{ field: string }>).map((upload) => upload.field)).toEqual(["image", "mask"]);
    expect(inputError(() => adapter.validate(job({ image: {} }, { operation: "expand-image", images: [local()] })))).toMatchObject({ field: "images[0]" });
  });

  it("E: a local image must be non-empty PNG, JPEG or WebP bytes (the upload types E accepts are not shown)", () => {
    expect(inputError(() => adapter.validate(job({}, { operation: "expand-image", images: [local(Buffer.alloc(0))] }))).field).toBe("images[0]");
    expect(inputError(() => adapter.validate(job({}, { operation: "expand-image", images: [local(Buffer.from("GIF89a...."), "a.gif")] }))).field).toBe("images[0] (a.gif)");
    expect(mediaTypeOf(PNG)).toBe("image/png");
    expect(mediaTypeOf(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe("image/jpeg");
    expect(mediaTypeOf(Buffer.from("RIFF\0\0\0\0WEBPVP8 ", "latin1"))).toBe("image/webp");
  });
});

describe("E: limits, pricing and configuration", () => {
  const validated = adapter.validate(job({ prompt: "x" }));

  it("E: every request counts against 4 per minute and 9,000 per day for the organisation", () => {
    expect(adapter.limits(validated).rateWindows).toEqual([
      { key: "e:org", limit: 4, windowMs: 60_000 },
      { key: "e:org:day", limit: 9_000, windowMs: 86_400_000 },
    ]);
  });

  it("E: no concurrency ceiling is published, so there is no slot pool", () => {
    expect(adapter.limits(validated).slotPools).toEqual([]);
  });

  it("E: polls are paced between 15 s and 60 s to fit 4 requests a minute", () => {
    expect(adapter.limits(validated).poll).toEqual({ minIntervalMs: 15_000, maxIntervalMs: 60_000 });
  });

  it("E: tracking gives up after one hour by default (a job stuck in running), configurable", () => {
    expect(adapter.limits(validated).trackingDeadlineMs).toBe(3_600_000);
    expect(createEAdapter({ ...config, trackingDeadlineMs: 7_200_000 }).limits(validated).trackingDeadlineMs).toBe(7_200_000);
    expect(() => createEAdapter({ ...config, trackingDeadlineMs: 0 })).toThrow(ConfigError);
  });

  it("E: submit is not idempotent (a lost answer is never resent automatically)", () => {
    expect(adapter.limits(validated).idempotentSubmit).toBe(false);
  });

  it("E: no price is published: estimates and charges are unpriced and say so", async () => {
    expect(await adapter.estimate(validated)).toEqual({ microUsd: null, source: E_UNPRICED_SOURCE });
    const charge = adapter.charge(validated, { kind: "succeeded", providerStatus: "succeeded", outputs: [], raw: {} });
    expect(charge.microUsd).toBeNull();
    expect(charge.source).toMatch(/unpriced/);
  });

  it("E: events or callbacks are not shown: no webhooks, no settlement", () => {
    expect(adapter.webhooks).toBeUndefined();
    expect(adapter.settle).toBeUndefined();
    expect(adapter.cancel).toBeTypeOf("function");
  });

  it("E: works for validation and quotes without URLs or credentials; the secret is a secret from the start", async () => {
    const unconfigured = createEAdapter({ baseUrl: "", authUrl: "", clientId: "", clientSecret: "" });
    expect((await unconfigured.estimate(unconfigured.validate(job({ prompt: "x" })))).microUsd).toBeNull();
    expect(unconfigured.secrets()).toEqual([]);
    expect(adapter.secrets()).toEqual(["secret-value"]);
    expect(adapter.id).toBe("e");
  });

  it("E: a scope list with an unfilled <placeholder>, a comma or an empty entry is a configuration error", () => {
    expect(() => createEAdapter({ ...config, scopes: ["openid", "<vendor>ID"] })).toThrow(ConfigError);
    expect(() => createEAdapter({ ...config, scopes: ["openid,read_organizations"] })).toThrow(ConfigError);
    expect(() => createEAdapter({ ...config, scopes: [] })).toThrow(ConfigError);
    expect(() => createEAdapter({ ...config, scopeNames: { vendor: "A B", service: "s", serviceShort: "s" } })).toThrow(ConfigError);
    expect(() => createEAdapter({ ...config, cancelMethod: "PATCH" as never })).toThrow(ConfigError);
  });
});

describe("E: prompt length", () => {
  it("E: a prompt over 1,000 characters is sent as given with a warning that E publishes no prompt length limit", () => {
    const validated = adapter.validate(job({ prompt: "x".repeat(1_001) }));
    expect(validated.body.prompt).toHaveLength(1_001);
    expect(validated.warnings.join("\n")).toMatch(/prompt is 1,001 characters long; E publishes no prompt length limit/);
    expect(adapter.validate(job({ prompt: "x".repeat(1_000) })).warnings).toEqual([]);
  });
});

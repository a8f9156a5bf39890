import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createFAdapter, type FAdapterConfig } from "../../../src/providers/f/index.js";
import { inputError } from "../../helpers/errors.js";

const validate = (input: unknown, extra: Partial<JobRequest> = {}, config: Partial<FAdapterConfig> = {}) =>
  createFAdapter({ baseUrl: "https://f.example", apiKey: "key", ...config }).validate({ provider: "f", model: "img-v3", input: input as Record<string, unknown>, ...extra });

describe("F: the request as a whole", () => {
  it("F: input must be an object", () => {
    for (const input of [null, [], Buffer.from("{}"), "kite"]) expect(inputError(() => validate(input)).field).toBe("input");
  });

  it("F: a validated request is F's generate", () => {
    expect(validate({ text_prompt: "kite" })).toMatchObject({ provider: "f", model: "img-v3", operation: null });
    expect(inputError(() => validate({ text_prompt: "kite" }, { operation: "edit" })).allowed).toBe("generate");
  });

  it("F: an empty images list is no reference image", () => {
    expect(validate({ text_prompt: "kite" }, { images: [] }).body).toEqual({ text_prompt: "kite" });
  });

  it("F: a field given as undefined is absent, not sent", () => {
    const validated = validate({ text_prompt: "kite", seed: undefined });
    expect(validated.body).toEqual({ text_prompt: "kite" });
    expect(validated.facts).toMatchObject({ uncheckedFields: [] });
  });
});

describe("F: the model slug", () => {
  it("F: the model is required: an empty or non-string model is refused as missing", () => {
    for (const model of ["", 42]) {
      const error = inputError(() => validate({ text_prompt: "kite" }, { model: model as string }));
      expect(error.field).toBe("model");
      expect(error.reason).toMatch(/is required/);
      expect(error.allowed).toMatch(/model slug/);
    }
  });

  it("F: with configured models, a refusal lists them", () => {
    const error = inputError(() => validate({ text_prompt: "kite" }, { model: "img-v9" }, { models: ["img-v3", "img-v4"] }));
    expect(error.reason).toMatch(/"img-v9" is not a configured F model/);
    expect(error.allowed).toBe("img-v3, img-v4");
    expect(inputError(() => validate({ text_prompt: "kite" }, { model: "" }, { models: ["img-v3", "img-v4"] })).allowed).toBe("img-v3, img-v4");
  });
});

describe("F: prompt refusals say what was wrong", () => {
  const allowed = /exactly one of text_prompt .* or json_prompt/;

  it("F: a missing prompt is required; both or neither name the one-of rule", () => {
    const neither = inputError(() => validate({}));
    expect(neither.reason).toMatch(/required/);
    expect(neither.allowed).toMatch(allowed);
    expect(inputError(() => validate({ text_prompt: "kite", json_prompt: { a: 1 } })).allowed).toMatch(allowed);
  });

  it("F: text_prompt must be a non-empty string", () => {
    for (const value of [5, "", "  "]) {
      const error = inputError(() => validate({ text_prompt: value }));
      expect(error).toMatchObject({ field: "text_prompt", reason: "must be a non-empty string" });
    }
  });

  it("F: each way json_prompt can be wrong is said", () => {
    const reasonOf = (value: unknown) => inputError(() => validate({ json_prompt: value })).reason;
    expect(reasonOf({})).toMatch(/empty object/);
    expect(reasonOf("not json")).toMatch(/not JSON/);
    expect(reasonOf("[1]")).toMatch(/JSON text of a non-empty object/);
    expect(reasonOf(3)).toMatch(/structured prompt object/);
    expect(reasonOf(null)).toMatch(/structured prompt object/);
    expect(inputError(() => validate({ json_prompt: 3 })).allowed).toMatch(/JSON object/);
  });
});

describe("F: resolution and rendering speed", () => {
  it("F: resolution is exactly WIDTHxHEIGHT: nothing may follow", () => {
    const error = inputError(() => validate({ text_prompt: "kite", resolution: "1024x1024px" }));
    expect(error.field).toBe("resolution");
    expect(error.reason).toMatch(/"1024x1024px"/);
    expect(error.allowed).toMatch(/1024x1024/);
    expect(inputError(() => validate({ text_prompt: "kite", resolution: 1024 })).reason).toMatch(/must be a string/);
  });

  it("F: resolution is a shown field: no unchecked-field warning", () => {
    const validated = validate({ text_prompt: "kite", resolution: "1024x1024" });
    expect(validated.warnings).toEqual([]);
    expect(validated.facts).toMatchObject({ uncheckedFields: [] });
  });

  it("F: rendering_speed must be a non-empty string, and its refusals say what is allowed", () => {
    const blank = inputError(() => validate({ text_prompt: "kite", rendering_speed: "  " }));
    expect(blank).toMatchObject({ field: "rendering_speed", reason: "must be a non-empty string" });
    expect(blank.allowed).toMatch(/FLASH/);
    const configured = { renderingSpeeds: ["TURBO", "DEFAULT", "QUALITY"] };
    const unknown = inputError(() => validate({ text_prompt: "kite", rendering_speed: "WARP" }, {}, configured));
    expect(unknown.reason).toMatch(/"WARP"/);
    expect(unknown.allowed).toBe("TURBO, DEFAULT, QUALITY");
  });

  it("F: a configured rendering_speed value is sent", () => {
    const validated = validate({ text_prompt: "kite", rendering_speed: "QUALITY" }, {}, { renderingSpeeds: ["TURBO", "QUALITY"] });
    expect(validated.body.rendering_speed).toBe("QUALITY");
    expect(validated.facts).toMatchObject({ renderingSpeed: "QUALITY" });
  });

  it("F: an unshown number field must be finite to have a text form", () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const error = inputError(() => validate({ text_prompt: "kite", num_images: value }));
      expect(error.field).toBe("num_images");
      expect(error.reason).toMatch(/only strings, numbers and booleans/);
    }
  });
});

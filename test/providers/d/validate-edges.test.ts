import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { D_ENDPOINTS, REFERENCE_VALUE_FORMAT, validateDRequest } from "../../../src/providers/d/index.js";
import { inputError } from "../../helpers/errors.js";
import { pngHeader, urlReferences } from "./images.js";

const URL_A = "https://images.example/a.png";
const base = { prompt: "a lighthouse at dawn", width: 1024, height: 768 };

function validate(input: unknown, extra: Partial<JobRequest> = {}) {
  return validateDRequest({ provider: "d", model: "gen-2-pro", input: input as Record<string, unknown>, ...extra });
}

describe("D: the request as a whole", () => {
  it("D: input must be an object (not null, a string or bytes)", () => {
    for (const input of [null, "a lighthouse", Buffer.from("{}")]) {
      const error = inputError(() => validate(input));
      expect(error.field).toBe("input");
      expect(error.reason).toMatch(/object/);
    }
  });

  it("D: the model is required, listing D's endpoints", () => {
    for (const model of ["", "   ", 42]) {
      const error = inputError(() => validate(base, { model: model as string }));
      expect(error.field).toBe("model");
      expect(error.reason).toMatch(/is required/);
      expect(error.allowed).toBe(D_ENDPOINTS.join(", "));
    }
  });

  it("D: each endpoint has the tier of the spec's table", () => {
    const tiers: Record<string, string> = {
      "gen-2-max": "max",
      "gen-2-pro": "pro",
      "gen-2-pro-preview": "pro",
      "gen-2-flex": "flex",
      "gen-2-compact-4b": "compact",
      "gen-2-compact-9b": "compact",
      "gen-2-compact-9b-preview": "compact",
      "gen-2-compact-9b-kv-finetuned": "compact",
      "gen-ctx-max": "context-editing",
    };
    for (const model of D_ENDPOINTS) expect(validate(base, { model }).facts.tier).toBe(tiers[model]);
  });

  it("D: the body holds no field that was not given (no seed key without a seed)", () => {
    expect(Object.keys(validate(base).body)).toEqual(["prompt", "width", "height"]);
  });
});

describe("D: refusals say what was wrong", () => {
  it("D: a missing prompt is required, not merely malformed", () => {
    expect(inputError(() => validate({ width: 1024, height: 1024 })).reason).toMatch(/is required/);
  });

  it("D: a missing width or height is required, since D's default size is not shown and the price depends on it", () => {
    const error = inputError(() => validate({ prompt: "x", height: 512 }));
    expect(error.field).toBe("width");
    expect(error.reason).toMatch(/is required/);
    expect(error.allowed).toMatch(/multiples of 16 from 64/);
  });

  it("D: a non-integer seed is refused as such", () => {
    expect(inputError(() => validate({ ...base, seed: 1.5 })).reason).toMatch(/integer/);
  });

  it("D: a negative prompt is refused pointing to the prompt", () => {
    expect(inputError(() => validate({ ...base, negative_prompt: "blurry" })).allowed).toMatch(/prompt/);
  });

  it("D: only negative-prompt fields are refused: names that merely contain neg pass through unchecked", () => {
    const validated = validate({ ...base, nonnegative: true, negativity: 1 });
    expect(validated.body).toMatchObject({ nonnegative: true, negativity: 1 });
    expect(validated.warnings).toEqual([
      "nonnegative is not a field the D spec shows; sent unchanged and unchecked",
      "negativity is not a field the D spec shows; sent unchanged and unchecked",
    ]);
  });

  it("D: seed is a field mediagate checks, so it carries no unchecked-field warning", () => {
    expect(validate({ ...base, seed: 7 }).warnings).toEqual([]);
  });

  it("D: model in input that differs from the job's is refused: the model selects the URL path", () => {
    const error = inputError(() => validate({ ...base, model: "gen-2-max" }));
    expect(error.reason).toMatch(/job's model/);
  });

  it("D: the reference limit refusal gives the tier's limit", () => {
    expect(inputError(() => validate({ ...base, ...urlReferences(5) }, { model: "gen-2-compact-4b" })).allowed).toBe("up to 4");
    expect(inputError(() => validate({ ...base, ...urlReferences(9) }, { model: "gen-2-max" })).allowed).toBe("up to 8");
  });
});

describe("D: reference facts", () => {
  it("D: the reference value format is recorded only when references are sent", () => {
    expect(validate(base).facts.referenceValueFormat).toBeNull();
    expect(validate(base, { images: [URL_A] }).facts.referenceValueFormat).toBe(REFERENCE_VALUE_FORMAT);
  });

  it("D: a single reference of known size needs no size assumption", () => {
    const validated = validate(base, { images: [{ fileName: "ref.png", bytes: pngHeader(512, 512) }] });
    expect(validated.facts.referenceSizeAssumption).toBeNull();
    expect(validated.warnings).toEqual([]);
  });

  it("D: with several references each counts as 1 MP, so an unknown size is not warned about", () => {
    expect(validate(base, { images: [URL_A, URL_A] }).warnings).toEqual([]);
  });
});

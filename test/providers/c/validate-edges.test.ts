import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createCAdapter } from "../../../src/providers/c/index.js";
import { inputError } from "../../helpers/errors.js";

const adapter = createCAdapter({ baseUrl: "https://c.example", apiKey: "key", tier: "free" });

function validate(input: unknown, extra: Partial<JobRequest> = {}) {
  return adapter.validate({ provider: "c", model: "v6", input: input as Record<string, unknown>, ...extra });
}

describe("C: the request as a whole", () => {
  it("C: input must be an object", () => {
    for (const input of [null, [], "a paper boat"]) expect(inputError(() => validate(input)).field).toBe("input");
  });

  it("C: the model, a version label such as v6, is required", () => {
    for (const model of ["", "   ", 6]) {
      const error = inputError(() => validate({ prompt: "x" }, { model: model as string }));
      expect(error.field).toBe("model");
      expect(error.allowed).toMatch(/v6/);
    }
  });

  it("C: model repeated in input with the job's own value is accepted; another value is refused", () => {
    expect(validate({ prompt: "x", model: "v6" }).body).toEqual({ prompt: "x", model: "v6" });
    const error = inputError(() => validate({ prompt: "x", model: "v5" }));
    expect(error.field).toBe("model");
    expect(error.reason).toMatch(/job's model/);
  });

  it("C: the one published operation, text_to_video, may be named", () => {
    expect(validate({ prompt: "x" }, { operation: "text_to_video" }).body).toEqual({ prompt: "x", model: "v6" });
    expect(inputError(() => validate({ prompt: "x" }, { operation: "image_to_video" })).allowed).toBe("text_to_video");
  });

  it("C: a validated request is C's text-to-video submit", () => {
    const validated = validate({ prompt: "x" });
    expect(validated).toMatchObject({ provider: "c", model: "v6", operation: null });
    expect(validated.facts).toEqual({ kind: "text_to_video" });
  });
});

describe("C: field refusals say what is allowed", () => {
  it("C: height, like width, is refused pointing to aspect_ratio and quality", () => {
    const error = inputError(() => validate({ prompt: "x", height: 512 }));
    expect(error.field).toBe("height");
    expect(error.allowed).toBe("aspect_ratio and quality");
  });

  it("C: an unknown field is refused listing every field of C's submit body", () => {
    const error = inputError(() => validate({ prompt: "x", ratio: "16:9" }));
    expect(error.field).toBe("ratio");
    expect(error.allowed?.split(", ")).toEqual(["prompt", "aspect_ratio", "duration", "quality", "motion_mode", "seed"]);
  });

  it("C: duration is an integer of at least 1 and seed an integer of at least 0", () => {
    expect(inputError(() => validate({ prompt: "x", duration: 0 })).reason).toMatch(/at least 1/);
    expect(inputError(() => validate({ prompt: "x", seed: -1 })).reason).toMatch(/at least 0/);
    expect(validate({ prompt: "x", duration: 1, seed: 0 }).body).toMatchObject({ duration: 1, seed: 0 });
  });
});

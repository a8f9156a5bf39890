import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { validateDRequest } from "../../../src/providers/d/index.js";
import { anyValue, expectNamesAField, expectRefusedNaming, promptText, RUNS, verdictOf, withField } from "../../helpers/properties.js";
import { jpegHeader, pngHeader } from "./images.js";

/**
 * Spec D's rules, written here from the spec (not read from the client), as
 * the oracle every accepted request must satisfy.
 */
const SPEC = {
  /** spec D Endpoints: the hosted endpoints. */
  endpoints: ["gen-2-max", "gen-2-pro", "gen-2-pro-preview", "gen-2-flex", "gen-2-compact-4b", "gen-2-compact-9b", "gen-2-compact-9b-preview", "gen-2-compact-9b-kv-finetuned", "gen-ctx-max"],
  /** spec D Limits "Reference images": compact up to 4; max, pro and flex up to 8 (gen-ctx-max: not listed, so at most the largest, 8). */
  referenceLimit: (endpoint: string) => (endpoint.includes("compact") ? 4 : 8),
  /** gen-ctx-max's limit is not published: a request within the smallest published limit (4) is valid for it whatever its own is. */
  surelyWithinLimit: (endpoint: string) => (endpoint.includes("compact") || endpoint === "gen-ctx-max" ? 4 : 8),
  /** spec D Limits "Pro input plus output budget": 9 MP across output and references. */
  isPro: (endpoint: string) => endpoint.startsWith("gen-2-pro"),
  megapixel: 1_048_576,
};

const URL = "https://images.example/ref.png";
const PNG_BASE64 = pngHeader(512, 512).toString("base64");
const JPEG_BASE64 = jpegHeader(640, 480).toString("base64");
const TEXT_BASE64 = Buffer.from("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534\n").toString("base64");

function referenceField(position: number): string {
  return position === 1 ? "input_image" : `input_image_${position}`;
}

/** Every way an accepted body may break spec D; empty when it keeps every rule. */
function specViolations(model: string, body: Record<string, unknown>): string[] {
  const violations: string[] = [];
  if (!SPEC.endpoints.includes(model)) violations.push(`model ${model} is not a hosted endpoint`);
  if (typeof body.prompt !== "string" || body.prompt.trim() === "") violations.push("prompt is required");
  for (const side of ["width", "height"] as const) {
    const value = body[side];
    if (typeof value !== "number" || !Number.isInteger(value) || value % 16 !== 0 || value < 64) violations.push(`${side} ${String(value)} is not a multiple of 16 from 64`);
  }
  // spec D "What the service does" 4: negative prompts are not supported.
  if (Object.keys(body).some((key) => /neg/i.test(key))) violations.push("a negative prompt is sent");
  const references = Object.keys(body).filter((key) => key.startsWith("input_image"));
  references.forEach((_, index) => {
    if (!Object.hasOwn(body, referenceField(index + 1))) violations.push(`reference numbering has a gap at ${referenceField(index + 1)}`);
  });
  if (references.length > SPEC.referenceLimit(model)) violations.push(`${references.length} references on ${model}`);
  for (const key of references) if (body[key] === TEXT_BASE64) violations.push(`${key} carries a text file, not an image`);
  if (SPEC.isPro(model) && references.length >= 2) {
    const output = Math.min((body.width as number) * (body.height as number), 4 * SPEC.megapixel);
    if (output + references.length * SPEC.megapixel > 9 * SPEC.megapixel) violations.push("the pro 9 MP budget is exceeded");
  }
  return violations;
}

/** A request built from the spec's rules: any hosted endpoint, a prompt, sides that are multiples of 16 from 64, references within the limits. */
const validRequest: fc.Arbitrary<JobRequest> = fc
  .record({
    model: fc.constantFrom(...SPEC.endpoints),
    prompt: promptText,
    width: fc.integer({ min: 4, max: 128 }).map((steps) => steps * 16),
    height: fc.integer({ min: 4, max: 128 }).map((steps) => steps * 16),
    seed: fc.option(fc.integer({ min: -1_000_000, max: 1_000_000 }), { nil: undefined }),
    references: fc.array(fc.constantFrom(URL, PNG_BASE64, JPEG_BASE64), { maxLength: 8 }),
  })
  .map(({ model, prompt, width, height, seed, references }) => {
    let kept = references.slice(0, SPEC.surelyWithinLimit(model));
    if (SPEC.isPro(model) && kept.length >= 2) {
      const room = Math.floor((9 * SPEC.megapixel - Math.min(width * height, 4 * SPEC.megapixel)) / SPEC.megapixel);
      kept = kept.slice(0, Math.max(room, 1));
    }
    const input: Record<string, unknown> = { prompt, width, height, ...(seed === undefined ? {} : { seed }) };
    kept.forEach((value, index) => (input[referenceField(index + 1)] = value));
    return { provider: "d" as const, model, input };
  });

/** A request with any field possibly wrong: values of the wrong type, off-grid sides, too many or non-image references, a negative prompt. */
const anyRequest: fc.Arbitrary<JobRequest> = fc
  .record({
    model: fc.oneof(fc.constantFrom(...SPEC.endpoints), fc.constantFrom("gen-2-dev", "gen-2-pro-base", "Gen-2-Pro", ""), fc.string({ maxLength: 10 })),
    prompt: fc.oneof(promptText, anyValue),
    width: fc.oneof(fc.integer({ min: 4, max: 300 }).map((steps) => steps * 16), fc.integer({ min: -100, max: 5_000 }), anyValue),
    height: fc.oneof(fc.integer({ min: 4, max: 300 }).map((steps) => steps * 16), fc.integer({ min: -100, max: 5_000 }), anyValue),
    references: fc.array(fc.oneof(fc.constantFrom(URL, PNG_BASE64, JPEG_BASE64, TEXT_BASE64), anyValue), { maxLength: 11 }),
    gapAt: fc.option(fc.integer({ min: 1, max: 11 }), { nil: undefined }),
    negative: fc.option(fc.constantFrom("negative_prompt", "negativePrompt", "neg_prompt"), { nil: undefined }),
    operation: fc.option(fc.constantFrom("edit", "generate"), { nil: undefined, freq: 8 }),
  })
  .map(({ model, prompt, width, height, references, gapAt, negative, operation }) => {
    let input: Record<string, unknown> = {};
    input = withField(input, "prompt", prompt);
    input = withField(input, "width", width);
    input = withField(input, "height", height);
    references.forEach((value, index) => {
      if (index + 1 !== gapAt && value !== undefined) input[referenceField(index + 1)] = value;
    });
    if (negative) input[negative] = "blurry";
    return { provider: "d" as const, model, input, ...(operation ? { operation } : {}) };
  });

describe("D validator, property-based", () => {
  it("D property: a request built from the spec's rules is accepted, and its body is what was asked", () => {
    fc.assert(
      fc.property(validRequest, (request) => {
        const verdict = verdictOf(() => validateDRequest(request));
        if (verdict.kind === "refused") throw new Error(`refused a valid request: ${verdict.error.message}`);
        expect(verdict.validated.body).toEqual(request.input);
        expect(specViolations(request.model, verdict.validated.body)).toEqual([]);
      }),
      RUNS,
    );
  });

  it("D property: no request that breaks a spec rule is accepted; every refusal is an InputError naming a field of the request", () => {
    fc.assert(
      fc.property(anyRequest, (request) => {
        const verdict = verdictOf(() => validateDRequest(request));
        if (verdict.kind === "accepted") expect(specViolations(verdict.validated.model, verdict.validated.body)).toEqual([]);
        // A required field that is absent is named too.
        else expectNamesAField(verdict.error, request, ["prompt", "width", "height"]);
      }),
      RUNS,
    );
  });

  it("D property: breaking one rule of a valid request is refused naming that field", () => {
    const breaking = fc.oneof(
      fc.record({ field: fc.constant("width"), value: fc.integer({ min: 65, max: 4_000 }).filter((value) => value % 16 !== 0) }),
      fc.record({ field: fc.constant("height"), value: fc.integer({ min: -64, max: 63 }) }),
      fc.record({ field: fc.constant("prompt"), value: fc.constantFrom("", "  ", 7, null) }),
      fc.record({ field: fc.constant("seed"), value: fc.constantFrom(1.5, "7", true) }),
      fc.record({ field: fc.constant("negative_prompt"), value: promptText }),
    );
    fc.assert(
      fc.property(validRequest, breaking, (request, { field, value }) => {
        expectRefusedNaming(() => validateDRequest({ ...request, input: { ...request.input, [field]: value } }), field);
      }),
      RUNS,
    );
  });

  it("D property: a reference over the endpoint's limit (gen-ctx-max's unpublished one taken as 4), or a local file that is not an image, is refused naming it", () => {
    fc.assert(
      fc.property(validRequest, fc.constantFrom(...SPEC.endpoints), (request, model) => {
        const limit = SPEC.surelyWithinLimit(model);
        const input: Record<string, unknown> = { prompt: request.input.prompt, width: 256, height: 256 };
        for (let position = 1; position <= limit + 1; position++) input[referenceField(position)] = URL;
        expectRefusedNaming(() => validateDRequest({ provider: "d", model, input }), /^input_image/);
        const text = { fileName: "notes.txt", bytes: Buffer.from(String(request.input.prompt)) };
        expectRefusedNaming(() => validateDRequest({ provider: "d", model, input: { prompt: "x", width: 256, height: 256 }, images: [text] }), "images[0]");
      }),
      { numRuns: 50 },
    );
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createCAdapter } from "../../../src/providers/c/index.js";
import { anyValue, expectNamesAField, expectRefusedNaming, promptText, RUNS, verdictOf, withField } from "../../helpers/properties.js";

const adapter = createCAdapter({ baseUrl: "https://c.example", apiKey: "key", tier: "free" });

/** spec C submit request: the body's fields and their types (allowed sets and required fields are not shown). */
const SPEC_FIELDS = ["prompt", "model", "aspect_ratio", "duration", "quality", "motion_mode", "seed"];

/** Every way an accepted body may break spec C's submit request; empty when it keeps every rule. */
function specViolations(request: JobRequest, body: Record<string, unknown>): string[] {
  const violations: string[] = [];
  for (const key of Object.keys(body)) if (!SPEC_FIELDS.includes(key)) violations.push(`${key} is not a field of the submit request`);
  // C's whole API is text-to-video from a prompt ("It generates video from a text prompt").
  if (typeof body.prompt !== "string" || body.prompt.trim() === "") violations.push("no prompt");
  if (typeof body.model !== "string" || body.model.trim() === "" || body.model !== request.model) violations.push("model is not the job's version label");
  for (const key of ["aspect_ratio", "quality", "motion_mode"]) if (key in body && (typeof body[key] !== "string" || body[key] === "")) violations.push(`${key} is not a string`);
  if ("duration" in body && !(Number.isInteger(body.duration) && (body.duration as number) > 0)) violations.push("duration is not a whole number of seconds");
  if ("seed" in body && !Number.isInteger(body.seed)) violations.push("seed is not an integer");
  if (request.images?.length) violations.push("an image was accepted, but the image-to-video route is not shown");
  return violations;
}

const validRequest: fc.Arbitrary<JobRequest> = fc
  .record(
    {
      model: fc.constantFrom("v6", "v5", "v4.5"),
      prompt: promptText,
      aspect_ratio: fc.constantFrom("16:9", "9:16", "1:1"),
      duration: fc.integer({ min: 1, max: 60 }),
      quality: fc.constantFrom("720p", "1080p", "540p"),
      motion_mode: fc.constantFrom("normal", "fast"),
      seed: fc.integer({ min: 0, max: 2_147_483_647 }),
    },
    { requiredKeys: ["model", "prompt"] },
  )
  .map(({ model, ...input }) => ({ provider: "c" as const, model, input }));

const anyRequest: fc.Arbitrary<JobRequest> = fc
  .record({
    model: fc.oneof(fc.constantFrom("v6", "v5"), fc.constantFrom("", "  "), fc.string({ maxLength: 6 })),
    fields: fc.array(fc.tuple(fc.constantFrom(...SPEC_FIELDS.filter((key) => key !== "model"), "width", "negative_prompt", "model"), fc.oneof(anyValue, promptText, fc.integer({ min: -5, max: 90 }))), { maxLength: 7 }),
    images: fc.option(fc.constant<string[]>(["https://images.example/a.png"]), { nil: undefined, freq: 6 }),
    operation: fc.option(fc.constantFrom("text_to_video", "image_to_video"), { nil: undefined, freq: 6 }),
  })
  .map(({ model, fields, images, operation }) => {
    let input: Record<string, unknown> = {};
    for (const [key, value] of fields) input = withField(input, key, value);
    return { provider: "c" as const, model, input, ...(images ? { images } : {}), ...(operation ? { operation } : {}) };
  });

describe("C validator, property-based", () => {
  it("C property: a request built from the spec's fields is accepted, and its body is the input plus the model", () => {
    fc.assert(
      fc.property(validRequest, (request) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "refused") throw new Error(`refused a valid request: ${verdict.error.message}`);
        expect(verdict.validated.body).toEqual({ ...request.input, model: request.model });
        expect(specViolations(request, verdict.validated.body)).toEqual([]);
      }),
      RUNS,
    );
  });

  it("C property: no request that breaks the submit request's rules is accepted; every refusal is an InputError naming a field of the request", () => {
    fc.assert(
      fc.property(anyRequest, (request) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "accepted") expect(specViolations(request, verdict.validated.body)).toEqual([]);
        else expectNamesAField(verdict.error, request, ["prompt"]);
      }),
      RUNS,
    );
  });

  it("C property: breaking one field of a valid request is refused naming that field", () => {
    const breaking = fc.oneof(
      fc.record({ field: fc.constant("prompt"), value: fc.constantFrom("", " ", 3, null, ["a"]) }),
      fc.record({ field: fc.constantFrom("aspect_ratio", "quality", "motion_mode"), value: fc.constantFrom("", 16, true, null) }),
      fc.record({ field: fc.constantFrom("duration", "seed"), value: fc.constantFrom(2.5, "5", -1, null) }),
      fc.record({ field: fc.constantFrom("width", "height", "image_url", "negative_prompt"), value: fc.constantFrom(512, "x") }),
    );
    fc.assert(
      fc.property(validRequest, breaking, (request, { field, value }) => {
        expectRefusedNaming(() => adapter.validate({ ...request, input: { ...request.input, [field]: value } }), field);
      }),
      RUNS,
    );
  });
});

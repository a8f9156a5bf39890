import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createFAdapter } from "../../../src/providers/f/index.js";
import { anyValue, expectNamesAField, expectRefusedNaming, promptText, RUNS, verdictOf, withField } from "../../helpers/properties.js";

const adapter = createFAdapter({ baseUrl: "https://f.example", apiKey: "key" });

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every way an accepted form may break spec F's request; empty when it keeps every rule. */
function specViolations(request: JobRequest, model: string, body: Record<string, unknown>): string[] {
  const violations: string[] = [];
  // spec F request: text_prompt and json_prompt are mutually exclusive (both is rejected); a generation needs one.
  const prompts = ["text_prompt", "json_prompt"].filter((key) => key in body);
  if (prompts.length !== 1) violations.push(`prompts sent: ${prompts.join(", ") || "none"}`);
  if ("text_prompt" in body && (typeof body.text_prompt !== "string" || body.text_prompt.trim() === "")) violations.push("text_prompt is not text");
  if ("json_prompt" in body) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(String(body.json_prompt));
    } catch {
      parsed = undefined;
    }
    if (!isObject(parsed) || Object.keys(parsed).length === 0) violations.push("json_prompt is not a structured prompt object");
  }
  // spec F request: resolution in width x height form.
  if ("resolution" in body && !/^[1-9]\d*x[1-9]\d*$/.test(String(body.resolution))) violations.push(`resolution ${String(body.resolution)} is not WIDTHxHEIGHT`);
  // spec F Errors: rendering_speed FLASH answers 400 on this model version.
  if (typeof body.rendering_speed === "string" && body.rendering_speed.toUpperCase() === "FLASH") violations.push("rendering_speed FLASH is sent");
  if ("webhook_url" in body) violations.push("webhook_url is a query parameter, not a form field");
  for (const [key, value] of Object.entries(body)) if (typeof value !== "string") violations.push(`${key} is not a form value`);
  // spec F Endpoints: <model> is a slug, one path segment.
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(model) || model !== request.model) violations.push(`model ${model} is not one path segment`);
  if (request.images?.length) violations.push("images were accepted, but F shows no reference-image field");
  return violations;
}

const modelSlug = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}-v[1-9]$/);
const prompt = fc.oneof(
  promptText.map((text) => ({ text_prompt: text })),
  fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), promptText, { minKeys: 1, maxKeys: 3 }).map((object) => ({ json_prompt: object })),
);

const validRequest: fc.Arbitrary<JobRequest> = fc
  .record(
    {
      model: modelSlug,
      prompt,
      resolution: fc.tuple(fc.integer({ min: 64, max: 4096 }), fc.integer({ min: 64, max: 4096 })).map(([width, height]) => `${width}x${height}`),
      rendering_speed: fc.constantFrom("TURBO", "DEFAULT", "QUALITY"),
    },
    { requiredKeys: ["model", "prompt"] },
  )
  .map(({ model, prompt: given, ...rest }) => ({ provider: "f" as const, model, input: { ...given, ...rest } }));

const anyRequest: fc.Arbitrary<JobRequest> = fc
  .record({
    model: fc.oneof(modelSlug, fc.constantFrom("", "a/b", "img v3", "-x", "img?x"), fc.string({ maxLength: 6 })),
    fields: fc.array(
      fc.tuple(
        fc.constantFrom("text_prompt", "json_prompt", "resolution", "rendering_speed", "webhook_url", "style"),
        fc.oneof(anyValue, promptText, fc.constantFrom("FLASH", "flash", "1024x1024", "1024X1024", "0x5", "{}", '{"a":1}', "https://hooks.example/f")),
      ),
      { maxLength: 6 },
    ),
    images: fc.option(fc.constant<string[]>(["https://images.example/a.png"]), { nil: undefined, freq: 6 }),
    operation: fc.option(fc.constantFrom("generate", "edit"), { nil: undefined, freq: 6 }),
  })
  .map(({ model, fields, images, operation }) => {
    let input: Record<string, unknown> = {};
    for (const [key, value] of fields) input = withField(input, key, value);
    return { provider: "f" as const, model, input, ...(images ? { images } : {}), ...(operation ? { operation } : {}) };
  });

describe("F validator, property-based", () => {
  it("F property: a request built from the spec's fields is accepted, with the prompt it was given", () => {
    fc.assert(
      fc.property(validRequest, (request) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "refused") throw new Error(`refused a valid request: ${verdict.error.message}`);
        const { body } = verdict.validated;
        if (typeof request.input.text_prompt === "string") expect(body.text_prompt).toBe(request.input.text_prompt);
        else expect(JSON.parse(String(body.json_prompt))).toEqual(request.input.json_prompt);
        expect(specViolations(request, verdict.validated.model, body)).toEqual([]);
      }),
      RUNS,
    );
  });

  it("F property: no request that breaks the spec's rules is accepted; every refusal is an InputError naming a field of the request", () => {
    fc.assert(
      fc.property(anyRequest, (request) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "accepted") expect(specViolations(request, verdict.validated.model, verdict.validated.body)).toEqual([]);
        else expectNamesAField(verdict.error, request, ["text_prompt"]);
      }),
      RUNS,
    );
  });

  it("F property: breaking one rule of a valid request is refused naming that field", () => {
    const breaking = fc.oneof(
      fc.record({ field: fc.constant("resolution"), value: fc.constantFrom("1024", "1024X1024", "1024 x 1024", "0x512", 1024) }),
      fc.record({ field: fc.constant("rendering_speed"), value: fc.constantFrom("FLASH", "Flash", "", 3) }),
      fc.record({ field: fc.constant("webhook_url"), value: fc.constant("https://hooks.example/f") }),
    );
    fc.assert(
      fc.property(validRequest, breaking, (request, { field, value }) => {
        expectRefusedNaming(() => adapter.validate({ ...request, input: { ...request.input, [field]: value } }), field);
      }),
      RUNS,
    );
  });

  it("F property: text_prompt and json_prompt together are refused, naming text_prompt", () => {
    fc.assert(
      fc.property(validRequest, promptText, (request, text) => {
        const both = { ...request.input, text_prompt: text, json_prompt: { subject: text } };
        expectRefusedNaming(() => adapter.validate({ ...request, input: both }), "text_prompt");
      }),
      RUNS,
    );
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createEAdapter } from "../../../src/providers/e/index.js";
import { renderPng } from "../../../src/sandbox/media/png.js";
import { anyValue, expectNamesAField, expectRefusedNaming, promptText, RUNS, verdictOf, withField } from "../../helpers/properties.js";
import { jpegHeader } from "../d/images.js";

const adapter = createEAdapter({ baseUrl: "https://e.example", authUrl: "https://auth.example", clientId: "client", clientSecret: "secret-value" });

/** spec E "What the service does" 1: the five asynchronous operations; Versioning: /v4/ is only the newer model's generate. */
const OPERATIONS = ["generate-image", "expand-image", "fill-image", "generate-object-composite", "generate-similar-images"];
const MODELS = ["v3", "v4"];

const PNG = renderPng(16, 16, "source", 1);
const JPEG = jpegHeader(32, 32);
const TEXT = Buffer.from("root:x:0:0:root:/root:/bin/bash\n");

/** PNG, JPEG or WebP by the first bytes: the image types mediagate uploads (E shows none). */
function isImage(bytes: Buffer): boolean {
  const png = bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const jpeg = bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  const webp = bytes.toString("latin1", 0, 4) === "RIFF" && bytes.toString("latin1", 8, 12) === "WEBP";
  return png || jpeg || webp;
}

/** Every way an accepted request may break spec E; empty when it keeps every rule. */
function specViolations(request: JobRequest, model: string, operation: string | null, body: Record<string, unknown>): string[] {
  const violations: string[] = [];
  if (!MODELS.includes(model)) violations.push(`model ${model}`);
  if (operation === null || !OPERATIONS.includes(operation)) violations.push(`operation ${String(operation)}`);
  if (model === "v4" && operation !== "generate-image") violations.push(`${String(operation)} has no v4 endpoint`);
  // spec E submit request: "at least a text prompt is required" (generate).
  if (operation === "generate-image" && (typeof body.prompt !== "string" || body.prompt.trim() === "")) violations.push("generate without a prompt");
  if ("prompt" in body && (typeof body.prompt !== "string" || body.prompt.trim() === "")) violations.push("prompt is not text");
  if ("contentClass" in body && (typeof body.contentClass !== "string" || body.contentClass === "")) violations.push("contentClass is not a string");
  for (const image of request.images ?? []) {
    if (typeof image === "string") violations.push("a URL source image (E shows uploads only)");
    else if (!isImage(image.bytes)) violations.push(`${image.fileName} is not an image`);
  }
  // Expand, fill, composite and similar work on a source image.
  if (operation !== "generate-image" && !(request.images?.length || body.image !== undefined)) violations.push(`${String(operation)} without a source image`);
  return violations;
}

const validRequest: fc.Arbitrary<JobRequest> = fc
  .record({
    operation: fc.constantFrom(...OPERATIONS),
    v4: fc.boolean(),
    prompt: promptText,
    contentClass: fc.option(fc.constantFrom("art", "photo"), { nil: undefined }),
    source: fc.constantFrom(PNG, JPEG),
  })
  .map(({ operation, v4, prompt, contentClass, source }) => {
    const generate = operation === "generate-image";
    return {
      provider: "e" as const,
      model: generate && v4 ? "v4" : "v3",
      operation,
      input: { prompt, ...(contentClass ? { contentClass } : {}) },
      ...(generate ? {} : { images: [{ fileName: "source.img", bytes: source }] }),
    };
  });

const anyRequest: fc.Arbitrary<JobRequest> = fc
  .record({
    model: fc.oneof(fc.constantFrom(...MODELS), fc.constantFrom("v5", "", "V3")),
    operation: fc.option(fc.oneof(fc.constantFrom(...OPERATIONS, "expand", "fill", "similar", "upscale")), { nil: undefined }),
    fields: fc.array(fc.tuple(fc.constantFrom("prompt", "contentClass", "image", "style"), fc.oneof(anyValue, promptText)), { maxLength: 4 }),
    images: fc.array(
      fc.oneof(
        fc.constantFrom(PNG, JPEG, TEXT, Buffer.alloc(0)).map((bytes) => ({ fileName: "file", bytes })),
        fc.constant("https://images.example/a.png"),
      ),
      { maxLength: 3 },
    ),
  })
  .map(({ model, operation, fields, images }) => {
    let input: Record<string, unknown> = {};
    for (const [key, value] of fields) input = withField(input, key, value);
    return { provider: "e" as const, model, input, ...(operation ? { operation } : {}), ...(images.length ? { images } : {}) };
  });

describe("E validator, property-based", () => {
  it("E property: a request built from the spec's operations is accepted, its body the input as given", () => {
    fc.assert(
      fc.property(validRequest, (request) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "refused") throw new Error(`refused a valid request: ${verdict.error.message}`);
        expect(verdict.validated.body).toEqual(request.input);
        expect(specViolations(request, verdict.validated.model, verdict.validated.operation, verdict.validated.body)).toEqual([]);
      }),
      RUNS,
    );
  });

  it("E property: no request that breaks the spec's rules is accepted; every refusal is an InputError naming a field of the request", () => {
    fc.assert(
      fc.property(anyRequest, (request) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "accepted") expect(specViolations(request, verdict.validated.model, verdict.validated.operation, verdict.validated.body)).toEqual([]);
        else expectNamesAField(verdict.error, request, ["prompt"]);
      }),
      RUNS,
    );
  });

  it("E property: a source file that is not an image, a blank prompt, or a v4 model off generate is refused naming the field", () => {
    fc.assert(
      fc.property(validRequest, (request) => {
        const operation = request.operation === "generate-image" ? "expand-image" : request.operation!;
        const notImage = { ...request, model: "v3", operation, images: [{ fileName: "notes.txt", bytes: TEXT }] };
        expectRefusedNaming(() => adapter.validate(notImage), /^images\[0\]/);
        expectRefusedNaming(() => adapter.validate({ ...request, input: { ...request.input, prompt: "  " } }), "prompt");
        expectRefusedNaming(() => adapter.validate({ ...request, model: "v4", operation, images: [{ fileName: "a.png", bytes: PNG }] }), "model");
      }),
      RUNS,
    );
  });
});

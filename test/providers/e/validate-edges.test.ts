import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createEAdapter, SOURCE_IMAGE_FORMAT, type EAdapterConfig } from "../../../src/providers/e/index.js";
import { renderPng } from "../../../src/sandbox/media/png.js";
import { inputError } from "../../helpers/errors.js";

const config: EAdapterConfig = { baseUrl: "https://e.example", authUrl: "https://auth.example", clientId: "client", clientSecret: "secret-value" };
const adapter = createEAdapter(config);
const PNG = renderPng(8, 8, "x", 1);
const local = (bytes: Buffer = PNG, fileName = "a.png") => ({ fileName, bytes });

function validate(input: unknown, extra: Partial<JobRequest> = {}) {
  return adapter.validate({ provider: "e", model: "v3", input: input as Record<string, unknown>, ...extra });
}

describe("E: the request as a whole", () => {
  it("E: input must be an object (not null, an array, bytes or a string)", () => {
    for (const input of [null, [], Buffer.from("{}"), "x"]) expect(inputError(() => validate(input)).field).toBe("input");
  });

  it("E: the model is required, listing v3 and v4", () => {
    for (const model of ["", "   ", 3]) {
      const error = inputError(() => validate({ prompt: "x" }, { model: model as string }));
      expect(error).toMatchObject({ field: "model", reason: "is required" });
      expect(error.allowed).toMatch(/^v3, v4 /);
    }
    expect(inputError(() => validate({ prompt: "x" }, { model: "v5" })).allowed).toMatch(/^v3, v4 /);
  });

  it("E: a validated request is E's, with the source image format recorded only when an image is uploaded", () => {
    const generate = validate({ prompt: "x" });
    expect(generate.provider).toBe("e");
    expect(generate.facts.sourceImageFormat).toBeNull();
    expect(validate({}, { operation: "expand-image", images: [local()] }).facts.sourceImageFormat).toBe(SOURCE_IMAGE_FORMAT);
    expect(validate({ image: { source: { url: "https://cdn.example/a.png" } } }, { operation: "expand-image" }).facts.sourceImageFormat).toBeNull();
  });
});

describe("E: contentClass", () => {
  it("E: an empty contentClass is refused, naming the values seen (art, photo)", () => {
    const error = inputError(() => validate({ prompt: "x", contentClass: "" }));
    expect(error).toMatchObject({ field: "contentClass", allowed: "art, photo" });
  });

  it("E: the warning for another contentClass names the values seen", () => {
    expect(validate({ prompt: "x", contentClass: "vector" }).warnings).toEqual([`contentClass "vector" is not one of the values E's spec has seen (art, photo); sent unchanged`]);
  });
});

describe("E: source images", () => {
  it("E: generate takes no source image; the refusal names the operations that do", () => {
    const error = inputError(() => validate({ prompt: "x" }, { images: [local()] }));
    expect(error.field).toBe("images");
    expect(error.allowed?.split(", ")).toEqual(["expand-image", "fill-image", "generate-object-composite", "generate-similar-images"]);
  });

  it("E: too many images are refused naming how many the operation takes and its fields", () => {
    expect(inputError(() => validate({}, { operation: "expand-image", images: [local(), local()] })).reason).toBe("expand-image takes at most 1 image (image), got 2");
    expect(inputError(() => validate({}, { operation: "fill-image", images: [local(), local(), local()] }))).toMatchObject({
      field: "images[2]",
      reason: "fill-image takes at most 2 images (image, mask), got 3",
    });
  });

  it("E: a URL source or a missing source points to a local file or the native field", () => {
    expect(inputError(() => validate({}, { operation: "expand-image", images: ["https://cdn.example/a.png"] })).allowed).toMatch(/native image field/);
    expect(inputError(() => validate({}, { operation: "fill-image" })).allowed).toMatch(/native image field/);
  });

  it("E: an empty file, an image given twice, or bytes that are not an image are refused saying which", () => {
    const empty = inputError(() => validate({}, { operation: "expand-image", images: [local(Buffer.alloc(0), "empty.png")] }));
    expect(empty.reason).toMatch(/empty\.png/);
    expect(empty.allowed).toMatch(/non-empty image file/);
    expect(inputError(() => validate({ image: {} }, { operation: "expand-image", images: [local()] })).reason).toMatch(/image is also given in input/);
    expect(inputError(() => validate({}, { operation: "expand-image", images: [local(Buffer.from("GIF89a...."), "a.gif")] })).allowed).toBe("PNG, JPEG or WebP");
  });
});

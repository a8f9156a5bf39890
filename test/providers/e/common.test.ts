import { describe, expect, it } from "vitest";
import type { CommonRequest } from "../../../src/core/common-request.js";
import type { CommonTarget } from "../../../src/providers/adapter.js";
import { eFromCommon } from "../../../src/providers/e/common.js";
import { createEAdapter } from "../../../src/providers/e/index.js";
import { renderPng } from "../../../src/sandbox/media/png.js";
import { inputError } from "../../helpers/errors.js";

const adapter = createEAdapter({ baseUrl: "https://e.example", authUrl: "https://auth.example", clientId: "client", clientSecret: "secret-value" });
const file = { fileName: "fox.png", bytes: renderPng(8, 8, "fox", 1) };
const image = (extra: Partial<CommonRequest> = {}): CommonRequest => ({ task: "image", prompt: "a red fox in snow", ...extra });

/** Maps and, when mapped, validates as E would: what would be sent (the uploads are added to the body at submit time). */
function sent(request: CommonRequest, target: CommonTarget = { model: "v3" }) {
  const mapping = eFromCommon(request, target);
  if (!mapping.ok) return mapping;
  const validated = adapter.validate(mapping.request);
  return { ...mapping, operation: validated.operation, body: validated.body, facts: validated.facts, validatedWarnings: validated.warnings };
}

describe("E: the common request, field by field", () => {
  it("E common: prompt maps to prompt on generate-image (the default operation), and nothing else is sent", () => {
    expect(sent(image())).toEqual({
      ok: true,
      request: { provider: "e", model: "v3", operation: "generate-image", input: { prompt: "a red fox in snow" } },
      warnings: [],
      operation: "generate-image",
      body: { prompt: "a red fox in snow" },
      facts: expect.objectContaining({ path: "/v3/images/generate-async", uploads: [] }),
      validatedWarnings: [],
    });
  });

  it("E common: the target's model chooses the generate version (v4 goes to /v4/images/generate-async)", () => {
    expect(sent(image(), { model: "v4" })).toMatchObject({ ok: true, body: { prompt: "a red fox in snow" }, facts: { path: "/v4/images/generate-async" } });
  });

  it("E common: the adapter's fromCommon is this mapping", () => {
    expect(adapter.fromCommon!(image(), { model: "v3" })).toEqual(eFromCommon(image(), { model: "v3" }));
  });

  it("E common: no prompt makes generate-image ineligible (at least a text prompt is required)", () => {
    expect(sent({ task: "image" })).toEqual({ ok: false, unhonoured: [{ field: "prompt", reason: "E's generate-image needs a prompt" }] });
  });

  it("E common: size is not honoured (E's spec shows no size field on a request)", () => {
    expect(sent(image({ size: "1024x1024" }))).toEqual({
      ok: false,
      unhonoured: [{ field: "size", reason: "E's spec shows no size field on a request (only the size a result reports)" }],
    });
  });

  it("E common: aspect_ratio is not honoured (no size or ratio field is shown), and with size both are named", () => {
    expect(sent(image({ aspect_ratio: "16:9" }))).toEqual({
      ok: false,
      unhonoured: [{ field: "aspect_ratio", reason: "E's spec shows no size or aspect-ratio field on a request (only the size a result reports)" }],
    });
    const both = sent(image({ size: "1920x1080", aspect_ratio: "16:9" }));
    expect(both.ok === false && both.unhonoured.map((entry) => entry.field)).toEqual(["size", "aspect_ratio"]);
  });

  it("E common: seed is not honoured (the spec shows only the seed each output reports, no seed field on a request)", () => {
    expect(sent(image({ seed: 7 }))).toEqual({
      ok: false,
      unhonoured: [{ field: "seed", reason: "E's spec shows no seed field on a request (only the seed each output reports)" }],
    });
  });

  it("E common: any n is not honoured, 1 included (no number-of-images field, and how many images one request makes is not shown)", () => {
    for (const n of [1, 4]) {
      expect(sent(image({ n }))).toEqual({
        ok: false,
        unhonoured: [{ field: "n", reason: `E's spec shows no number-of-images field, nor how many images one request makes, so n ${n} cannot be promised` }],
      });
    }
  });

  it("E common: reference images are not honoured by generate-image (it takes no source image the spec shows)", () => {
    expect(sent(image({ images: [file] }))).toEqual({
      ok: false,
      unhonoured: [{ field: "images", reason: "E's generate-image takes no reference image that its spec shows" }],
    });
    expect(sent(image({ images: [] }))).toMatchObject({ ok: true, body: { prompt: "a red fox in snow" } });
  });

  it("E common: on expand, composite and similar one local image becomes the source image, uploaded at submit time into `image`", () => {
    for (const operation of ["expand-image", "generate-object-composite", "generate-similar-images"]) {
      const result = sent(image({ images: [file] }), { model: "v3", operation });
      expect(result).toMatchObject({ ok: true, warnings: [], operation, body: { prompt: "a red fox in snow" } });
      expect(result.ok && result.facts.uploads).toEqual([expect.objectContaining({ field: "image", fileName: "fox.png", mediaType: "image/png" })]);
    }
  });

  it("E common: an operation's short alias is sent as its full name, and the image operations need no prompt", () => {
    expect(sent({ task: "image", images: [file] }, { model: "v3", operation: "similar" })).toMatchObject({
      ok: true,
      request: { operation: "generate-similar-images", input: {} },
      operation: "generate-similar-images",
      body: {},
    });
  });

  it("E common: an image operation without an image, or with more than one, is not honoured", () => {
    expect(sent(image(), { model: "v3", operation: "expand-image" })).toEqual({
      ok: false,
      unhonoured: [{ field: "images", reason: "E's expand-image needs a source image" }],
    });
    expect(sent(image({ images: [file, file] }), { model: "v3", operation: "generate-similar-images" })).toEqual({
      ok: false,
      unhonoured: [{ field: "images", reason: "E's generate-similar-images takes one source image, not 2" }],
    });
  });

  it("E common: a URL image is not honoured (E takes source images only as uploads; a URL source is not shown)", () => {
    expect(sent(image({ images: ["https://images.example/fox.png"] }), { model: "v3", operation: "expand-image" })).toEqual({
      ok: false,
      unhonoured: [{ field: "images", reason: "E takes source images only as uploaded files, and a URL source is not shown (https://images.example/fox.png)" }],
    });
  });

  it("E common: fill-image is not honoured (it fills what a mask marks, and a common request has no mask)", () => {
    expect(sent(image({ images: [file] }), { model: "v3", operation: "fill-image" })).toEqual({
      ok: false,
      unhonoured: [{ field: "images", reason: "E's fill-image fills the area a mask marks, and a common request has no mask (its images are references)" }],
    });
  });

  it("E common: a wrong target (an unknown operation, v4 with an image operation) is the validator's refusal, as for a native job", () => {
    const unknown = eFromCommon(image(), { model: "v3", operation: "upscale" });
    expect(unknown).toMatchObject({ ok: true, request: { operation: "upscale" } });
    expect(inputError(() => adapter.validate((unknown as { request: Parameters<typeof adapter.validate>[0] }).request)).field).toBe("operation");
    const expandOnV4 = eFromCommon(image({ images: [file] }), { model: "v4", operation: "expand-image" });
    expect(inputError(() => adapter.validate((expandOnV4 as { request: Parameters<typeof adapter.validate>[0] }).request)).field).toBe("model");
  });

  it("E common: a video request is not honoured, whichever video fields it sets", () => {
    const videos: CommonRequest[] = [
      { task: "video", prompt: "p" },
      { task: "video", prompt: "p", duration_s: 5 },
      { task: "video", prompt: "p", resolution: "720p" },
      { task: "video", prompt: "p", generate_audio: true },
      { task: "video", first_frame: file },
      { task: "video", first_frame: file, last_frame: file },
      { task: "video", prompt: "p", reference_images: [file] },
      { task: "video", prompt: "p", aspect_ratio: "16:9", size: "1280x720", seed: 3 },
    ];
    for (const video of videos) {
      expect(eFromCommon(video, { model: "v3" })).toEqual({ ok: false, unhonoured: [{ field: "task", reason: "E makes images, not videos" }] });
    }
  });

  it("E common: every unhonoured field is named at once, in the common order", () => {
    const result = eFromCommon({ task: "image", size: "512x512", aspect_ratio: "1:1", seed: 1, n: 2, images: [file] }, { model: "v3" });
    expect(result.ok === false && result.unhonoured.map((entry) => entry.field)).toEqual(["prompt", "size", "aspect_ratio", "seed", "n", "images"]);
  });
});

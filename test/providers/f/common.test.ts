import { describe, expect, it } from "vitest";
import type { CommonRequest } from "../../../src/core/common-request.js";
import type { CommonTarget } from "../../../src/providers/adapter.js";
import { fFromCommon } from "../../../src/providers/f/common.js";
import { createFAdapter } from "../../../src/providers/f/index.js";
import { inputError } from "../../helpers/errors.js";

const adapter = createFAdapter({ baseUrl: "https://f.example", apiKey: "key" });
const image = (extra: Partial<CommonRequest> = {}): CommonRequest => ({ task: "image", prompt: "a red kite over dunes", ...extra });
const file = { fileName: "kite.png", bytes: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) };

/** Maps and, when mapped, validates as F would: the form fields that would be sent. */
function sent(request: CommonRequest, target: CommonTarget = { model: "img-v3" }) {
  const mapping = fFromCommon(request, target);
  if (!mapping.ok) return mapping;
  const validated = adapter.validate(mapping.request);
  return { ...mapping, body: validated.body, validatedWarnings: validated.warnings };
}

describe("F: the common request, field by field", () => {
  it("F common: prompt maps to text_prompt and size to resolution as given, with no warning", () => {
    expect(sent(image({ size: "1024x1024" }))).toEqual({
      ok: true,
      request: { provider: "f", model: "img-v3", input: { text_prompt: "a red kite over dunes", resolution: "1024x1024" } },
      warnings: [],
      body: { text_prompt: "a red kite over dunes", resolution: "1024x1024" },
      validatedWarnings: [],
    });
  });

  it("F common: a size is sent unrounded (F publishes no bounds or list of resolutions)", () => {
    expect(sent(image({ size: "1000x750" }))).toMatchObject({ ok: true, warnings: [], body: { resolution: "1000x750" } });
  });

  it("F common: the adapter's fromCommon is this mapping", () => {
    expect(adapter.fromCommon!(image(), { model: "img-v3" })).toEqual(fFromCommon(image(), { model: "img-v3" }));
  });

  it("F common: neither size nor aspect_ratio sends no resolution, so F's own default applies, as for a native job", () => {
    expect(sent(image())).toMatchObject({ ok: true, warnings: [], body: { text_prompt: "a red kite over dunes" } });
    expect((sent(image()) as { body: Record<string, string> }).body).not.toHaveProperty("resolution");
  });

  it("F common: a square aspect_ratio alone is sent as resolution 1024x1024 (the one size F's spec shows), and the warning names it", () => {
    for (const ratio of ["1:1", "201:200"]) {
      expect(sent({ task: "image", prompt: "p", aspect_ratio: ratio })).toMatchObject({
        ok: true,
        body: { resolution: "1024x1024" },
        warnings: [`aspect_ratio ${ratio} sent as resolution 1024x1024 (F takes a size, and 1024x1024 is the one its spec shows)`],
      });
    }
  });

  it("F common: any other aspect_ratio alone is not honoured (which size F takes for it is not shown); with size, size is sent", () => {
    expect(sent({ task: "image", prompt: "p", aspect_ratio: "16:9" })).toEqual({
      ok: false,
      unhonoured: [{ field: "aspect_ratio", reason: "F takes a resolution, not a ratio, and which size it takes for 16:9 is not shown (give size)" }],
    });
    expect(sent(image({ size: "1920x1080", aspect_ratio: "16:9" }))).toMatchObject({ ok: true, warnings: [], body: { resolution: "1920x1080" } });
  });

  it("F common: no prompt makes F ineligible (it needs text_prompt or json_prompt)", () => {
    expect(sent({ task: "image", size: "1024x1024" })).toEqual({ ok: false, unhonoured: [{ field: "prompt", reason: "F needs a prompt" }] });
  });

  it("F common: seed is not honoured (the spec shows only the seed each image reports, no seed field on a request)", () => {
    expect(sent(image({ seed: 7 }))).toEqual({
      ok: false,
      unhonoured: [{ field: "seed", reason: "F's spec shows no seed field on a request (only the seed each image reports)" }],
    });
  });

  it("F common: any n is not honoured, 1 included (no number-of-images field, and one request may make several images)", () => {
    for (const n of [1, 4]) {
      expect(sent(image({ n }))).toEqual({
        ok: false,
        unhonoured: [{ field: "n", reason: `F's spec shows no number-of-images field, nor how many images one request makes, so n ${n} cannot be promised` }],
      });
    }
  });

  it("F common: reference images are not honoured (F shows no reference-image field); an empty list is no images", () => {
    expect(sent(image({ images: ["https://images.example/kite.png", file] }))).toEqual({
      ok: false,
      unhonoured: [{ field: "images", reason: "F's spec shows no reference-image field" }],
    });
    expect(sent(image({ images: [] }))).toMatchObject({ ok: true });
  });

  it("F common: the target's operation goes on to validate: generate is F's one operation, anything else is refused", () => {
    expect(sent(image(), { model: "img-v3", operation: "generate" })).toMatchObject({ ok: true, request: { operation: "generate" } });
    const other = fFromCommon(image(), { model: "img-v3", operation: "edit" });
    expect(inputError(() => adapter.validate((other as { request: Parameters<typeof adapter.validate>[0] }).request)).field).toBe("operation");
  });

  it("F common: a video request is not honoured, whichever video fields it sets", () => {
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
      expect(fFromCommon(video, { model: "img-v3" })).toEqual({ ok: false, unhonoured: [{ field: "task", reason: "F makes images, not videos" }] });
    }
  });

  it("F common: every unhonoured field is named at once, in the common order", () => {
    const result = fFromCommon({ task: "image", aspect_ratio: "4:3", seed: 1, n: 2, images: [file] }, { model: "img-v3" });
    expect(result.ok === false && result.unhonoured.map((entry) => entry.field)).toEqual(["prompt", "aspect_ratio", "seed", "n", "images"]);
  });
});

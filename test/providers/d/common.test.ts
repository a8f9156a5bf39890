import { describe, expect, it } from "vitest";
import type { CommonRequest } from "../../../src/core/common-request.js";
import { dFromCommon, dSizeForRatio } from "../../../src/providers/d/common.js";
import { validateDRequest } from "../../../src/providers/d/index.js";
import { pngHeader } from "./images.js";

const image = (extra: Partial<CommonRequest> = {}): CommonRequest => ({ task: "image", prompt: "a red fox in snow", size: "1024x768", ...extra });

/** Maps and, when mapped, validates as D would: what would be sent. */
function sent(request: CommonRequest, model = "gen-2-pro") {
  const mapping = dFromCommon(request, model);
  if (!mapping.ok) return mapping;
  const validated = validateDRequest(mapping.request);
  return { ...mapping, body: validated.body, validatedWarnings: validated.warnings };
}

describe("D: the common request, field by field", () => {
  it("D common: prompt, size and seed map to prompt, width, height and seed, with no warning", () => {
    const result = sent(image({ seed: 7 }));
    expect(result).toMatchObject({ ok: true, warnings: [], body: { prompt: "a red fox in snow", width: 1024, height: 768, seed: 7 } });
  });

  it("D common: a size off D's multiples of 16 is rounded to the nearest (at least 64), and the warning names what is sent", () => {
    expect(sent(image({ size: "1000x750" }))).toMatchObject({
      ok: true,
      body: { width: 1008, height: 752 },
      warnings: ["size 1000x750 sent as width 1008, height 752 (D takes multiples of 16 from 64)"],
    });
    expect(sent(image({ size: "20x30" }))).toMatchObject({ ok: true, body: { width: 64, height: 64 } });
  });

  it("D common: above 4 MP is sent as asked and D's own reduction is the validator's warning", () => {
    const result = sent(image({ size: "2560x2048" }));
    expect(result).toMatchObject({ ok: true, warnings: [], body: { width: 2560, height: 2048 } });
    expect((result as { validatedWarnings: string[] }).validatedWarnings.join(" ")).toContain("D reduces the output to 4 MP");
  });

  it("D common: an aspect ratio alone is sent at about 1 MP in multiples of 16, with a warning naming the size", () => {
    expect(dSizeForRatio({ width: 16, height: 9 })).toEqual({ width: 1360, height: 768 });
    expect(dSizeForRatio({ width: 1, height: 1 })).toEqual({ width: 1024, height: 1024 });
    expect(dSizeForRatio({ width: 9, height: 16 })).toEqual({ width: 768, height: 1360 });
    const result = sent({ task: "image", prompt: "p", aspect_ratio: "16:9" });
    expect(result).toMatchObject({ ok: true, body: { width: 1360, height: 768 }, warnings: ["aspect_ratio 16:9 sent as width 1360, height 768 (D takes a size: about 1 MP, multiples of 16)"] });
  });

  it("D common: neither size nor aspect ratio makes D ineligible (its default size is not shown and the price depends on it)", () => {
    expect(sent({ task: "image", prompt: "p" })).toEqual({
      ok: false,
      unhonoured: [{ field: "size", reason: "D needs a size or aspect_ratio: its default size is not shown and the price depends on it" }],
    });
  });

  it("D common: n above 1 is not honoured (one image per request); n of 1 is", () => {
    expect(sent(image({ n: 1 }))).toMatchObject({ ok: true });
    expect(sent(image({ n: 4 }))).toEqual({ ok: false, unhonoured: [{ field: "n", reason: "D makes one image per request, not 4" }] });
  });

  it("D common: reference images become input_image, input_image_2, … (URLs as given, files as base64)", () => {
    const file = { fileName: "fox.png", bytes: pngHeader(512, 512) };
    const result = sent(image({ images: ["https://images.example/a.png", file] }));
    expect(result).toMatchObject({ ok: true, body: { input_image: "https://images.example/a.png", input_image_2: file.bytes.toString("base64") } });
  });

  it("D common: more references than the endpoint takes is the validator's refusal (compact: 4)", () => {
    const mapping = dFromCommon(image({ images: Array.from({ length: 5 }, (_, index) => `https://images.example/${index}.png`) }), "gen-2-compact-4b");
    expect(mapping.ok).toBe(true);
    expect(() => validateDRequest((mapping as { request: Parameters<typeof validateDRequest>[0] }).request)).toThrow(/at most 4 reference images/);
  });

  it("D common: a video request is not honoured", () => {
    expect(dFromCommon({ task: "video", prompt: "p", duration_s: 5 }, "gen-2-pro")).toEqual({ ok: false, unhonoured: [{ field: "task", reason: "D makes images, not videos" }] });
  });

  it("D common: every unhonoured field is named at once", () => {
    const result = dFromCommon({ task: "image", n: 2 } as CommonRequest, "gen-2-pro");
    expect(result.ok).toBe(false);
    expect((result as { unhonoured: Array<{ field: string }> }).unhonoured.map((entry) => entry.field)).toEqual(["prompt", "size", "n"]);
  });
});

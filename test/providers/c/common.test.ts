import { describe, expect, it } from "vitest";
import { checkCommonRequest, type CommonRequest } from "../../../src/core/common-request.js";
import { createCAdapter } from "../../../src/providers/c/index.js";
import { inputError } from "../../helpers/errors.js";

const FRAME = "https://images.example/first.png";

const adapter = createCAdapter({ baseUrl: "https://c.example", apiKey: "key", tier: "free" });
const video = (extra: Partial<CommonRequest> = {}): CommonRequest => ({ task: "video", prompt: "a paper boat on a river", ...extra });

/** Maps through C's adapter and, when mapped, validates as C would: the body is what would be sent. */
function sent(request: CommonRequest, operation?: string) {
  checkCommonRequest(request);
  const mapping = adapter.fromCommon!(request, { model: "v6", ...(operation !== undefined ? { operation } : {}) });
  if (!mapping.ok) return mapping;
  const validated = adapter.validate(mapping.request);
  return { ...mapping, body: validated.body, validatedWarnings: validated.warnings };
}

describe("C: the common request, field by field", () => {
  it("C common: prompt and seed map as they are, and omitted fields stay omitted (C's native request needs none of them)", () => {
    expect(sent(video({ seed: 7 }))).toEqual({
      ok: true,
      request: { provider: "c", model: "v6", input: { prompt: "a paper boat on a river", seed: 7 } },
      warnings: [],
      body: { prompt: "a paper boat on a river", model: "v6", seed: 7 },
      validatedWarnings: [],
    });
  });

  it("C common: the values C's spec shows map as they are: aspect_ratio 16:9, resolution 720p as quality, duration_s 5 as duration", () => {
    expect(sent(video({ aspect_ratio: "16:9", resolution: "720p", duration_s: 5 }))).toMatchObject({
      ok: true,
      warnings: [],
      body: { prompt: "a paper boat on a river", model: "v6", aspect_ratio: "16:9", duration: 5, quality: "720p" },
      validatedWarnings: [],
    });
  });

  it("C common: a 16:9 size within 10% of 720 lines is sent as aspect_ratio 16:9 and quality 720p, and the warning names both", () => {
    expect(sent(video({ size: "1280x720" }))).toMatchObject({
      ok: true,
      body: { aspect_ratio: "16:9", quality: "720p" },
      warnings: ["size 1280x720 sent as aspect_ratio 16:9, quality 720p (C takes a ratio and a quality, not pixels)"],
      validatedWarnings: [],
    });
    expect(sent(video({ size: "1366x768" }))).toMatchObject({ ok: true, body: { aspect_ratio: "16:9", quality: "720p" } });
  });

  it("C common: another size is not honoured (C's only published values are 16:9 at 720p)", () => {
    expect(sent(video({ size: "720x1280" }))).toEqual({ ok: false, unhonoured: [{ field: "size", reason: "size 720x1280 is 9:16; C's only published aspect ratio is 16:9" }] });
    expect(sent(video({ size: "1920x1080" }))).toEqual({
      ok: false,
      unhonoured: [{ field: "size", reason: "size 1920x1080 has 1080 lines, not within 10% of C's only published quality, 720p" }],
    });
    expect(sent(video({ size: "1024x576" }))).toMatchObject({ ok: false, unhonoured: [{ field: "size" }] });
  });

  it("C common: an aspect ratio other than 16:9 is not honoured (C's complete set is not published)", () => {
    expect(sent(video({ aspect_ratio: "9:16" }))).toEqual({ ok: false, unhonoured: [{ field: "aspect_ratio", reason: "C's only published aspect ratio is 16:9, not 9:16" }] });
    expect(sent(video({ aspect_ratio: "1:1" }))).toMatchObject({ ok: false, unhonoured: [{ field: "aspect_ratio" }] });
  });

  it("C common: aspect_ratio adaptive is not honoured (C shows no such value and no route from a frame)", () => {
    const result = sent(video({ aspect_ratio: "adaptive", first_frame: FRAME }));
    expect(result).toMatchObject({
      ok: false,
      unhonoured: [
        { field: "aspect_ratio", reason: `"adaptive" takes the first frame's ratio; C's image-to-video route is not published; C takes a text prompt only` },
        { field: "first_frame" },
      ],
    });
  });

  it("C common: a duration within half a second of 5 is sent as 5, and the warning names the value sent", () => {
    expect(sent(video({ duration_s: 5.4 }))).toMatchObject({
      ok: true,
      body: { duration: 5 },
      warnings: ["duration_s 5.4 sent as duration 5 (C takes whole seconds, and 5 is the only value published)"],
    });
    expect(sent(video({ duration_s: 4.5 }))).toMatchObject({ ok: true, body: { duration: 5 } });
  });

  it("C common: any other duration is not honoured (C's complete set is not published)", () => {
    expect(sent(video({ duration_s: 10 }))).toEqual({ ok: false, unhonoured: [{ field: "duration_s", reason: "C's only published duration is 5 seconds, not 10" }] });
    expect(sent(video({ duration_s: 5.6 }))).toMatchObject({ ok: false, unhonoured: [{ field: "duration_s" }] });
  });

  it("C common: a resolution other than 720p is not honoured (C's only published quality)", () => {
    expect(sent(video({ resolution: "1080p" }))).toEqual({ ok: false, unhonoured: [{ field: "resolution", reason: "C's only published quality is 720p, not 1080p" }] });
    expect(sent(video({ resolution: "480p" }))).toMatchObject({ ok: false, unhonoured: [{ field: "resolution" }] });
  });

  it("C common: generate_audio is not honoured either way (C has no audio field and whether its clips have sound is not published)", () => {
    for (const generateAudio of [true, false]) {
      expect(sent(video({ generate_audio: generateAudio }))).toEqual({
        ok: false,
        unhonoured: [{ field: "generate_audio", reason: "C has no audio field, and whether its clips have sound is not published" }],
      });
    }
  });

  it("C common: first_frame, last_frame and reference_images are not honoured (C's image-to-video route is not published)", () => {
    const reason = "C's image-to-video route is not published; C takes a text prompt only";
    expect(sent(video({ first_frame: FRAME, last_frame: "https://images.example/last.png" }))).toEqual({
      ok: false,
      unhonoured: [
        { field: "first_frame", reason },
        { field: "last_frame", reason },
      ],
    });
    expect(sent(video({ reference_images: ["https://images.example/fox.png"] }))).toEqual({ ok: false, unhonoured: [{ field: "reference_images", reason }] });
  });

  it("C common: a request without a prompt is not honoured (C makes video from text)", () => {
    expect(sent({ task: "video", first_frame: FRAME })).toMatchObject({
      ok: false,
      unhonoured: [{ field: "prompt", reason: "C makes video from a text prompt and needs one" }, { field: "first_frame" }],
    });
  });

  it("C common: an image request is not honoured", () => {
    expect(sent({ task: "image", prompt: "p", size: "1024x1024", n: 2, images: ["https://images.example/a.png"] })).toEqual({
      ok: false,
      unhonoured: [{ field: "task", reason: "C makes videos, not images" }],
    });
  });

  it("C common: n and images are image fields: the common check refuses them on a video, and the mapper still names them rather than drop them", () => {
    expect(inputError(() => checkCommonRequest(video({ n: 2 }))).field).toBe("n");
    expect(inputError(() => checkCommonRequest(video({ images: ["https://images.example/a.png"] }))).field).toBe("images");
    const unchecked = adapter.fromCommon!(video({ n: 2, images: ["https://images.example/a.png"] }), { model: "v6" });
    expect(unchecked).toMatchObject({ ok: false, unhonoured: [{ field: "n" }, { field: "images" }] });
  });

  it("C common: every unhonoured field is named at once", () => {
    const result = sent({ task: "video", size: "1080x1920", duration_s: 8, generate_audio: true, first_frame: FRAME });
    expect(result.ok).toBe(false);
    expect((result as { unhonoured: Array<{ field: string }> }).unhonoured.map((entry) => entry.field)).toEqual(["prompt", "size", "duration_s", "generate_audio", "first_frame"]);
  });

  it("C common: a target's operation is sent, so the validator refuses any but text_to_video", () => {
    expect(sent(video(), "text_to_video")).toMatchObject({ ok: true, request: { operation: "text_to_video" } });
    expect(inputError(() => sent(video(), "image_to_video")).field).toBe("operation");
  });
});

import { describe, expect, it } from "vitest";
import { checkCommonRequest, type CommonRequest } from "../../../src/core/common-request.js";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createAAdapter } from "../../../src/providers/a/index.js";
import { inputError } from "../../helpers/errors.js";

const NEWEST = "vidgen-2-0-250601";
const OLDER = "vidgen-1-5-250301";
const FRAME = "https://images.example/first.png";
const LAST = "https://images.example/last.png";

const adapter = createAAdapter({ baseUrl: "https://a.example", apiKey: "key", enterprise: false });
const video = (extra: Partial<CommonRequest> = {}): CommonRequest => ({ task: "video", prompt: "a fox running in snow", ...extra });
const text = (prompt: string) => ({ type: "text", text: prompt });
const image = (url: string, role: string) => ({ type: "image_url", image_url: { url }, role });
const file = (fileName: string) => ({ fileName, bytes: Buffer.from("not read by A") });

/** Maps through A's adapter and, when mapped, validates as A would: the body is what would be sent. */
function sent(request: CommonRequest, model = NEWEST, operation?: string) {
  checkCommonRequest(request);
  const mapping = adapter.fromCommon!(request, { model, ...(operation !== undefined ? { operation } : {}) });
  if (!mapping.ok) return mapping;
  const validated = adapter.validate(mapping.request);
  return { ...mapping, body: validated.body, operation: validated.operation, validatedWarnings: validated.warnings };
}

function mapped(request: CommonRequest, model = NEWEST): JobRequest {
  const mapping = adapter.fromCommon!(request, { model });
  if (!mapping.ok) throw new Error(`expected a mapping, got ${JSON.stringify(mapping.unhonoured)}`);
  return mapping.request;
}

describe("A: the common request, field by field", () => {
  it("A common: prompt, seed, resolution and generate_audio map as they are onto a text-to-video task, with no warning", () => {
    const result = sent(video({ seed: 42, resolution: "1080p", generate_audio: true }));
    expect(result).toEqual({
      ok: true,
      request: { provider: "a", model: NEWEST, input: { prompt: "a fox running in snow", seed: 42, resolution: "1080p", generate_audio: true } },
      warnings: [],
      body: { model: NEWEST, content: [text("a fox running in snow")], generate_audio: true, resolution: "1080p", seed: 42 },
      operation: "text_to_video",
      validatedWarnings: [],
    });
    expect(sent(video({ generate_audio: false, resolution: "480p" }))).toMatchObject({ ok: true, body: { generate_audio: false, resolution: "480p" } });
  });

  it("A common: omitted fields stay omitted (A's defaults are not shown, its native request needs none of them, and no price depends on them)", () => {
    expect(sent(video())).toMatchObject({ ok: true, warnings: [], body: { model: NEWEST, content: [text("a fox running in snow")] } });
    expect(Object.keys((sent(video()) as { body: object }).body)).toEqual(["model", "content"]);
  });

  it("A common: an aspect ratio of A's set is sent as ratio; another writing of the same ratio is sent as A's", () => {
    for (const ratio of ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16"]) {
      expect(sent(video({ aspect_ratio: ratio }))).toMatchObject({ ok: true, warnings: [], body: { ratio } });
    }
    expect(sent(video({ aspect_ratio: "7:3" }))).toMatchObject({ ok: true, warnings: [], body: { ratio: "21:9" } });
  });

  it("A common: an aspect ratio A does not have is not honoured", () => {
    expect(sent(video({ aspect_ratio: "5:4" }))).toEqual({
      ok: false,
      unhonoured: [{ field: "aspect_ratio", reason: "A's ratios are 21:9, 16:9, 4:3, 1:1, 3:4, 9:16 (or adaptive with a first frame), not 5:4" }],
    });
    // 7:4 is 1.6% from 16:9: beyond core's 1% for the same ratio.
    expect(sent(video({ aspect_ratio: "7:4" }))).toMatchObject({ ok: false, unhonoured: [{ field: "aspect_ratio" }] });
  });

  it("A common: a size is sent as A's ratio and the resolution within 10% of its short side, and the warning names both", () => {
    expect(sent(video({ size: "1280x720" }))).toMatchObject({
      ok: true,
      body: { ratio: "16:9", resolution: "720p" },
      warnings: ["size 1280x720 sent as ratio 16:9, resolution 720p (A takes a ratio and a resolution, not pixels)"],
    });
    expect(sent(video({ size: "1080x1920" }))).toMatchObject({ ok: true, body: { ratio: "9:16", resolution: "1080p" } });
    expect(sent(video({ size: "768x768" }))).toMatchObject({ ok: true, body: { ratio: "1:1", resolution: "720p" }, warnings: ["size 768x768 sent as ratio 1:1, resolution 720p (A takes a ratio and a resolution, not pixels)"] });
    expect(sent(video({ size: "854x480", aspect_ratio: "16:9" }))).toMatchObject({ ok: true, body: { ratio: "16:9", resolution: "480p" } });
  });

  it("A common: a size of a ratio A lacks, or further than 10% from 480, 720 or 1080 lines, is not honoured", () => {
    expect(sent(video({ size: "1000x800" }))).toEqual({ ok: false, unhonoured: [{ field: "size", reason: "size 1000x800 is 5:4, not one of A's ratios (21:9, 16:9, 4:3, 1:1, 3:4, 9:16)" }] });
    expect(sent(video({ size: "1024x576" }))).toEqual({ ok: false, unhonoured: [{ field: "size", reason: "size 1024x576 has 576 lines, not within 10% of A's 480p, 720p or 1080p" }] });
    expect(sent(video({ size: "2560x1440" }))).toMatchObject({ ok: false, unhonoured: [{ field: "size" }] });
    // 1344x768 is 7:4, 1.6% from 16:9.
    expect(sent(video({ size: "1344x768" }))).toMatchObject({ ok: false, unhonoured: [{ field: "size" }] });
  });

  it("A common: a whole number of seconds from 4 to 30 is sent as duration", () => {
    expect(sent(video({ duration_s: 4 }))).toMatchObject({ ok: true, warnings: [], body: { duration: 4 } });
    expect(sent(video({ duration_s: 30 }))).toMatchObject({ ok: true, warnings: [], body: { duration: 30 } });
  });

  it("A common: a duration at most half a second from a whole second in 4 to 30 is rounded to it, and the warning names the value sent", () => {
    expect(sent(video({ duration_s: 5.5 }))).toMatchObject({ ok: true, body: { duration: 6 }, warnings: ["duration_s 5.5 sent as duration 6 (A takes whole seconds from 4 to 30)"] });
    expect(sent(video({ duration_s: 3.5 }))).toMatchObject({ ok: true, body: { duration: 4 } });
    expect(sent(video({ duration_s: 30.5 }))).toMatchObject({ ok: true, body: { duration: 30 } });
  });

  it("A common: a duration further than half a second from 4 to 30 is not honoured", () => {
    expect(sent(video({ duration_s: 3.4 }))).toEqual({ ok: false, unhonoured: [{ field: "duration_s", reason: "A makes clips of 4 to 30 seconds, not 3.4" }] });
    expect(sent(video({ duration_s: 2 }))).toMatchObject({ ok: false, unhonoured: [{ field: "duration_s" }] });
    expect(sent(video({ duration_s: 31 }))).toMatchObject({ ok: false, unhonoured: [{ field: "duration_s" }] });
  });

  it("A common: first_frame (and last_frame) make a first-frame task of image_url items, whose ratio A requires to be adaptive", () => {
    expect(sent(video({ first_frame: FRAME }))).toMatchObject({
      ok: true,
      warnings: [],
      operation: "first_frame",
      body: { content: [text("a fox running in snow"), image(FRAME, "first_frame")], ratio: "adaptive" },
    });
    expect(sent(video({ first_frame: FRAME, last_frame: LAST, resolution: "720p", duration_s: 5 }))).toMatchObject({
      ok: true,
      operation: "first_frame",
      body: { content: [text("a fox running in snow"), image(FRAME, "first_frame"), image(LAST, "last_frame")], ratio: "adaptive", resolution: "720p", duration: 5 },
    });
  });

  it("A common: a first frame without a prompt is a first-frame task of the frame alone", () => {
    expect(sent({ task: "video", first_frame: FRAME })).toMatchObject({ ok: true, body: { model: NEWEST, content: [image(FRAME, "first_frame")], ratio: "adaptive" } });
  });

  it("A common: aspect_ratio adaptive maps to A's ratio adaptive", () => {
    const result = sent(video({ first_frame: FRAME, aspect_ratio: "adaptive" }));
    expect(result).toMatchObject({ ok: true, warnings: [], request: { input: { ratio: "adaptive" } }, body: { ratio: "adaptive" } });
  });

  it("A common: a fixed aspect ratio or a size with a first frame is not honoured (A takes that clip's ratio from the frame)", () => {
    expect(sent(video({ first_frame: FRAME, aspect_ratio: "16:9" }))).toEqual({
      ok: false,
      unhonoured: [{ field: "aspect_ratio", reason: "A takes a first-frame clip's ratio from the frame (adaptive), not 16:9" }],
    });
    expect(sent(video({ first_frame: FRAME, size: "1280x720" }))).toEqual({
      ok: false,
      unhonoured: [{ field: "size", reason: "A takes a first-frame clip's ratio from the frame (adaptive), so size 1280x720 cannot be sent" }],
    });
  });

  it("A common: reference images make a reference-to-video task of reference_image items", () => {
    const references = ["https://images.example/fox.png", "https://images.example/snow.png"];
    expect(sent(video({ reference_images: references, aspect_ratio: "16:9" }))).toMatchObject({
      ok: true,
      warnings: [],
      operation: "reference_to_video",
      body: { content: [text("a fox running in snow"), image(references[0]!, "reference_image"), image(references[1]!, "reference_image")], ratio: "16:9" },
    });
  });

  it("A common: reference images with a first frame are not honoured (A's task kind would be ambiguous)", () => {
    expect(sent(video({ first_frame: FRAME, reference_images: ["https://images.example/fox.png"] }))).toEqual({
      ok: false,
      unhonoured: [{ field: "reference_images", reason: "A cannot mix reference images with first_frame or last_frame in one task" }],
    });
  });

  it("A common: more reference images than the model's generation takes is the validator's refusal (older series: 15)", () => {
    const references = Array.from({ length: 16 }, (_, index) => `https://images.example/${index}.png`);
    expect(sent(video({ reference_images: references }))).toMatchObject({ ok: true });
    expect(inputError(() => adapter.validate(mapped(video({ reference_images: references }), OLDER))).reason).toMatch(/16 media items; .* takes at most 15/);
  });

  it("A common: local files are not honoured (A takes media as links, as for a native request)", () => {
    expect(sent({ task: "video", first_frame: file("first.png"), last_frame: file("last.png") })).toEqual({
      ok: false,
      unhonoured: [
        { field: "first_frame", reason: "A takes media as links; the local file first.png cannot be sent" },
        { field: "last_frame", reason: "A takes media as links; the local file last.png cannot be sent" },
      ],
    });
    expect(sent(video({ reference_images: ["https://images.example/fox.png", file("a.png"), file("b.png")] }))).toEqual({
      ok: false,
      unhonoured: [{ field: "reference_images", reason: "A takes media as links; the local files a.png, b.png cannot be sent" }],
    });
  });

  it("A common: an image request is not honoured", () => {
    expect(sent({ task: "image", prompt: "p", size: "1024x1024", n: 2, images: ["https://images.example/a.png"] })).toEqual({
      ok: false,
      unhonoured: [{ field: "task", reason: "A makes videos, not images" }],
    });
  });

  it("A common: n and images are image fields: the common check refuses them on a video, and the mapper still names them rather than drop them", () => {
    expect(inputError(() => checkCommonRequest(video({ n: 2 }))).field).toBe("n");
    expect(inputError(() => checkCommonRequest(video({ images: ["https://images.example/a.png"] }))).field).toBe("images");
    const unchecked = adapter.fromCommon!(video({ n: 2, images: ["https://images.example/a.png"] }), { model: NEWEST });
    expect(unchecked).toMatchObject({ ok: false, unhonoured: [{ field: "n" }, { field: "images" }] });
  });

  it("A common: every unhonoured field is named at once", () => {
    const result = sent({ task: "video", first_frame: file("first.png"), aspect_ratio: "16:9", duration_s: 60, reference_images: ["https://images.example/a.png"] });
    expect(result.ok).toBe(false);
    expect((result as { unhonoured: Array<{ field: string }> }).unhonoured.map((entry) => entry.field)).toEqual(["aspect_ratio", "duration_s", "first_frame", "reference_images"]);
  });

  it("A common: a target's task kind is sent as the operation, so the validator refuses one the fields contradict", () => {
    expect(sent(video({ first_frame: FRAME }), NEWEST, "first_frame")).toMatchObject({ ok: true, operation: "first_frame" });
    expect(inputError(() => sent(video(), NEWEST, "first_frame")).reason).toMatch(/declares first_frame but the content items make a text_to_video task/);
  });

  it("A common: the prompt is sent as written, so a prompt-suffix flag in it is read by A and checked against the mapped fields", () => {
    const result = sent(video({ prompt: "waves at dusk --dur 5", duration_s: 5 }));
    expect(result).toMatchObject({ ok: true, body: { duration: 5 }, validatedWarnings: ["prompt flag --dur 5 repeats the body field duration"] });
    expect(inputError(() => sent(video({ prompt: "waves at dusk --dur 8", duration_s: 5 }))).field).toBe("prompt flag --dur");
  });
});

import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/core/errors.js";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createAAdapter, type AAdapterConfig } from "../../../src/providers/a/index.js";
import { inputError } from "../../helpers/errors.js";

const NEWEST = "vidgen-2-0-250601";
const OLDER = "vidgen-1-5-250301";

function adapter(config: Partial<AAdapterConfig> = {}) {
  return createAAdapter({ baseUrl: "https://a.example", apiKey: "key", enterprise: false, ...config });
}

function request(input: Record<string, unknown>, extra: Partial<JobRequest> = {}): JobRequest {
  return { provider: "a", model: NEWEST, input, ...extra };
}

const text = (prompt: string) => ({ type: "text", text: prompt });
const image = (role: string, url = "https://example.com/frame.png") => ({ type: "image_url", image_url: { url }, role });
const video = (url = "https://example.com/clip.mp4") => ({ type: "video_url", video_url: { url }, role: "reference_video" });
const audio = (url = "https://example.com/voice.mp3") => ({ type: "audio_url", audio_url: { url }, role: "reference_audio" });

function validate(input: Record<string, unknown>, extra: Partial<JobRequest> = {}, config: Partial<AAdapterConfig> = {}) {
  return adapter(config).validate(request(input, extra));
}


describe("A: content items and task kinds", () => {
  it("A: a prompt becomes the one text item of content", () => {
    const validated = validate({ prompt: "a fox in the snow", duration: 5 });
    expect(validated.body).toEqual({ model: NEWEST, content: [text("a fox in the snow")], duration: 5 });
    expect(validated.operation).toBe("text_to_video");
    expect(inputError(() => validate({ prompt: "x", content: [text("y")] })).field).toBe("prompt");
    expect(inputError(() => validate({ content: [text("x"), text("y")] })).field).toBe("content");
  });

  it("A: only text items make a text-to-video task, with no extra rule", () => {
    const validated = validate({ content: [text("waves")], ratio: "9:16", resolution: "1080p" });
    expect(validated.facts.taskKind).toBe("text_to_video");
    expect(validated.body).not.toHaveProperty("omni_reference_task_type");
  });

  it("A: first_frame tasks require ratio adaptive", () => {
    const error = inputError(() => validate({ content: [text("x"), image("first_frame")], ratio: "16:9" }));
    expect(error.field).toBe("ratio");
    expect(error.allowed).toBe("adaptive");
    expect(inputError(() => validate({ content: [image("first_frame"), image("last_frame")], ratio: "1:1" })).field).toBe("ratio");
    // Its default is not shown, so mediagate sends the one value allowed.
    const validated = validate({ content: [text("x"), image("first_frame"), image("last_frame")] });
    expect(validated.operation).toBe("first_frame");
    expect(validated.body.ratio).toBe("adaptive");
  });

  it("A: a last_frame needs one first_frame, and frames cannot be mixed with reference items", () => {
    expect(inputError(() => validate({ content: [text("x"), image("last_frame")] })).field).toBe("content");
    expect(inputError(() => validate({ content: [image("first_frame"), image("first_frame")] })).field).toBe("content");
    expect(inputError(() => validate({ content: [image("first_frame"), image("reference_image")] })).reason).toMatch(/ambiguous/);
  });

  it("A: reference items make a reference-to-video task with no extra rule", () => {
    const validated = validate({ content: [text("x"), image("reference_image"), video(), audio()], ratio: "16:9", duration: 8 });
    expect(validated.operation).toBe("reference_to_video");
    expect(validated.body.ratio).toBe("16:9");
  });

  it("A: video editing needs ratio adaptive and duration -1", () => {
    const declared = { content: [text("make it night"), video()], omni_reference_task_type: "video_editing" };
    const validated = validate(declared);
    expect(validated.operation).toBe("video_editing");
    expect(validated.body).toMatchObject({ ratio: "adaptive", duration: -1, omni_reference_task_type: "video_editing" });
    expect(inputError(() => validate({ ...declared, duration: 5 })).field).toBe("duration");
    expect(inputError(() => validate({ ...declared, ratio: "16:9" })).field).toBe("ratio");
  });

  it("A: the editing rule on the reference video's length is reported, since it cannot be checked before sending", () => {
    const validated = validate({ content: [text("x"), video()], omni_reference_task_type: "video_editing" });
    expect(validated.warnings.join("\n")).toMatch(/4 to 30 seconds/);
  });

  it("A: video editing and extension take exactly one reference_video", () => {
    expect(inputError(() => validate({ content: [text("x"), image("reference_image")] }, { operation: "video_editing" })).field).toBe("content");
    expect(inputError(() => validate({ content: [text("x"), video(), video("https://e.com/2.mp4")] }, { operation: "video_extension" })).field).toBe("content");
  });

  it("A: video extension needs ratio adaptive, and its intent is declared by operation or omni_reference_task_type", () => {
    const validated = validate({ content: [text("go on"), video()] }, { operation: "video_extension" });
    expect(validated.body).toMatchObject({ ratio: "adaptive", omni_reference_task_type: "video_extension" });
    expect(validated.body).not.toHaveProperty("duration");
    expect(inputError(() => validate({ content: [text("x"), video()], ratio: "4:3" }, { operation: "video_extension" })).field).toBe("ratio");
    // A kind other than editing or extension declared only by operation is checked, not sent.
    expect(validate({ content: [text("x"), video()] }, { operation: "reference_to_video" }).body).not.toHaveProperty("omni_reference_task_type");
    expect(validate({ content: [text("x"), video()], omni_reference_task_type: "reference_to_video" }).body.omni_reference_task_type).toBe("reference_to_video");
    // Without a declared intent one reference video is a reference-to-video task.
    expect(validate({ content: [text("x"), video()] }).operation).toBe("reference_to_video");
  });

  it("A: a declared task kind the content contradicts is an error", () => {
    expect(inputError(() => validate({ content: [text("x")], omni_reference_task_type: "first_frame" })).field).toBe("omni_reference_task_type");
    expect(inputError(() => validate({ content: [text("x")] }, { operation: "reference_to_video" })).field).toBe("operation");
    expect(inputError(() => validate({ content: [text("x")], omni_reference_task_type: "nonsense" })).field).toBe("omni_reference_task_type");
    expect(inputError(() => validate({ content: [text("x"), video()], omni_reference_task_type: "video_editing" }, { operation: "video_extension" })).field).toBe(
      "omni_reference_task_type",
    );
  });

  it("A: media items need a role that fits their type", () => {
    expect(inputError(() => validate({ content: [text("x"), { type: "image_url", image_url: { url: "https://e.com/a.png" } }] })).field).toBe("content[1].role");
    expect(inputError(() => validate({ content: [text("x"), image("reference_video")] })).field).toBe("content[1].role");
    expect(inputError(() => validate({ content: [text("x"), { type: "video", video: { url: "https://e.com/a.mp4" }, role: "reference_video" }] })).field).toBe(
      "content[1].type",
    );
    expect(inputError(() => validate({ content: [text("x"), image("reference_image", "ftp://e.com/a.png")] })).field).toBe("content[1].image_url.url");
  });

  it("A: video and audio item type names come from one configurable place", () => {
    const names = { wireNames: { videoItemType: "clip_url", audioItemType: "sound_url" } };
    const validated = validate(
      { content: [text("x"), { type: "clip_url", clip_url: { url: "https://e.com/c.mp4" }, role: "reference_video" }, { type: "sound_url", sound_url: { url: "https://e.com/s.mp3" }, role: "reference_audio" }] },
      {},
      names,
    );
    expect(validated.body.content).toEqual([
      text("x"),
      { type: "clip_url", clip_url: { url: "https://e.com/c.mp4" }, role: "reference_video" },
      { type: "sound_url", sound_url: { url: "https://e.com/s.mp3" }, role: "reference_audio" },
    ]);
    expect(inputError(() => validate({ content: [text("x"), video()] }, {}, names)).field).toBe("content[1].type");
  });

  it("A: an image given outside content is a reference image; a local file is refused", () => {
    const validated = validate({ prompt: "x" }, { images: ["https://e.com/a.png"] });
    expect(validated.body.content).toEqual([text("x"), image("reference_image", "https://e.com/a.png")]);
    expect(inputError(() => validate({ prompt: "x" }, { images: [{ fileName: "a.png", bytes: Buffer.from("png") }] })).field).toBe("images[0]");
  });
});

describe("A: body field rules", () => {
  it("A: duration must be 4 to 30 seconds, and -1 only for video editing", () => {
    expect(validate({ prompt: "x", duration: 4 }).body.duration).toBe(4);
    expect(validate({ prompt: "x", duration: 30 }).body.duration).toBe(30);
    expect(inputError(() => validate({ prompt: "x", duration: 3 })).field).toBe("duration");
    expect(inputError(() => validate({ prompt: "x", duration: 31 })).field).toBe("duration");
    expect(inputError(() => validate({ prompt: "x", duration: -1 })).reason).toMatch(/only for video editing/);
    expect(inputError(() => validate({ prompt: "x", duration: 5.5 })).field).toBe("duration");
  });

  it("A: resolution must be 480p, 720p or 1080p", () => {
    for (const resolution of ["480p", "720p", "1080p"]) expect(validate({ prompt: "x", resolution }).body.resolution).toBe(resolution);
    expect(inputError(() => validate({ prompt: "x", resolution: "4k" })).allowed).toBe("480p, 720p, 1080p");
  });

  it("A: ratio must be one of 21:9, 16:9, 4:3, 1:1, 3:4, 9:16, adaptive", () => {
    for (const ratio of ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16", "adaptive"]) expect(validate({ prompt: "x", ratio }).body.ratio).toBe(ratio);
    expect(inputError(() => validate({ prompt: "x", ratio: "2:1" })).field).toBe("ratio");
  });

  it("A: seed is an integer and watermark, generate_audio, camera_fixed are booleans", () => {
    const validated = validate({ prompt: "x", seed: 7, watermark: false, generate_audio: true });
    expect(validated.body).toMatchObject({ seed: 7, watermark: false, generate_audio: true });
    expect(inputError(() => validate({ prompt: "x", seed: "7" })).field).toBe("seed");
    expect(inputError(() => validate({ prompt: "x", watermark: "no" })).field).toBe("watermark");
    expect(validate({ prompt: "x", camera_fixed: true }).warnings.join("\n")).toMatch(/known only as the prompt flag --cf/);
  });

  it("A: the container is chosen by a configurable field (default output_format): mp4 or mov", () => {
    expect(validate({ prompt: "x", output_format: "mov" }).body.output_format).toBe("mov");
    expect(inputError(() => validate({ prompt: "x", output_format: "avi" })).field).toBe("output_format");
    expect(validate({ prompt: "x", container: "mov" }, {}, { wireNames: { containerField: "container" } }).body.container).toBe("mov");
  });

  it("A: fields A does not have are refused, with what it has", () => {
    expect(inputError(() => validate({ prompt: "x", aspect_ratio: "16:9" })).allowed).toMatch(/ratio/);
    expect(inputError(() => validate({ prompt: "x", width: 1280 })).reason).toMatch(/no width or height/);
    expect(inputError(() => validate({ prompt: "x", draft: true })).field).toBe("draft");
  });

  it("A: callback_url is set from the configured callback URL, never from the input", () => {
    expect(validate({ prompt: "x" }).body).not.toHaveProperty("callback_url");
    const validated = validate({ prompt: "x" }, {}, { callbackUrl: "https://me.example/hooks/a" });
    expect(validated.body.callback_url).toBe("https://me.example/hooks/a");
    expect(inputError(() => validate({ prompt: "x", callback_url: "https://evil.example" })).field).toBe("callback_url");
    expect(() => adapter({ callbackUrl: "not a url" })).toThrow(ConfigError);
  });
});

describe("A: prompt flags in a request", () => {
  it("A: a prompt flag that contradicts a body field is an error", () => {
    const error = inputError(() => validate({ prompt: "a fox --rs 480p", resolution: "1080p" }));
    expect(error.field).toBe("prompt flag --rs");
    expect(error.reason).toMatch(/body field resolution is 1080p/);
    expect(inputError(() => validate({ prompt: "a fox --wm true", watermark: false })).field).toBe("prompt flag --wm");
    expect(inputError(() => validate({ prompt: "a fox --cf false", camera_fixed: true })).field).toBe("prompt flag --cf");
  });

  it("A: a prompt flag that repeats a body field is reported", () => {
    const validated = validate({ prompt: "a fox --dur 6", duration: 6 });
    expect(validated.warnings).toContain("prompt flag --dur 6 repeats the body field duration");
    expect(validated.facts.promptFlags).toEqual(["--dur"]);
  });

  it("A: a prompt flag alone is held to the body field's rules and also sent as that field", () => {
    const validated = validate({ prompt: "a fox --rs 720p --seed 9" });
    expect(validated.body).toMatchObject({ resolution: "720p", seed: 9, content: [text("a fox --rs 720p --seed 9")] });
    expect(validated.warnings.join("\n")).toMatch(/--rs 720p: also sent as the body field resolution/);
    expect(inputError(() => validate({ prompt: "a fox --dur 40" })).field).toBe("prompt flag --dur");
    expect(inputError(() => validate({ content: [text("x --rt 16:9"), image("first_frame")] })).field).toBe("prompt flag --rt");
    expect(validate({ content: [text("x --rt adaptive"), image("first_frame")] }).body.ratio).toBe("adaptive");
  });

  it("A: a malformed prompt flag is an error, not silently ignored", () => {
    expect(inputError(() => validate({ prompt: "a fox --rs 4k" })).field).toBe("prompt flag --rs");
  });

  it("A: --cf stays a prompt flag only (camera_fixed is known only as a flag)", () => {
    const validated = validate({ prompt: "a fox --cf true" });
    expect(validated.body).not.toHaveProperty("camera_fixed");
    expect(validated.warnings.join("\n")).toMatch(/--cf true: camera_fixed is known only as a prompt flag/);
  });
});

describe("A: item limits by model generation", () => {
  const images = (count: number) => Array.from({ length: count }, (_, index) => image("reference_image", `https://e.com/${index}.png`));
  const videos = (count: number) => Array.from({ length: count }, (_, index) => video(`https://e.com/${index}.mp4`));
  const audios = (count: number) => Array.from({ length: count }, (_, index) => audio(`https://e.com/${index}.mp3`));

  it("A: the newest generation takes at most 50 media items: 30 images, 10 videos, 10 audio", () => {
    expect(validate({ content: [text("x"), ...images(30), ...videos(10), ...audios(10)] }).facts).toMatchObject({ images: 30, videos: 10, audio: 10, itemLimits: "newest" });
    expect(inputError(() => validate({ content: [text("x"), ...images(31)] })).reason).toMatch(/at most 30/);
    expect(inputError(() => validate({ content: [text("x"), ...videos(11)] })).reason).toMatch(/at most 10/);
    expect(inputError(() => validate({ content: [text("x"), ...audios(11)] })).reason).toMatch(/at most 10/);
  });

  it("A: older series take at most 15 items", () => {
    expect(validate({ content: [text("x"), ...images(15)] }, { model: OLDER }).facts.itemLimits).toBe("older");
    expect(inputError(() => validate({ content: [text("x"), ...images(10), ...videos(6)] }, { model: OLDER })).reason).toMatch(/at most 15/);
  });

  it("A: audio-only content is allowed only on the newest generation", () => {
    expect(validate({ content: [text("x"), audio()] }).operation).toBe("reference_to_video");
    expect(inputError(() => validate({ content: [text("x"), audio()] }, { model: OLDER })).reason).toMatch(/audio-only/);
    expect(validate({ content: [text("x"), audio(), image("reference_image")] }, { model: OLDER }).operation).toBe("reference_to_video");
  });

  it("A: an unknown model gets the conservative limits (at most 15, no audio-only) and a warning", () => {
    const validated = validate({ content: [text("x"), ...images(15)] }, { model: "mystery-model" });
    expect(validated.facts.itemLimits).toBe("conservative");
    expect(validated.warnings.join("\n")).toMatch(/cannot read a generation/);
    expect(inputError(() => validate({ content: [text("x"), ...images(16)] }, { model: "mystery-model" })).reason).toMatch(/at most 15/);
    expect(inputError(() => validate({ content: [text("x"), audio()] }, { model: "vidgen-3-0-270101" })).reason).toMatch(/audio-only/);
  });

  it("A: the newest generation is configuration", () => {
    expect(validate({ content: [text("x"), audio()] }, { model: OLDER }, { newestGeneration: "1.5" }).facts.itemLimits).toBe("newest");
    expect(() => adapter({ newestGeneration: "latest" })).toThrow(ConfigError);
  });
});

describe("A: prompt length", () => {
  it("A: a prompt over 1,000 characters is sent as given with a warning that A publishes no prompt length limit", () => {
    const fromPrompt = validate({ prompt: "x".repeat(1_001) });
    expect(fromPrompt.warnings.join("\n")).toMatch(/prompt is 1,001 characters long; A publishes no prompt length limit/);
    const fromContent = validate({ content: [text("y".repeat(2_000))] });
    expect(fromContent.warnings.join("\n")).toMatch(/the text item of content is 2,000 characters long; A publishes no prompt length limit/);
    expect(validate({ prompt: "x".repeat(1_000) }).warnings).toEqual([]);
  });
});

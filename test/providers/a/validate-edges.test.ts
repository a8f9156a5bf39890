import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createAAdapter, type AAdapterConfig } from "../../../src/providers/a/index.js";
import { inputError } from "../../helpers/errors.js";

const NEWEST = "vidgen-2-0-250601";

function validate(input: unknown, extra: Partial<JobRequest> = {}, config: Partial<AAdapterConfig> = {}) {
  const adapter = createAAdapter({ baseUrl: "https://a.example", apiKey: "key", enterprise: false, ...config });
  return adapter.validate({ provider: "a", model: NEWEST, input: input as Record<string, unknown>, ...extra });
}

const text = (prompt: string) => ({ type: "text", text: prompt });
const image = (role: string, url = "https://example.com/frame.png") => ({ type: "image_url", image_url: { url }, role });
const video = (url = "https://example.com/clip.mp4") => ({ type: "video_url", video_url: { url }, role: "reference_video" });

describe("A: the request as a whole", () => {
  it("A: input must be an object", () => {
    for (const input of [null, [], "a fox", 5]) expect(inputError(() => validate(input)).field).toBe("input");
  });

  it("A: the model is an identifier without spaces, and is required", () => {
    for (const model of ["", "   ", "vidgen 2-0-250601", 42]) {
      const error = inputError(() => validate({ prompt: "x" }, { model: model as string }));
      expect(error.field).toBe("model");
      expect(error.allowed).toMatch(/identifier/);
    }
  });

  it("A: the create-task body is exactly model, content and the fields given; facts name the provider's reading of the model", () => {
    const validated = validate({ prompt: "a fox" });
    expect(validated.provider).toBe("a");
    expect(Object.keys(validated.body)).toEqual(["model", "content"]);
    expect(validated.facts).toMatchObject({ modelGeneration: "2.0", snapshotDate: "2025-06-01", promptFlags: [] });
    expect(validate({ prompt: "a fox" }, { model: "mystery" }).facts).toMatchObject({ modelGeneration: null, snapshotDate: null });
  });
});

describe("A: fields A does not have", () => {
  it("A: callback_url is refused from input because mediagate sets it from MEDIAGATE_PUBLIC_URL", () => {
    const error = inputError(() => validate({ prompt: "x", callback_url: "https://evil.example" }));
    expect(error.field).toBe("callback_url");
    expect(error.reason).toMatch(/MEDIAGATE_PUBLIC_URL/);
  });

  it("A: height, like width, is refused pointing to resolution and ratio", () => {
    const error = inputError(() => validate({ prompt: "x", height: 720 }));
    expect(error.field).toBe("height");
    expect(error.allowed).toMatch(/resolution.*ratio/);
  });

  it("A: model given in input is refused: the model is the job's model", () => {
    const error = inputError(() => validate({ prompt: "x", model: NEWEST }));
    expect(error.field).toBe("model");
    expect(error.reason).toMatch(/job's model/);
  });

  it("A: an unknown field is refused listing every field A's create-task request takes", () => {
    const error = inputError(() => validate({ prompt: "x", draft: true }));
    expect(error.field).toBe("draft");
    expect(error.reason).toMatch(/not a field/);
    expect(error.allowed?.split(", ")).toEqual([
      "prompt",
      "content",
      "generate_audio",
      "ratio",
      "duration",
      "resolution",
      "seed",
      "watermark",
      "camera_fixed",
      "output_format",
      "omni_reference_task_type",
    ]);
  });
});

describe("A: prompt and content", () => {
  it("A: prompt must be a non-empty string", () => {
    for (const prompt of ["", "   ", 5]) expect(inputError(() => validate({ prompt })).field).toBe("prompt");
  });

  it("A: the prompt given twice (prompt and a text item) is refused saying so", () => {
    expect(inputError(() => validate({ prompt: "x", content: [text("y")] })).reason).toMatch(/twice/);
  });

  it("A: content is required: a prompt or content items", () => {
    const error = inputError(() => validate({}));
    expect(error.field).toBe("content");
    expect(error.allowed).toMatch(/prompt/);
  });

  it("A: a local image file is refused: A takes media as http(s) links", () => {
    const error = inputError(() => validate({ prompt: "x" }, { images: [{ fileName: "a.png", bytes: Buffer.from("png") }] }));
    expect(error.field).toBe("images[0]");
    expect(error.reason).toMatch(/a\.png/);
    expect(error.allowed).toMatch(/http/);
  });

  it("A: prompt flags are read from the text item wherever it stands in content", () => {
    expect(inputError(() => validate({ content: [image("first_frame"), text("x --rt 16:9")] })).field).toBe("prompt flag --rt");
  });

  it("A: content with no text item has no prompt flags", () => {
    expect(validate({ content: [image("reference_image")] }).facts.promptFlags).toEqual([]);
  });
});

describe("A: body field refusals say what is allowed", () => {
  it("A: the container must be mp4 or mov", () => {
    for (const value of ["avi", 4]) {
      const error = inputError(() => validate({ prompt: "x", output_format: value }));
      expect(error.field).toBe("output_format");
      expect(error.reason).toContain(JSON.stringify(value));
      expect(error.allowed).toBe("mp4, mov");
    }
  });

  it("A: a container field not given is not sent", () => {
    expect(validate({ prompt: "x" }).body).not.toHaveProperty("output_format");
  });

  it("A: duration outside 4 to 30 seconds is refused with the range allowed", () => {
    for (const duration of [3, 31]) {
      const error = inputError(() => validate({ prompt: "x", duration }));
      expect(error.reason).toContain(`${duration} s`);
      expect(error.allowed).toBe("4 to 30");
    }
    expect(inputError(() => validate({ prompt: "x", duration: -1 })).allowed).toBe("4 to 30");
  });

  it("A: a duration from a prompt flag is refused naming the flag (-1 only for video editing)", () => {
    const error = inputError(() => validate({ prompt: "a fox --dur -1" }));
    expect(error.field).toBe("prompt flag --dur");
    expect(error.allowed).toBe("4 to 30");
  });

  it("A: video editing refuses a duration other than -1, naming the prompt flag that set it and allowing -1", () => {
    const editing = { content: [text("make it night --dur 5"), video()], omni_reference_task_type: "video_editing" };
    const error = inputError(() => validate(editing));
    expect(error.field).toBe("prompt flag --dur");
    expect(error.allowed).toBe("-1");
    expect(error.reason).toMatch(/-1, not 5/);
    const fromBody = inputError(() => validate({ content: [text("make it night"), video()], omni_reference_task_type: "video_editing", duration: 5 }));
    expect(fromBody).toMatchObject({ field: "duration", allowed: "-1" });
  });

  it("A: a frame task's ratio refusal names the task kind and the ratio given", () => {
    const error = inputError(() => validate({ content: [text("x"), image("first_frame")], ratio: "16:9" }));
    expect(error.reason).toMatch(/first_frame/);
    expect(error.reason).toMatch(/16:9/);
  });
});

describe("A: declared task kinds", () => {
  it("A: an unknown operation is refused listing A's task kinds", () => {
    const error = inputError(() => validate({ prompt: "x" }, { operation: "upscale" }));
    expect(error.field).toBe("operation");
    expect(error.reason).toMatch(/upscale/);
    expect(error.allowed?.split(", ")).toEqual(["text_to_video", "first_frame", "reference_to_video", "video_editing", "video_extension"]);
    // Refused as the operation, even when omni_reference_task_type declares a valid kind.
    expect(inputError(() => validate({ content: [text("x"), image("first_frame")], omni_reference_task_type: "first_frame" }, { operation: "upscale" })).field).toBe("operation");
  });

  it("A: an unknown omni_reference_task_type is refused listing the values it takes", () => {
    const error = inputError(() => validate({ prompt: "x", omni_reference_task_type: "nonsense" }));
    expect(error.field).toBe("omni_reference_task_type");
    expect(error.reason).toMatch(/"nonsense"/);
    expect(error.allowed?.split(", ")).toContain("video_extension");
  });

  it("A: operation and omni_reference_task_type declaring the same kind agree; different kinds are refused naming both", () => {
    const same = validate({ content: [text("x"), video()], omni_reference_task_type: "video_editing" }, { operation: "video_editing" });
    expect(same.operation).toBe("video_editing");
    const error = inputError(() => validate({ content: [text("x"), video()], omni_reference_task_type: "video_editing" }, { operation: "video_extension" }));
    expect(error.reason).toMatch(/video_editing/);
    expect(error.reason).toMatch(/video_extension/);
  });
});

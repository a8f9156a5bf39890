import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { D_ENDPOINTS, imageSizeOf, imageSizeOfText, REFERENCE_VALUE_FORMAT, validateDRequest } from "../../../src/providers/d/index.js";
import { renderPng } from "../../../src/sandbox/media/png.js";
import { jpegHeader, pngHeader, urlReferences } from "./images.js";
import { inputError } from "../../helpers/errors.js";

const URL_A = "https://images.example/a.png";

function request(input: Record<string, unknown>, extra: Partial<JobRequest> = {}): JobRequest {
  return { provider: "d", model: "gen-2-pro", input, ...extra };
}

const base = { prompt: "a lighthouse at dawn", width: 1024, height: 768 };

function validate(input: Record<string, unknown>, extra: Partial<JobRequest> = {}) {
  return validateDRequest(request(input, extra));
}


describe("D: endpoints", () => {
  it("D: every endpoint of the spec's table is accepted and selects the URL path", () => {
    for (const model of D_ENDPOINTS) {
      const validated = validate(base, { model });
      expect(validated).toMatchObject({ provider: "d", model, operation: null });
      expect(validated.facts.endpoint).toBe(model);
    }
    expect(D_ENDPOINTS).toEqual([
      "gen-2-max",
      "gen-2-pro",
      "gen-2-pro-preview",
      "gen-2-flex",
      "gen-2-compact-4b",
      "gen-2-compact-9b",
      "gen-2-compact-9b-preview",
      "gen-2-compact-9b-kv-finetuned",
      "gen-ctx-max",
    ]);
  });

  it("D: the dev tier has no hosted endpoint", () => {
    const error = inputError(() => validate(base, { model: "gen-2-dev" }));
    expect(error.field).toBe("model");
    expect(error.reason).toMatch(/dev tier has no hosted endpoint/);
    expect(error.allowed).toContain("gen-2-pro");
  });

  it("D: base variants are not offered on the public API", () => {
    const error = inputError(() => validate(base, { model: "gen-2-compact-4b-base" }));
    expect(error.field).toBe("model");
    expect(error.reason).toMatch(/base variants are not offered/);
  });

  it("D: an unknown model is refused with the allowed endpoints listed", () => {
    const error = inputError(() => validate(base, { model: "Gen-2-Pro" }));
    expect(error.field).toBe("model");
    expect(error.reason).toMatch(/not a D endpoint/);
    expect(error.allowed).toBe(D_ENDPOINTS.join(", "));
  });

  it("D: there are no separate operations (editing uses the same endpoint)", () => {
    expect(inputError(() => validate(base, { operation: "edit" })).field).toBe("operation");
  });
});

describe("D: prompt and size", () => {
  it("D: the body is exactly prompt, width, height (and seed when given)", () => {
    expect(validate(base).body).toEqual({ prompt: "a lighthouse at dawn", width: 1024, height: 768 });
    expect(validate({ ...base, seed: 7 }).body).toEqual({ prompt: "a lighthouse at dawn", width: 1024, height: 768, seed: 7 });
  });

  it("D: prompt is required", () => {
    expect(inputError(() => validate({ width: 1024, height: 1024 })).field).toBe("prompt");
  });

  it("D: prompt must be a non-empty string", () => {
    expect(inputError(() => validate({ ...base, prompt: "   " })).reason).toMatch(/non-empty string/);
    expect(inputError(() => validate({ ...base, prompt: 42 })).field).toBe("prompt");
  });

  it("D: width must be a multiple of 16", () => {
    const error = inputError(() => validate({ ...base, width: 1000 }));
    expect(error.field).toBe("width");
    expect(error.reason).toMatch(/multiple of 16/);
    expect(error.allowed).toMatch(/multiples of 16 from 64/);
  });

  it("D: height must be a multiple of 16", () => {
    const error = inputError(() => validate({ ...base, height: 770 }));
    expect(error.field).toBe("height");
    expect(error.reason).toMatch(/multiple of 16/);
  });

  it("D: width and height must each be at least 64", () => {
    expect(inputError(() => validate({ ...base, width: 48 })).reason).toMatch(/at least 64/);
    expect(inputError(() => validate({ ...base, height: 32 })).reason).toMatch(/at least 64/);
    expect(validate({ ...base, width: 64, height: 64 }).body).toMatchObject({ width: 64, height: 64 });
  });

  it("D: width and height must be integers", () => {
    expect(inputError(() => validate({ ...base, width: 1024.5 })).reason).toMatch(/integer/);
    expect(inputError(() => validate({ ...base, height: "768" })).reason).toMatch(/integer/);
  });

  it("D: width and height are required (D's default size is not shown and the price depends on it)", () => {
    expect(inputError(() => validate({ prompt: "x", height: 512 })).field).toBe("width");
    expect(inputError(() => validate({ prompt: "x", width: 512 })).field).toBe("height");
  });

  it("D: above 4 MP is accepted with a warning that D reduces it to 4 MP", () => {
    const validated = validate({ ...base, width: 4096, height: 2048 });
    expect(validated.body).toMatchObject({ width: 4096, height: 2048 });
    expect(validated.warnings.join("\n")).toMatch(/8 MP, above D's 4 MP limit: D reduces the output to 4 MP; priced at 4 MP/);
    expect(validated.facts).toMatchObject({ outputPixels: 4096 * 2048, reducedToFourMegapixels: true });
  });

  it("D: exactly 4 MP (2048x2048) is within the limit and has no warning", () => {
    const validated = validate({ ...base, width: 2048, height: 2048 });
    expect(validated.warnings).toEqual([]);
    expect(validated.facts.reducedToFourMegapixels).toBe(false);
  });
});

describe("D: other fields", () => {
  it("D: negative prompts are refused before sending", () => {
    for (const field of ["negative_prompt", "negativePrompt", "neg_prompt", "negative-prompt", "NEGATIVE_PROMPT", "negative"]) {
      const error = inputError(() => validate({ ...base, [field]: "blurry" }));
      expect(error.field).toBe(field);
      expect(error.reason).toBe("negative prompts are not supported by D");
    }
    expect(inputError(() => validate({ ...base, negative_prompt: "" })).reason).toMatch(/negative prompts/);
  });

  it("D: seed must be an integer and is passed through", () => {
    expect(validate({ ...base, seed: -3 }).body.seed).toBe(-3);
    expect(inputError(() => validate({ ...base, seed: 1.5 })).field).toBe("seed");
    expect(inputError(() => validate({ ...base, seed: "7" })).field).toBe("seed");
  });

  it("D: fields the spec does not show are sent unchanged with a warning that they are unchecked", () => {
    const validated = validate({ ...base, output_format: "jpeg", safety_tolerance: 2, prompt_upsampling: true });
    expect(validated.body).toEqual({ ...base, output_format: "jpeg", safety_tolerance: 2, prompt_upsampling: true });
    expect(validated.warnings).toEqual([
      "output_format is not a field the D spec shows; sent unchanged and unchecked",
      "safety_tolerance is not a field the D spec shows; sent unchanged and unchecked",
      "prompt_upsampling is not a field the D spec shows; sent unchanged and unchecked",
    ]);
  });

  it("D: the endpoint is the job's model, not a body field", () => {
    expect(inputError(() => validate({ ...base, model: "gen-2-max" })).field).toBe("model");
    expect(validate({ ...base, model: "gen-2-pro" }).body).not.toHaveProperty("model");
  });

  it("D: input must be an object", () => {
    expect(inputError(() => validateDRequest({ provider: "d", model: "gen-2-pro", input: [] as unknown as Record<string, unknown> })).field).toBe("input");
  });
});

describe("D: reference images", () => {
  it("D: reference images are sent as input_image, input_image_2, … from images, URLs as given", () => {
    const validated = validate(base, { images: [URL_A, "https://images.example/b.jpg"] });
    expect(validated.body).toEqual({ ...base, input_image: URL_A, input_image_2: "https://images.example/b.jpg" });
    expect(validated.facts.references).toEqual([
      { field: "input_image", from: "images", kind: "url", width: null, height: null, pixels: null },
      { field: "input_image_2", from: "images", kind: "url", width: null, height: null, pixels: null },
    ]);
  });

  it("D: a local reference file is sent as bare base64 and the choice is recorded in facts", () => {
    const bytes = pngHeader(512, 512);
    const validated = validate(base, { images: [{ fileName: "ref.png", bytes }] });
    expect(validated.body.input_image).toBe(bytes.toString("base64"));
    expect(String(validated.body.input_image)).not.toMatch(/^data:/);
    expect(validated.facts.referenceValueFormat).toBe(REFERENCE_VALUE_FORMAT);
    expect(REFERENCE_VALUE_FORMAT).toMatch(/does not show the value format/);
    expect(validated.facts.references).toEqual([{ field: "input_image", from: "images", kind: "base64", width: 512, height: 512, pixels: 512 * 512 }]);
  });

  it("D: reference fields given natively in input are sent unchanged", () => {
    const base64 = pngHeader(640, 480).toString("base64");
    const validated = validate({ ...base, input_image: URL_A, input_image_2: `data:image/png;base64,${base64}` });
    expect(validated.body).toEqual({ ...base, input_image: URL_A, input_image_2: `data:image/png;base64,${base64}` });
    expect(validated.facts.references).toMatchObject([
      { field: "input_image", from: "input", kind: "url", pixels: null },
      { field: "input_image_2", from: "input", kind: "base64", width: 640, height: 480 },
    ]);
  });

  it("D: reference numbering starts at input_image and has no gap", () => {
    expect(inputError(() => validate({ ...base, input_image_2: URL_A })).field).toBe("input_image_2");
    expect(inputError(() => validate({ ...base, input_image: URL_A, input_image_3: URL_A })).reason).toMatch(/without input_image_2/);
  });

  it("D: misnamed reference fields are refused", () => {
    for (const field of ["input_image_1", "input_image_02", "input_images"]) {
      const error = inputError(() => validate({ ...base, input_image: URL_A, [field]: URL_A }));
      expect(error.field).toBe(field);
      expect(error.allowed).toMatch(/input_image, input_image_2/);
    }
  });

  it("D: a reference value must be a non-empty string", () => {
    expect(inputError(() => validate({ ...base, input_image: "" })).field).toBe("input_image");
    expect(inputError(() => validate({ ...base, input_image: null })).field).toBe("input_image");
  });

  it("D: a native reference that is neither a URL nor base64 image data is sent as given with a warning", () => {
    const validated = validate({ ...base, input_image: "./cat.png" });
    expect(validated.body.input_image).toBe("./cat.png");
    expect(validated.warnings.join("\n")).toMatch(/input_image is neither an http\(s\) URL nor base64/);
  });

  it("D: a local reference file that is not a PNG, JPEG or WebP image by its first bytes is refused naming its images entry", () => {
    const text = { fileName: "passwd", bytes: Buffer.from("root:x:0:0:root:/root:/bin/bash\n") };
    const error = inputError(() => validate(base, { images: [{ fileName: "ok.png", bytes: pngHeader(64, 64) }, text] }));
    expect(error.field).toBe("images[1]");
    expect(error.reason).toMatch(/file passwd is not a PNG, JPEG or WebP image/);
    expect(error.allowed).toMatch(/PNG, JPEG or WebP/);
    const webp = { fileName: "a.webp", bytes: Buffer.from("RIFF\u0000\u0000\u0000\u0000WEBPVP8 ", "latin1") };
    expect(validate(base, { images: [webp] }).facts.references).toMatchObject([{ kind: "base64", pixels: null }]);
  });

  it("D: a native reference carrying base64 data (bare or a data: URL) must be a PNG, JPEG or WebP image", () => {
    const passwd = Buffer.from("root:x:0:0:root:/root:/bin/bash\n").toString("base64");
    for (const value of [passwd, `data:text/plain;base64,${passwd}`, "data:text/plain,hello"]) {
      const error = inputError(() => validate({ ...base, input_image: value }));
      expect(error.field).toBe("input_image");
      expect(error.reason).toMatch(/not a PNG, JPEG or WebP image/);
    }
    const png = pngHeader(512, 512).toString("base64");
    expect(validate({ ...base, input_image: png }).facts.references).toMatchObject([{ kind: "base64", pixels: 512 * 512 }]);
    expect(validate({ ...base, input_image: `data:image/png;base64,${png}` }).facts.references).toMatchObject([{ kind: "base64" }]);
  });

  it("D: references come from input or from images, not both", () => {
    expect(inputError(() => validate({ ...base, input_image: URL_A }, { images: [URL_A] })).field).toBe("images");
  });

  it("D: an images entry must be an http(s) URL or a local file", () => {
    expect(inputError(() => validate(base, { images: ["ftp://images.example/a.png"] })).field).toBe("images[0]");
    expect(inputError(() => validate(base, { images: [{ fileName: "empty.png", bytes: Buffer.alloc(0) }] })).field).toBe("images[0]");
  });

  it("D: compact endpoints take at most 4 reference images", () => {
    for (const model of ["gen-2-compact-4b", "gen-2-compact-9b", "gen-2-compact-9b-preview", "gen-2-compact-9b-kv-finetuned"]) {
      expect(Object.keys(validate({ ...base, ...urlReferences(4) }, { model }).body)).toContain("input_image_4");
      const error = inputError(() => validate({ ...base, ...urlReferences(5) }, { model }));
      expect(error.field).toBe("input_image_5");
      expect(error.reason).toMatch(/at most 4 reference images/);
    }
  });

  it("D: max, pro and flex take at most 8 reference images through the API", () => {
    for (const model of ["gen-2-max", "gen-2-pro", "gen-2-pro-preview", "gen-2-flex"]) {
      const small = { prompt: "x", width: 512, height: 512 };
      expect(validate({ ...small, ...urlReferences(8) }, { model }).facts.references).toHaveLength(8);
      expect(inputError(() => validate({ ...small, ...urlReferences(9) }, { model })).field).toBe("input_image_9");
    }
  });

  it("D: gen-ctx-max (not listed) takes at most 4 reference images, the smallest published limit", () => {
    expect(validate({ ...base, ...urlReferences(4) }, { model: "gen-ctx-max" }).facts.references).toHaveLength(4);
    expect(inputError(() => validate({ ...base, ...urlReferences(5) }, { model: "gen-ctx-max" })).reason).toMatch(/at most 4/);
  });

  it("D: the limit applies to images too, naming the first one over it", () => {
    const images = Array.from({ length: 5 }, (_, index) => `https://images.example/${index}.png`);
    expect(inputError(() => validate(base, { model: "gen-2-compact-4b", images })).field).toBe("images[4]");
  });
});

describe("D: the pro 9 MP input plus output budget", () => {
  const oneMp = { prompt: "x", width: 1024, height: 1024 };
  const twoMp = { prompt: "x", width: 2048, height: 1024 };

  it("D: pro with a 1 MP output allows 8 references", () => {
    expect(validate({ ...oneMp, ...urlReferences(8) }).facts.references).toHaveLength(8);
  });

  it("D: pro with a 2 MP output allows 7 references", () => {
    expect(validate({ ...twoMp, ...urlReferences(7) }).facts.references).toHaveLength(7);
    const error = inputError(() => validate({ ...twoMp, ...urlReferences(8) }));
    expect(error.field).toBe("input_image_8");
    expect(error.reason).toMatch(/9 MP input plus output budget: a 2 MP output leaves room for 7 references/);
    expect(error.allowed).toMatch(/at most 7 references/);
  });

  it("D: pro budget: fewer references as the output grows (a partial megapixel takes a whole reference's room)", () => {
    // 1500x1000 is 1.43 MP: 1.43 + 8 > 9, so 7 references fit.
    const between = { prompt: "x", width: 1504, height: 1008 };
    expect(validate({ ...between, ...urlReferences(7) }).facts.references).toHaveLength(7);
    expect(inputError(() => validate({ ...between, ...urlReferences(8) })).field).toBe("input_image_8");
    // 4 MP (and anything larger, which D reduces to 4 MP) leaves room for 5.
    expect(validate({ prompt: "x", width: 2048, height: 2048, ...urlReferences(5) }).facts.references).toHaveLength(5);
    expect(inputError(() => validate({ prompt: "x", width: 4096, height: 4096, ...urlReferences(6) })).reason).toMatch(/room for 5 references/);
  });

  it("D: the pro budget applies to gen-2-pro-preview as well, and not to other tiers", () => {
    expect(inputError(() => validate({ ...twoMp, ...urlReferences(8) }, { model: "gen-2-pro-preview" })).field).toBe("input_image_8");
    expect(validate({ ...twoMp, ...urlReferences(8) }, { model: "gen-2-max" }).facts.references).toHaveLength(8);
    expect(validate({ ...twoMp, ...urlReferences(8) }, { model: "gen-2-flex" }).facts.references).toHaveLength(8);
  });

  it("D: a single reference up to 4 MP keeps its resolution and fits the budget at any output size", () => {
    const validated = validate({ prompt: "x", width: 2048, height: 2048 }, { images: [{ fileName: "big.png", bytes: pngHeader(2048, 2048) }] });
    expect(validated.facts.references).toMatchObject([{ width: 2048, height: 2048, pixels: 2048 * 2048 }]);
    expect(validated.warnings).toEqual([]);
  });

  it("D: a single reference of unknown size is assumed 1 MP, and the warning says so", () => {
    const validated = validate(oneMp, { images: [URL_A] });
    expect(validated.warnings).toEqual([
      "the size of images[0] is not known to mediagate (a URL, or not a PNG or JPEG): assumed 1 MP for the price and the pro budget",
    ]);
    expect(validated.facts.referenceSizeAssumption).toBe("assumed 1 MP for the price and the pro budget");
    expect(validate(oneMp, { images: [URL_A, URL_A] }).facts.referenceSizeAssumption).toBeNull();
  });

  it("D: a single reference above 4 MP is counted as 4 MP, with a warning", () => {
    const validated = validate(oneMp, { images: [{ fileName: "huge.jpg", bytes: jpegHeader(4096, 4096) }] });
    expect(validated.warnings.join("\n")).toMatch(/images\[0\] \(huge\.jpg\) is 16 MP: .* counted as 4 MP/);
  });
});

describe("D: reading reference sizes", () => {
  it("D: the size of a PNG or JPEG reference is read from its header", () => {
    expect(imageSizeOf(pngHeader(1536, 1024))).toEqual({ width: 1536, height: 1024 });
    expect(imageSizeOf(jpegHeader(800, 600))).toEqual({ width: 800, height: 600 });
    expect(imageSizeOf(renderPng(96, 64, "a real png", 1))).toEqual({ width: 96, height: 64 });
    expect(imageSizeOf(Buffer.from("BM: a BMP is not read"))).toBeNull();
  });

  it("D: the size of base64 image data is read, bare or as a data: URL; URLs are not fetched", () => {
    const base64 = jpegHeader(320, 240).toString("base64");
    expect(imageSizeOfText(base64)).toEqual({ width: 320, height: 240 });
    expect(imageSizeOfText(`data:image/jpeg;base64,${base64}`)).toEqual({ width: 320, height: 240 });
    expect(imageSizeOfText(URL_A)).toBeNull();
    expect(imageSizeOfText("not base64!")).toBeNull();
  });
});

describe("D: prompt length", () => {
  it("D: a prompt over 1,000 characters is sent as given with a warning that D publishes no prompt length limit", () => {
    const validated = validate({ ...base, prompt: "x".repeat(100_000) });
    expect(validated.body.prompt).toHaveLength(100_000);
    expect(validated.warnings).toContain(
      "prompt is 100,000 characters long; D publishes no prompt length limit, so it is sent as given and may be refused or cut short (mediagate warns above 1,000)",
    );
    expect(validate({ ...base, prompt: "x".repeat(1_000) }).warnings).toEqual([]);
  });
});

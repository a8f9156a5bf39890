import { describe, expect, it } from "vitest";
import { InputError, ProviderError } from "../../../src/core/errors.js";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { inputError, providerError } from "../../helpers/errors.js";
import { IMAGE_TO_VIDEO, IMAGE_URL, imageToVideo, startB, type BBed } from "./bed.js";

const MINUTE = 60_000;

const catalogReads = (bed: BBed) => bed.requests().filter((entry) => entry.method === "GET" && entry.url.startsWith("/b/catalog/apis"));

/** Serves `record` instead of the sandbox's record of `apiId` (a catalog B could publish). */
function serveRecord(bed: BBed, apiId: string, record: unknown): void {
  const path = new RegExp(`^/b/catalog/apis/${apiId.replace(/[.]/g, "\\.")}$`);
  bed.sandbox.injectFault({ provider: "b", method: "GET", path, fault: { kind: "status", status: 200, body: record } });
}

describe("B catalog", () => {
  it("B: the catalog record is read from /catalog/apis/{api_id}?expand=inputs, slashes literal, without a key", async () => {
    const bed = await startB();
    await bed.validated({ model: "kestrel/motion/v3", operation: "video-to-video", input: { video: "https://videos.example/a.mp4", prompt: "slow motion" } });
    const [read] = catalogReads(bed);
    expect(read).toMatchObject({ method: "GET", url: "/b/catalog/apis/kestrel/motion/v3/video-to-video?expand=inputs", statusCode: 200 });
    // spec B Endpoints: catalog reads need no key, so none is sent.
    expect(read!.headers["x-api-key"]).toBeUndefined();
    expect(read!.headers.authorization).toBeUndefined();
  });

  it("B: the catalog record is cached for its TTL (default 10 minutes), then read again", async () => {
    const bed = await startB();
    const request: JobRequest = { provider: "b", ...imageToVideo() };
    await bed.adapter.prefetch!(request, bed.context);
    await bed.adapter.prefetch!(request, bed.context);
    expect(catalogReads(bed)).toHaveLength(1);
    bed.advance(10 * MINUTE - 1_000);
    await bed.adapter.prefetch!(request, bed.context);
    expect(catalogReads(bed)).toHaveLength(1);
    bed.advance(2_000);
    await bed.adapter.prefetch!(request, bed.context);
    expect(catalogReads(bed)).toHaveLength(2);
  });

  it("B: catalogTtlMs sets the cache lifetime; concurrent prefetches of one operation share one read", async () => {
    const bed = await startB({}, { catalogTtlMs: 1_000 });
    const request: JobRequest = { provider: "b", ...imageToVideo() };
    await Promise.all([1, 2, 3].map(() => bed.adapter.prefetch!(request, bed.context)));
    expect(catalogReads(bed)).toHaveLength(1);
    bed.advance(1_001);
    await bed.adapter.prefetch!(request, bed.context);
    expect(catalogReads(bed)).toHaveLength(2);
  });

  it("B: validate before prefetch fails: catalog record not loaded", async () => {
    const bed = await startB();
    const error = inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo() }));
    expect(error.field).toBe("operation");
    expect(error.reason).toContain("catalog record not loaded");
    expect(bed.requests()).toHaveLength(0);
  });

  it("B: models() lists the api_ids the adapter has read", async () => {
    const bed = await startB();
    expect(bed.adapter.models()).toEqual([]);
    await bed.validated(imageToVideo());
    expect(bed.adapter.models()).toEqual([IMAGE_TO_VIDEO]);
  });
});

describe("B operations: chosen by function segment, never inferred from names", () => {
  it("B: model plus operation (the function segment) and the full api_id name the same operation", async () => {
    const bed = await startB();
    const split = await bed.validated(imageToVideo());
    const whole = await bed.validated({ model: IMAGE_TO_VIDEO, input: imageToVideo().input });
    for (const validated of [split, whole]) {
      expect(validated).toMatchObject({ provider: "b", model: "vendorx/video-2.5", operation: "image-to-video" });
      expect(validated.facts).toMatchObject({ apiId: IMAGE_TO_VIDEO });
    }
  });

  it("B: a model whose identifier holds a slash keeps it: the function is the last segment", async () => {
    const bed = await startB();
    const validated = await bed.validated({ model: "sonance/chorus/v2/text-to-audio", input: { text: "hello", voice: "alto" } });
    expect(validated).toMatchObject({ model: "sonance/chorus/v2", operation: "text-to-audio" });
  });

  it("B: an operation not in the catalog is refused, naming the model's operations (lumora/text-to-video-turbo offers image-to-video only)", async () => {
    const bed = await startB();
    const request: JobRequest = { provider: "b", model: "lumora/text-to-video-turbo", operation: "text-to-video", input: { prompt: "a fox", resolution: "720p", duration_s: 4 } };
    await bed.adapter.prefetch!(request, bed.context);
    const error = inputError(() => bed.adapter.validate(request));
    expect(error.field).toBe("operation");
    expect(error.reason).toContain("not an operation in B's catalog");
    expect(error.allowed).toBe("lumora/text-to-video-turbo/image-to-video");
  });

  it("B: a model without a function is refused, naming its operations", async () => {
    const bed = await startB();
    const request: JobRequest = { provider: "b", model: "vendorx/video-2.5", input: {} };
    await bed.adapter.prefetch!(request, bed.context);
    const error = inputError(() => bed.adapter.validate(request));
    expect(error.field).toBe("model");
    expect(error.allowed?.split(", ").sort()).toEqual([
      "vendorx/video-2.5/image-to-video",
      "vendorx/video-2.5/keyframes-to-video",
      "vendorx/video-2.5/text-to-video",
    ]);
  });

  it("B: an operation listed but unavailable is refused", async () => {
    const bed = await startB();
    const request: JobRequest = { provider: "b", model: "lumora/ray-1.6", operation: "text-to-video", input: { prompt: "a fox", resolution: "720p", duration_s: 5 } };
    await bed.adapter.prefetch!(request, bed.context);
    const error = inputError(() => bed.adapter.validate(request));
    expect(error.field).toBe("operation");
    expect(error.reason).toContain("not available");
  });

  it("B: an availability the spec does not show is sent with a warning, the raw value kept", async () => {
    const bed = await startB();
    const record = await bed.adapter.account(bed.http).catalogRecord(IMAGE_TO_VIDEO);
    serveRecord(bed, IMAGE_TO_VIDEO, { ...record!.raw, availability: "beta" });
    const validated = await bed.validated(imageToVideo());
    expect(validated.facts).toMatchObject({ availability: "beta" });
    expect(validated.warnings.join(" ")).toContain('"beta"');
  });

  it("B: caps come from the record, not the name (kestrel/clip-1080p has no 1080p)", async () => {
    const bed = await startB();
    const request: JobRequest = { provider: "b", model: "kestrel/clip-1080p", operation: "text-to-video", input: { prompt: "a fox", resolution: "1080p", duration_s: 5 } };
    await bed.adapter.prefetch!(request, bed.context);
    const error = inputError(() => bed.adapter.validate(request));
    expect(error.field).toBe("resolution");
    expect(error.allowed).toBe('"480p", "720p"');
  });

  it("B: malformed model or operation names are refused without a request", async () => {
    const bed = await startB();
    for (const request of [
      { model: "vendorx//image-to-video" },
      { model: "vendorx/../image-to-video" },
      { model: "vendorx/video-2.5", operation: "image/to-video" },
      { model: "" },
    ]) {
      const full: JobRequest = { provider: "b", input: {}, ...request };
      await bed.adapter.prefetch!(full, bed.context);
      expect(() => bed.adapter.validate(full)).toThrow(InputError);
    }
    expect(bed.requests()).toHaveLength(0);
  });

  it("B: a catalog record without an input_schema is an invalid answer", async () => {
    const bed = await startB();
    serveRecord(bed, IMAGE_TO_VIDEO, { api_id: IMAGE_TO_VIDEO, availability: "available" });
    const error = await providerError(() => bed.validated(imageToVideo()));
    expect(error.code).toBe("invalid_response");
  });
});

describe("B validation against input_schema", () => {
  it("B: the validated body is exactly the input, in the JSON to send", async () => {
    const bed = await startB();
    const input = { image: IMAGE_URL, resolution: "720p", duration_s: 10, prompt: "a lighthouse", seed: 7 };
    const validated = await bed.validated({ ...imageToVideo(), input });
    expect(validated.body).toEqual(input);
    expect(validated.body).not.toBe(input);
    expect(validated.warnings).toEqual([]);
  });

  it("B: a validation error names the JSON path that failed, with the allowed values", async () => {
    const bed = await startB();
    await bed.validated(imageToVideo());
    const wrong = inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo({ duration_s: 7 }) }));
    expect(wrong).toMatchObject({ field: "duration_s", allowed: "5, 10" });
    const missing = inputError(() => bed.adapter.validate({ provider: "b", model: IMAGE_TO_VIDEO, input: { resolution: "720p", duration_s: 5 } }));
    expect(missing).toMatchObject({ field: "image", reason: "is required" });
    const unknown = inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo({ fps: 30 }) }));
    expect(unknown).toMatchObject({ field: "fps", reason: "is not a field of this operation" });
    const notUri = inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo({ image: "lighthouse.png" }) }));
    expect(notUri.field).toBe("image");
    expect(notUri.reason).toContain("uri");
  });

  it("B: a prompt longer than the catalog record's maxLength is refused naming prompt, and nothing is sent", async () => {
    const bed = await startB();
    await bed.validated(imageToVideo());
    // The sandbox's record of this operation gives prompt maxLength 2000 (spec B: caps are in each catalog record).
    const error = inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo({ prompt: "x".repeat(2_001) }) }));
    expect(error.field).toBe("prompt");
    expect(error.reason).toMatch(/must NOT have more than 2000 characters/);
    expect(bed.requests().filter((entry) => entry.method === "POST")).toHaveLength(0);
    expect((await bed.validated(imageToVideo({ prompt: "x".repeat(2_000) }))).warnings).toEqual([]);
  });

  it("B: a text field the catalog record gives no maxLength is sent with the long-prompt warning", async () => {
    const bed = await startB();
    serveRecord(bed, "vendorx/sfx/text-to-audio", {
      api_id: "vendorx/sfx/text-to-audio",
      availability: "available",
      input_schema: { type: "object", properties: { prompt: { type: "string" }, source: { type: "string", format: "uri" } }, required: ["prompt"], additionalProperties: false },
    });
    const validated = await bed.validated({ model: "vendorx/sfx/text-to-audio", input: { prompt: "x".repeat(1_001), source: `https://a.example/${"p".repeat(1_200)}` } });
    expect(validated.warnings).toEqual([
      "prompt is 1,001 characters long; B's catalog record of vendorx/sfx/text-to-audio gives prompt no maxLength, so it is sent as given and may be refused or cut short (mediagate warns above 1,000)",
    ]);
  });

  it("B: every schema problem is reported at once (allErrors)", async () => {
    const bed = await startB();
    await bed.validated(imageToVideo());
    const error = inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo({ resolution: "4k", duration_s: "5" }) }));
    expect(error.field).toBe("resolution");
    expect(error.reason).toContain("also duration_s");
  });

  it("B: a nested failure is named by its path (keyframes[1].url)", async () => {
    const bed = await startB();
    serveRecord(bed, IMAGE_TO_VIDEO, {
      api_id: IMAGE_TO_VIDEO,
      availability: "available",
      input_schema: {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: {
          keyframes: { type: "array", prefixItems: [{ type: "object" }], items: { type: "object", properties: { url: { type: "string", format: "uri" } }, required: ["url"] } },
          when: { type: "string", format: "date-time" },
        },
        required: ["keyframes"],
        additionalProperties: false,
      },
    });
    const request: JobRequest = { provider: "b", model: IMAGE_TO_VIDEO, input: { keyframes: [{}, { url: "not a uri" }] } };
    await bed.adapter.prefetch!(request, bed.context);
    expect(inputError(() => bed.adapter.validate(request)).field).toBe("keyframes[1].url");
    const valid = bed.adapter.validate({ ...request, input: { keyframes: [{}, { url: IMAGE_URL }], when: "whenever" } });
    // Formats mediagate does not check are said to be unchecked, not silently passed.
    expect(valid.warnings.join(" ")).toContain("date-time");
  });

  it("B: webhook_url is never taken from input", async () => {
    const bed = await startB();
    await bed.validated(imageToVideo());
    expect(inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo({ webhook_url: "https://hooks.example/b" }) })).field).toBe("webhook_url");
  });

  it("B: images map onto the record's image field, as http(s) URLs only", async () => {
    const bed = await startB();
    const { image: _image, ...input } = imageToVideo().input;
    const validated = await bed.validated({ ...imageToVideo(), input, images: [IMAGE_URL] });
    expect(validated.body.image).toBe(IMAGE_URL);
    const file = inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo(), input, images: [{ fileName: "a.png", bytes: Buffer.from("png") }] }));
    expect(file.field).toBe("images[0]");
    const both = inputError(() => bed.adapter.validate({ provider: "b", ...imageToVideo(), images: [IMAGE_URL] }));
    expect(both.field).toBe("images");
    const noImageField = { provider: "b" as const, model: "vendorx/sfx/text-to-audio", input: { prompt: "rain", duration_s: 3 }, images: [IMAGE_URL] };
    await bed.adapter.prefetch!(noImageField, bed.context);
    expect(inputError(() => bed.adapter.validate(noImageField)).field).toBe("images");
  });

  it("B: the failing body is never sent", async () => {
    const bed = await startB();
    await bed.validated(imageToVideo());
    expect(() => bed.adapter.validate({ provider: "b", ...imageToVideo({ duration_s: 7 }) })).toThrow(InputError);
    expect(bed.requests().filter((entry) => entry.method === "POST")).toHaveLength(0);
    expect(bed.emulator.jobs).toHaveLength(0);
  });

  it("B: a provider error during prefetch is not an input error", async () => {
    const bed = await startB();
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 401, body: { error: { code: "x" } } } });
    const error = await providerError(() => bed.validated(imageToVideo()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.detail.httpStatus).toBe(401);
  });
});

import { describe, expect, it } from "vitest";
import type { CommonRequest, Unhonoured } from "../../../src/core/common-request.js";
import type { JobRequest } from "../../../src/providers/adapter.js";
import type { BCachedOperation, BCatalogRecord } from "../../../src/providers/b/catalog.js";
import { bFromCommon } from "../../../src/providers/b/common.js";
import { compileInputSchema, validateBRequest } from "../../../src/providers/b/index.js";
import { findOperation } from "../../../src/sandbox/b/index.js";
import { expandedRecord } from "../../../src/sandbox/b/catalog-record.js";
import { inputError } from "../../helpers/errors.js";
import { IMAGE_URL, startB } from "./bed.js";

/**
 * bFromCommon is pure over the catalog record prefetch read. The records are
 * the sandbox's (B's own published operations, with their input_schemas) or
 * schemas B could publish, each exercising one rule; what would be sent is
 * the mapped input after B's own validate.
 */
const IMAGE_TO_VIDEO = "vendorx/video-2.5/image-to-video";
const TEXT_TO_VIDEO = "vendorx/video-2.5/text-to-video";
const KEYFRAMES = "vendorx/video-2.5/keyframes-to-video";
const LAST_URL = "https://images.example/lighthouse-at-night.png";
const READ_AT = 1_750_000_000_000;

/** The sandbox's catalog record of an operation, as `GET /catalog/apis/{api_id}?expand=inputs` answers it. */
function sandboxRecord(apiId: string): BCatalogRecord {
  const operation = findOperation(apiId);
  if (!operation) throw new Error(`no sandbox operation ${apiId}`);
  const raw = expandedRecord(operation);
  const inputSchema = raw.input_schema as Record<string, unknown>;
  return { apiId, availability: { kind: operation.availability, raw: operation.availability }, inputSchema, check: compileInputSchema(inputSchema), raw };
}

/** A record B could publish: only `input_schema` (and what `extra` adds) in it. */
function record(apiId: string, inputSchema: Record<string, unknown>, extra: Record<string, unknown> = {}): BCatalogRecord {
  return { apiId, availability: { kind: "available", raw: "available" }, inputSchema, check: compileInputSchema(inputSchema), raw: { api_id: apiId, input_schema: inputSchema, ...extra } };
}

function catalog(...records: BCatalogRecord[]): (apiId: string) => BCachedOperation | undefined {
  return (apiId) => {
    const found = records.find((each) => each.apiId === apiId);
    return found ? { kind: "record", record: found, fetchedAt: READ_AT } : undefined;
  };
}

const video = (extra: Partial<CommonRequest> = {}): CommonRequest => ({ task: "video", prompt: "waves against a lighthouse", ...extra });

/** Maps for `apiId`, then (as the caller does) merges provider_options.b over the input and validates as B would: what would be sent. */
function sent(request: CommonRequest, apiId: string, found: BCatalogRecord = sandboxRecord(apiId)) {
  const cachedOf = catalog(found);
  const mapping = bFromCommon(request, { model: apiId }, cachedOf);
  if (!mapping.ok) return mapping;
  const merged: JobRequest = { ...mapping.request, input: { ...mapping.request.input, ...request.provider_options?.b } };
  const validated = validateBRequest(merged, cachedOf);
  return { ...mapping, body: validated.body };
}

function unhonoured(result: ReturnType<typeof sent>): Unhonoured[] {
  if (result.ok) throw new Error(`expected unhonoured fields, got ${JSON.stringify(result)}`);
  return result.unhonoured;
}

/** The spec's image-to-video request, every field it takes. */
const imageToVideo = (extra: Partial<CommonRequest> = {}) => video({ first_frame: IMAGE_URL, resolution: "1080p", duration_s: 5, ...extra });

describe("B: the common request on the spec's image-to-video operation (resolution string, duration_s integer, image URL)", () => {
  it("B common: first_frame fills image (the picture an image-to-video operation starts from); prompt, resolution, duration_s and seed keep their names", () => {
    expect(sent(imageToVideo({ seed: 7 }), IMAGE_TO_VIDEO)).toEqual({
      ok: true,
      warnings: [],
      request: { provider: "b", model: IMAGE_TO_VIDEO, input: { prompt: "waves against a lighthouse", resolution: "1080p", duration_s: 5, seed: 7, image: IMAGE_URL } },
      body: { prompt: "waves against a lighthouse", resolution: "1080p", duration_s: 5, seed: 7, image: IMAGE_URL },
    });
  });

  it("B common: a first frame alone (no prompt) is a request the operation honours, since its prompt is optional", () => {
    expect(sent(imageToVideo({ prompt: undefined }), IMAGE_TO_VIDEO)).toMatchObject({ ok: true, body: { image: IMAGE_URL, resolution: "1080p", duration_s: 5 } });
  });

  it("B common: the target may be given as model plus operation; the mapped request keeps that form", () => {
    const mapping = bFromCommon(imageToVideo(), { model: "vendorx/video-2.5", operation: "image-to-video" }, catalog(sandboxRecord(IMAGE_TO_VIDEO)));
    expect(mapping).toMatchObject({ ok: true, request: { provider: "b", model: "vendorx/video-2.5", operation: "image-to-video" } });
  });

  it("B common: duration_s 5.0 is 5 (JSON has one number): sent as is, with no warning", () => {
    expect(sent(imageToVideo({ duration_s: 5.0 }), IMAGE_TO_VIDEO)).toMatchObject({ ok: true, warnings: [], body: { duration_s: 5 } });
  });

  it("B common: a duration within 0.05 s of a whole second goes to an integer duration_s rounded, and the warning names the value sent", () => {
    expect(sent(imageToVideo({ duration_s: 121 / 24 }), IMAGE_TO_VIDEO)).toMatchObject({
      ok: true,
      body: { duration_s: 5 },
      warnings: [`duration_s ${121 / 24} sent as 5 (${IMAGE_TO_VIDEO} takes whole seconds)`],
    });
    expect(sent(imageToVideo({ duration_s: 9.96 }), IMAGE_TO_VIDEO)).toMatchObject({ ok: true, body: { duration_s: 10 }, warnings: [`duration_s 9.96 sent as 10 (${IMAGE_TO_VIDEO} takes whole seconds)`] });
  });

  it("B common: a duration further than 0.05 s from a whole second is not honoured by an integer duration_s", () => {
    expect(unhonoured(sent(imageToVideo({ duration_s: 5.5 }), IMAGE_TO_VIDEO))).toEqual([
      { field: "duration_s", reason: `${IMAGE_TO_VIDEO}'s input_schema takes duration_s in whole seconds (integer), and 5.5 is more than 0.05 s from one` },
    ]);
  });

  it("B common: a duration not in the operation's enum is not honoured, and the reason names the allowed values", () => {
    expect(unhonoured(sent(imageToVideo({ duration_s: 7 }), IMAGE_TO_VIDEO))).toEqual([
      { field: "duration_s", reason: `${IMAGE_TO_VIDEO}'s input_schema refuses 7: duration_s is not one of the allowed values (allowed: 5, 10)` },
    ]);
  });

  it("B common: a resolution not in the operation's enum is not honoured (480p on Video 2.5)", () => {
    expect(unhonoured(sent(imageToVideo({ resolution: "480p" }), IMAGE_TO_VIDEO))).toEqual([
      { field: "resolution", reason: `${IMAGE_TO_VIDEO}'s input_schema refuses 480p: resolution is not one of the allowed values (allowed: "720p", "1080p")` },
    ]);
  });

  it("B common: a seed above the schema's maximum is not honoured", () => {
    expect(unhonoured(sent(imageToVideo({ seed: 2 ** 40 }), IMAGE_TO_VIDEO))).toEqual([
      { field: "seed", reason: `${IMAGE_TO_VIDEO}'s input_schema refuses ${2 ** 40}: seed must be <= 4294967295` },
    ]);
  });

  it("B common: a local file cannot be the first frame (B takes media as URLs and shows no upload)", () => {
    const file = { fileName: "lighthouse.png", bytes: Buffer.from("not read") };
    expect(unhonoured(sent(imageToVideo({ first_frame: file }), IMAGE_TO_VIDEO))).toEqual([
      { field: "first_frame", reason: "file lighthouse.png: B takes media as URLs and shows no upload, so a local file cannot be sent" },
    ]);
  });

  it("B common: a first frame that is not an http(s) URL is not honoured", () => {
    expect(unhonoured(sent(imageToVideo({ first_frame: "ftp://images.example/a.png" }), IMAGE_TO_VIDEO))).toEqual([
      { field: "first_frame", reason: "ftp://images.example/a.png is not an http(s) URL (B takes media as URLs)" },
    ]);
  });

  it("B common: aspect_ratio, size, generate_audio, last_frame and reference_images have no property here, and each absence is named", () => {
    const request = imageToVideo({ aspect_ratio: "16:9", generate_audio: true, last_frame: LAST_URL, reference_images: [LAST_URL] });
    expect(unhonoured(sent(request, IMAGE_TO_VIDEO))).toEqual([
      { field: "aspect_ratio", reason: `${IMAGE_TO_VIDEO}'s input_schema has no "aspect_ratio" property` },
      { field: "generate_audio", reason: `${IMAGE_TO_VIDEO}'s input_schema has no "generate_audio" property` },
      { field: "last_frame", reason: `${IMAGE_TO_VIDEO}'s input_schema has no "last_frame" property` },
      { field: "reference_images", reason: `${IMAGE_TO_VIDEO}'s input_schema has no "reference_images" property` },
    ]);
    expect(unhonoured(sent(imageToVideo({ resolution: undefined, size: "1280x720" }), IMAGE_TO_VIDEO))[0]).toEqual({
      field: "size",
      reason: `${IMAGE_TO_VIDEO}'s input_schema has no "size" property, nor "width" and "height"`,
    });
  });

  it("B common: a required property left empty is named under the common field that fills it, or provider_options.b", () => {
    expect(unhonoured(sent(video(), IMAGE_TO_VIDEO))).toEqual([
      { field: "duration_s", reason: `${IMAGE_TO_VIDEO} requires "duration_s" (one of 5, 10): give duration_s, or provider_options.b.duration_s` },
      { field: "resolution", reason: `${IMAGE_TO_VIDEO} requires "resolution" (one of "720p", "1080p"): give resolution, or provider_options.b.resolution` },
      { field: "first_frame", reason: `${IMAGE_TO_VIDEO} requires "image" (string (uri)): give first_frame, or provider_options.b.image` },
    ]);
  });

  it("B common: a required property given in provider_options.b makes the target eligible; the caller merges it before validate", () => {
    const result = sent(video({ first_frame: IMAGE_URL, provider_options: { b: { resolution: "720p", duration_s: 10 } } }), IMAGE_TO_VIDEO);
    expect(result).toMatchObject({ ok: true, request: { input: { prompt: "waves against a lighthouse", image: IMAGE_URL } } });
    expect(result).toMatchObject({ body: { prompt: "waves against a lighthouse", image: IMAGE_URL, resolution: "720p", duration_s: 10 } });
  });
});

describe("B: the common request on other catalog operations", () => {
  it("B common: on text-to-video, aspect_ratio in the enum keeps its name; a ratio outside it is not honoured, naming the allowed values", () => {
    expect(sent(video({ aspect_ratio: "9:16", resolution: "720p", duration_s: 10, seed: 3 }), TEXT_TO_VIDEO)).toEqual({
      ok: true,
      warnings: [],
      request: { provider: "b", model: TEXT_TO_VIDEO, input: { prompt: "waves against a lighthouse", aspect_ratio: "9:16", seed: 3, duration_s: 10, resolution: "720p" } },
      body: { prompt: "waves against a lighthouse", aspect_ratio: "9:16", seed: 3, duration_s: 10, resolution: "720p" },
    });
    expect(unhonoured(sent(video({ aspect_ratio: "4:3", resolution: "720p", duration_s: 5 }), TEXT_TO_VIDEO))).toEqual([
      { field: "aspect_ratio", reason: `${TEXT_TO_VIDEO}'s input_schema refuses 4:3: aspect_ratio is not one of the allowed values (allowed: "16:9", "9:16", "1:1")` },
    ]);
  });

  it("B common: a ratio written otherwise but exactly equal to an enum entry is sent as the entry, with a warning", () => {
    expect(sent(video({ aspect_ratio: "32:18", resolution: "720p", duration_s: 5 }), TEXT_TO_VIDEO)).toMatchObject({
      ok: true,
      body: { aspect_ratio: "16:9" },
      warnings: [`aspect_ratio 32:18 sent as 16:9 (the same ratio, as ${TEXT_TO_VIDEO}'s input_schema writes it)`],
    });
  });

  it("B common: a first frame is not honoured by text-to-video (no first_frame, and image is read as one only on image-to-video)", () => {
    expect(unhonoured(sent(video({ first_frame: IMAGE_URL, resolution: "720p", duration_s: 5 }), TEXT_TO_VIDEO))).toEqual([
      { field: "first_frame", reason: `${TEXT_TO_VIDEO}'s input_schema has no "first_frame" property (an "image" is read as the first frame only on an image-to-video operation)` },
    ]);
  });

  it("B common: keyframes-to-video takes first_frame and last_frame by name", () => {
    expect(sent(video({ first_frame: IMAGE_URL, last_frame: LAST_URL, resolution: "1080p", duration_s: 10 }), KEYFRAMES)).toMatchObject({
      ok: true,
      warnings: [],
      body: { prompt: "waves against a lighthouse", first_frame: IMAGE_URL, last_frame: LAST_URL, resolution: "1080p", duration_s: 10 },
    });
  });

  it("B common: a resolution the operation lacks is not honoured, whatever its name says (kestrel/clip-1080p has no 1080p)", () => {
    const apiId = "kestrel/clip-1080p/text-to-video";
    expect(unhonoured(sent(video({ resolution: "1080p", duration_s: 5 }), apiId))).toEqual([
      { field: "resolution", reason: `${apiId}'s input_schema refuses 1080p: resolution is not one of the allowed values (allowed: "480p", "720p")` },
    ]);
    expect(sent(video({ resolution: "480p", duration_s: 5 }), apiId)).toMatchObject({ ok: true, body: { resolution: "480p", duration_s: 5 } });
  });

  it("B common: image is not read as a first frame off image-to-video (Additions' image is what is added to a video)", () => {
    const apiId = "vendorx/additions/video-to-video";
    expect(unhonoured(sent(video({ first_frame: IMAGE_URL }), apiId))).toEqual([
      { field: "first_frame", reason: `${apiId}'s input_schema has no "first_frame" property (an "image" is read as the first frame only on an image-to-video operation)` },
      { field: "provider_options.b.video", reason: `${apiId} requires "video" (string (uri)), which no common field fills: give it in provider_options.b.video` },
      { field: "provider_options.b.image", reason: `${apiId} requires "image" (string (uri)), which no common field fills: give it in provider_options.b.image` },
    ]);
  });

  it("B common: a native property no common field fills (Effects' effect) is named with its values; given in provider_options.b, the target is eligible", () => {
    const apiId = "vendorx/effects/image-to-video";
    expect(unhonoured(sent(video({ first_frame: IMAGE_URL }), apiId))).toEqual([
      { field: "provider_options.b.effect", reason: `${apiId} requires "effect" (one of "inflate", "melt", "explode", "squish", "crush", "cake-ify"), which no common field fills: give it in provider_options.b.effect` },
    ]);
    expect(sent(video({ first_frame: IMAGE_URL, provider_options: { b: { effect: "melt" } } }), apiId)).toMatchObject({
      ok: true,
      body: { prompt: "waves against a lighthouse", image: IMAGE_URL, effect: "melt" },
    });
  });

  it("B common: a prompt longer than the property's maxLength is not honoured (Effects takes 500 characters)", () => {
    const apiId = "vendorx/effects/image-to-video";
    const [first] = unhonoured(sent(video({ prompt: "a".repeat(501), first_frame: IMAGE_URL, provider_options: { b: { effect: "melt" } } }), apiId));
    expect(first).toEqual({ field: "prompt", reason: `${apiId}'s input_schema refuses ${"a".repeat(60)}…: prompt must NOT have more than 500 characters` });
  });

  it("B common: an operation that makes audio is not a video target, though its fields match (sfx's prompt and duration_s)", () => {
    expect(unhonoured(sent(video({ duration_s: 5 }), "vendorx/sfx/text-to-audio"))).toEqual([
      { field: "task", reason: "vendorx/sfx/text-to-audio makes audio (its catalog record's output_media_type), not video" },
    ]);
    expect(unhonoured(sent(video({ duration_s: 5 }), "sonance/music-1/text-to-audio"))[0]!.field).toBe("task");
  });

  it("B common: without output_media_type in the record, the function segment says what an operation makes; neither: not a video target", () => {
    const schema = { type: "object", properties: { prompt: { type: "string" } }, additionalProperties: false };
    expect(sent(video(), "acme/clip/text-to-video", record("acme/clip/text-to-video", schema))).toMatchObject({ ok: true, body: { prompt: "waves against a lighthouse" } });
    expect(unhonoured(sent(video(), "acme/clip/text-to-audio", record("acme/clip/text-to-audio", schema)))).toEqual([
      { field: "task", reason: "acme/clip/text-to-audio makes audio (its function text-to-audio), not video" },
    ]);
    expect(unhonoured(sent(video(), "acme/clip/upscale", record("acme/clip/upscale", schema)))).toEqual([
      { field: "task", reason: "acme/clip/upscale does not say what it makes (no output_media_type in its catalog record, and its function is not …-to-video), not video" },
    ]);
  });

  it("B common: an image request is not honoured (B's operations produce video or audio)", () => {
    expect(sent({ task: "image", prompt: "a fox", n: 2, images: [IMAGE_URL] }, TEXT_TO_VIDEO)).toEqual({
      ok: false,
      unhonoured: [{ field: "task", reason: "B's catalog operations produce video or audio (spec B), not images" }],
    });
  });

  it("B common: an operation B does not list, or lists as unavailable, is not a target", () => {
    const missing = (apiId: string): BCachedOperation => ({ kind: "missing", apiId, alternatives: [TEXT_TO_VIDEO], fetchedAt: READ_AT });
    expect(bFromCommon(video(), { model: "vendorx/video-2.5/upscale" }, missing)).toEqual({
      ok: false,
      unhonoured: [{ field: "model", reason: `"vendorx/video-2.5/upscale" is not an operation in B's catalog; B lists ${TEXT_TO_VIDEO}` }],
    });
    expect(unhonoured(sent(video({ resolution: "720p", duration_s: 5 }), "lumora/ray-1.6/text-to-video"))).toEqual([
      { field: "model", reason: `lumora/ray-1.6/text-to-video is listed in B's catalog but not available now ("unavailable")` },
    ]);
  });

  it("B common: before prefetch there is no record, and fromCommon throws (the caller's mistake) rather than call the target ineligible", () => {
    const error = inputError(() => bFromCommon(video(), { model: "vendorx/video-2.5", operation: "image-to-video" }, catalog()));
    expect(error).toMatchObject({ field: "operation", reason: "catalog record not loaded for vendorx/video-2.5/image-to-video: prefetch must run before fromCommon" });
  });
});

/**
 * A schema B could publish for an operation taking every common video field,
 * written as generators of JSON Schema write it: a local $ref, nullable types,
 * a number duration, an array of URLs.
 */
const EVERY_FIELD = "acme/omni-1/image-to-video";
const EVERY_FIELD_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    prompt: { type: "string", maxLength: 2000 },
    width: { type: "integer", minimum: 256, maximum: 1920 },
    height: { type: "integer", minimum: 256, maximum: 1920 },
    aspect_ratio: { anyOf: [{ $ref: "#/$defs/AspectRatio" }, { type: "null" }] },
    seed: { type: ["integer", "null"], minimum: 0 },
    duration_s: { type: "number", exclusiveMinimum: 0, maximum: 12 },
    generate_audio: { type: "boolean", default: false },
    first_frame: { type: "string", format: "uri" },
    last_frame: { type: "string", format: "uri" },
    reference_images: { type: "array", items: { type: "string", format: "uri" }, maxItems: 2 },
  },
  required: ["prompt"],
  additionalProperties: false,
  $defs: { AspectRatio: { type: "string", enum: ["16:9", "9:16", "1:1", "adaptive"] } },
};

describe("B: the common request against a schema with every common video field", () => {
  const omni = () => record(EVERY_FIELD, EVERY_FIELD_SCHEMA);

  it("B common: every common video field maps by name and type; size goes to width and height; a number duration_s is sent as given", () => {
    const request = video({
      size: "1280x720",
      aspect_ratio: "16:9",
      seed: 11,
      duration_s: 6.5,
      generate_audio: true,
      first_frame: IMAGE_URL,
      last_frame: LAST_URL,
      reference_images: ["https://images.example/keeper.png"],
    });
    expect(sent(request, EVERY_FIELD, omni())).toMatchObject({
      ok: true,
      warnings: [],
      body: {
        prompt: "waves against a lighthouse",
        width: 1280,
        height: 720,
        aspect_ratio: "16:9",
        seed: 11,
        duration_s: 6.5,
        generate_audio: true,
        first_frame: IMAGE_URL,
        last_frame: LAST_URL,
        reference_images: ["https://images.example/keeper.png"],
      },
    });
  });

  it("B common: aspect_ratio adaptive is sent where the enum lists adaptive, and not honoured where it does not", () => {
    expect(sent(video({ aspect_ratio: "adaptive", first_frame: IMAGE_URL }), EVERY_FIELD, omni())).toMatchObject({ ok: true, body: { aspect_ratio: "adaptive", first_frame: IMAGE_URL } });
    expect(unhonoured(sent(video({ aspect_ratio: "adaptive", first_frame: IMAGE_URL, resolution: "720p", duration_s: 5 }), TEXT_TO_VIDEO))).toContainEqual({
      field: "aspect_ratio",
      reason: `${TEXT_TO_VIDEO}'s aspect_ratio takes "16:9", "9:16", "1:1" and lists no "adaptive", so it cannot be told to follow the first frame's ratio`,
    });
  });

  it("B common: a size outside the schema's width or height range is not honoured", () => {
    expect(unhonoured(sent(video({ size: "3840x2160" }), EVERY_FIELD, omni()))).toEqual([
      { field: "size", reason: `${EVERY_FIELD}'s input_schema refuses 3840x2160: width must be <= 1920; height must be <= 1920` },
    ]);
  });

  it("B common: reference images beyond the schema's maxItems, or given as local files, are not honoured", () => {
    const urls = ["a", "b", "c"].map((name) => `https://images.example/${name}.png`);
    expect(unhonoured(sent(video({ reference_images: urls }), EVERY_FIELD, omni()))).toEqual([
      { field: "reference_images", reason: `${EVERY_FIELD}'s input_schema refuses ${JSON.stringify(urls).slice(0, 60)}…: reference_images must NOT have more than 2 items` },
    ]);
    const file = { fileName: "keeper.png", bytes: Buffer.from("not read") };
    expect(unhonoured(sent(video({ reference_images: [urls[0]!, file] }), EVERY_FIELD, omni()))).toEqual([
      { field: "reference_images", reason: "file keeper.png: B takes media as URLs and shows no upload, so a local file cannot be sent" },
    ]);
  });

  it("B common: a property of another type is not the same thing (duration_s as a string enum, seed as a string, generate_audio untyped)", () => {
    const apiId = "acme/strings/text-to-video";
    const schema = {
      type: "object",
      properties: { prompt: { type: "string" }, duration_s: { type: "string", enum: ["5", "10"] }, seed: { type: "string" }, generate_audio: {} },
      additionalProperties: false,
    };
    expect(unhonoured(sent(video({ duration_s: 5, seed: 1, generate_audio: true }), apiId, record(apiId, schema)))).toEqual([
      { field: "seed", reason: `${apiId}'s input_schema types it string, not integer: "seed" cannot be told to be the same thing` },
      { field: "duration_s", reason: `${apiId}'s input_schema types it string, not a number of seconds: "duration_s" cannot be told to be the same thing` },
      { field: "generate_audio", reason: `${apiId}'s input_schema gives it no type, not boolean: "generate_audio" cannot be told to be the same thing` },
    ]);
  });

  it("B common: on image-to-video, image is the first frame when its schema says URL by format or description, and not otherwise", () => {
    const apiId = "acme/animate/image-to-video";
    const described = { type: "object", properties: { image: { type: "string", description: "Start image URL (https)." } }, required: ["image"] };
    expect(sent(video({ prompt: undefined, first_frame: IMAGE_URL }), apiId, record(apiId, described))).toMatchObject({ ok: true, body: { image: IMAGE_URL } });
    const opaque = { type: "object", properties: { image: { type: "string", description: "Start image." } }, required: ["image"] };
    expect(unhonoured(sent(video({ prompt: undefined, first_frame: IMAGE_URL }), apiId, record(apiId, opaque)))).toEqual([
      { field: "first_frame", reason: `${apiId}'s input_schema has no "first_frame" property, and its "image" is not described as a URL string` },
      { field: "provider_options.b.image", reason: `${apiId} requires "image" (string), which no common field fills: give it in provider_options.b.image` },
    ]);
  });

  it("B common: every unhonoured field is named at once, in the request's field order, native requirements last", () => {
    const result = sent(video({ size: "1280x720", generate_audio: true, duration_s: 20, first_frame: "https://images.example/f.png" }), "vendorx/effects/image-to-video");
    expect(unhonoured(result).map((entry) => entry.field)).toEqual(["size", "duration_s", "generate_audio", "provider_options.b.effect"]);
  });
});

describe("B: the common request over the sandbox", () => {
  it("B common: prefetch, then fromCommon, validate and submit send the mapped body to B", async () => {
    const bed = await startB();
    const target = { model: "vendorx/video-2.5", operation: "image-to-video" };
    await bed.adapter.prefetch!({ provider: "b", ...target, input: {} }, bed.context);
    const mapping = bed.adapter.fromCommon!(imageToVideo({ seed: 42 }), target);
    if (!mapping.ok) throw new Error(JSON.stringify(mapping.unhonoured));
    const validated = bed.adapter.validate(mapping.request);
    const submitted = await bed.adapter.submit(validated, bed.jobContext());
    expect(bed.emulator.job(submitted.providerJobId)).toMatchObject({
      apiId: IMAGE_TO_VIDEO,
      body: { prompt: "waves against a lighthouse", image: IMAGE_URL, resolution: "1080p", duration_s: 5, seed: 42 },
    });
  });

  it("B common: the adapter's fromCommon before prefetch throws and reads nothing", async () => {
    const bed = await startB();
    expect(inputError(() => bed.adapter.fromCommon!(imageToVideo(), { model: IMAGE_TO_VIDEO })).reason).toContain("prefetch must run before fromCommon");
    expect(bed.requests()).toHaveLength(0);
  });
});

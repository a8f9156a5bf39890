import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import type { BAvailability, BCachedOperation, BCatalogRecord } from "../../../src/providers/b/catalog.js";
import { compileInputSchema, validateBRequest } from "../../../src/providers/b/index.js";
import { inputError } from "../../helpers/errors.js";

/**
 * validateBRequest is pure over the catalog record prefetch read; these tests
 * hand it records B could publish, so that each rule is checked against the
 * schema shape that exercises it.
 */
const API_ID = "vendorx/video-2.5/image-to-video";
const IMAGE_URL = "https://images.example/lighthouse.png";
const READ_AT = 1_750_000_000_000;

function record(inputSchema: Record<string, unknown>, availability: BAvailability = { kind: "available", raw: "available" }, apiId = API_ID): BCatalogRecord {
  return { apiId, availability, inputSchema, check: compileInputSchema(inputSchema), raw: { api_id: apiId, input_schema: inputSchema } };
}

function catalog(...records: BCatalogRecord[]): (apiId: string) => BCachedOperation | undefined {
  return (apiId) => {
    const found = records.find((each) => each.apiId === apiId);
    return found ? { kind: "record", record: found, fetchedAt: READ_AT } : undefined;
  };
}

const IMAGE_TO_VIDEO = {
  type: "object",
  properties: { image: { type: "string", format: "uri" }, prompt: { type: "string", maxLength: 2000 }, duration_s: { type: "integer", enum: [5, 10] }, seed: { type: "integer" } },
  required: ["image"],
  additionalProperties: false,
};
/** A record whose schema lets any field through (no additionalProperties: false) and holds no type for the whole input. */
const OPEN = { properties: { prompt: { type: "string", maxLength: 100 } } };

function request(input: unknown, extra: Partial<JobRequest> = {}): JobRequest {
  return { provider: "b", model: API_ID, input: input as Record<string, unknown>, ...extra };
}

function problems(schema: Record<string, unknown>, input: unknown) {
  return compileInputSchema(schema).problems(input);
}

describe("B: the request as a whole", () => {
  it("B: input must be an object, even when the record's schema would take anything", () => {
    for (const input of [null, [], Buffer.from("{}"), "prompt"]) {
      expect(inputError(() => validateBRequest(request(input), catalog(record(OPEN)))).field).toBe("input");
    }
  });

  it("B: webhook_url is never taken from input, even when the record's schema allows any field", () => {
    const error = inputError(() => validateBRequest(request({ prompt: "x", webhook_url: "https://hooks.example/b" }), catalog(record(OPEN))));
    expect(error.field).toBe("webhook_url");
    expect(error.reason).toMatch(/MEDIAGATE_PUBLIC_URL/);
  });

  it("B: an api_id is a {vendor}/{model}/{function} path: fewer segments are refused", () => {
    const twoSegments = record(OPEN, undefined, "vendorx/sfx");
    const error = inputError(() => validateBRequest(request({ prompt: "x" }, { model: "vendorx/sfx" }), catalog(twoSegments)));
    expect(error.field).toBe("model");
    expect(error.allowed).toMatch(/mediagate catalog/);
  });

  it("B: an operation not in the catalog, with no alternatives to name, points to `mediagate catalog`", () => {
    const missing = (apiId: string): BCachedOperation => ({ kind: "missing", apiId, alternatives: [], fetchedAt: READ_AT });
    const error = inputError(() => validateBRequest(request({}), missing));
    expect(error.field).toBe("model");
    expect(error.allowed).toMatch(/mediagate catalog/);
    const named = (apiId: string): BCachedOperation => ({ kind: "missing", apiId, alternatives: ["vendorx/video-2.5/text-to-video"], fetchedAt: READ_AT });
    expect(inputError(() => validateBRequest(request({}, { model: "vendorx/video-2.5", operation: "upscale" }), named))).toMatchObject({
      field: "operation",
      allowed: "vendorx/video-2.5/text-to-video",
    });
  });

  it("B: facts record the input_schema's $id when it has one, else null", () => {
    const withId = record({ ...IMAGE_TO_VIDEO, $id: "https://b.example/schemas/image-to-video" });
    expect(validateBRequest(request({ image: IMAGE_URL }), catalog(withId)).facts).toMatchObject({
      apiId: API_ID,
      catalogReadAt: READ_AT,
      schemaId: "https://b.example/schemas/image-to-video",
    });
    expect(validateBRequest(request({ image: IMAGE_URL }), catalog(record(IMAGE_TO_VIDEO))).facts.schemaId).toBeNull();
  });

  it("B: every format mediagate does not check is named in the warning", () => {
    const schema = { type: "object", properties: { when: { type: "string", format: "date-time" }, contact: { type: "string", format: "email" } } };
    const validated = validateBRequest(request({ when: "soon", contact: "nobody" }), catalog(record(schema)));
    expect(validated.warnings).toContain("formats not checked by mediagate (B checks them on submit): date-time, email");
  });
});

describe("B: images onto the record's image field", () => {
  const { image: _image, ...noImage } = { image: IMAGE_URL, duration_s: 5 };

  it("B: an image is an http or https URL", () => {
    for (const url of ["http://images.example/a.png", "HTTPS://images.example/a.png"]) {
      expect(validateBRequest(request(noImage, { images: [url] }), catalog(record(IMAGE_TO_VIDEO))).body.image).toBe(url);
    }
    for (const url of ["ftp://images.example/a.png", "xhttps://images.example/a.png", "lighthouse.png", "https://"]) {
      const error = inputError(() => validateBRequest(request(noImage, { images: [url] }), catalog(record(IMAGE_TO_VIDEO))));
      expect(error).toMatchObject({ field: "images[0]", allowed: "an http(s) URL" });
    }
  });

  it("B: a local file is refused by its images entry: B takes media as URLs", () => {
    const error = inputError(() => validateBRequest(request(noImage, { images: [{ fileName: "a.png", bytes: Buffer.from("png") }] }), catalog(record(IMAGE_TO_VIDEO))));
    expect(error).toMatchObject({ field: "images[0]", allowed: "an http(s) URL" });
    expect(error.reason).toMatch(/a\.png/);
  });

  it("B: more than one image is refused: only the one image field is known; the refusal names the operation's fields", () => {
    const error = inputError(() => validateBRequest(request(noImage, { images: [IMAGE_URL, IMAGE_URL] }), catalog(record(IMAGE_TO_VIDEO))));
    expect(error.field).toBe("images");
    expect(error.allowed).toMatch(/image, prompt, duration_s, seed$/);
  });

  it("B: a record whose schema lists no properties has no field for images", () => {
    const error = inputError(() => validateBRequest(request({}, { images: [IMAGE_URL] }), catalog(record({ type: "object" }))));
    expect(error.field).toBe("images");
    expect(error.allowed).toMatch(/\(none\)$/);
  });
});

describe("B: problems found by the input_schema", () => {
  it("B: the first problem names the field; every other one follows, each with its path", () => {
    const error = inputError(() => validateBRequest(request({ image: 5, duration_s: 7, seed: "x" }), catalog(record(IMAGE_TO_VIDEO))));
    expect(error.field).toBe("image");
    expect(error.reason).toMatch(/; also duration_s: is not one of the allowed values; seed: must be integer$/);
  });

  it("B: a problem with the whole input is named input", () => {
    expect(problems({ type: "object", maxProperties: 1 }, { a: 1, b: 2 })).toEqual([{ path: "input", message: "must NOT have more than 1 properties" }]);
  });

  it("B: const gives its one allowed value", () => {
    expect(problems({ type: "object", properties: { mode: { const: "fast" } } }, { mode: "slow" })).toEqual([
      { path: "mode", message: "must be equal to constant", allowed: '"fast"' },
    ]);
  });

  it("B: a field unevaluatedProperties refuses is named, as not a field of this operation", () => {
    expect(problems({ type: "object", properties: { prompt: { type: "string" } }, unevaluatedProperties: false }, { prompt: "x", fps: 30 })).toEqual([
      { path: "fps", message: "is not a field of this operation" },
    ]);
  });

  it("B: a field name propertyNames refuses is named", () => {
    const found = problems({ type: "object", propertyNames: { pattern: "^[a-z_]+$" } }, { Bad: 1 });
    expect(found.map((problem) => problem.path)).toContain("Bad");
  });

  it("B: paths read as JSON paths: indexes of any size, and names that are not identifiers quoted", () => {
    const list = { type: "object", properties: { keyframes: { type: "array", items: { type: "object", properties: { url: { type: "string" } } } } } };
    const keyframes = [...Array.from({ length: 10 }, () => ({ url: "ok" })), { url: 5 }];
    expect(problems(list, { keyframes }).map((problem) => problem.path)).toEqual(["keyframes[10].url"]);
    const names = { type: "object", properties: { "my field": { type: "integer" }, "4k_upscale": { type: "boolean" }, take2: { type: "integer" }, "w/h": { type: "integer" }, "a~b": { type: "integer" } } };
    const paths = problems(names, { "my field": "x", "4k_upscale": "x", take2: "x", "w/h": "x", "a~b": "x" }).map((problem) => problem.path);
    expect(paths).toEqual(['["my field"]', '["4k_upscale"]', "take2", '["w/h"]', '["a~b"]']);
  });

  it("B: the same problem at the same path is reported once", () => {
    const schema = { type: "object", properties: { duration_s: { allOf: [{ type: "integer" }, { type: "integer", minimum: 1 }] } } };
    expect(problems(schema, { duration_s: "5" })).toEqual([{ path: "duration_s", message: "must be integer" }]);
  });

  it("B: a uri is absolute, with no space and nothing before its scheme", () => {
    const schema = { type: "object", properties: { image: { type: "string", format: "uri" } } };
    expect(problems(schema, { image: IMAGE_URL })).toEqual([]);
    expect(problems(schema, { image: "urn:isbn:0451450523" })).toEqual([]);
    for (const image of [` ${IMAGE_URL}`, "https://images.example/a b.png", "http://[::1", "lighthouse.png"]) {
      expect(problems(schema, { image }).map((problem) => problem.path)).toEqual(["image"]);
    }
  });

  it("B: formats are found wherever the schema uses them (inside anyOf, prefixItems), and a field named format is not one", () => {
    const schema = {
      type: "object",
      properties: {
        format: { type: "string", enum: ["mp4", "mov"] },
        when: { anyOf: [{ type: "string", format: "date-time" }, { type: "null" }] },
        seed: { type: ["integer", "null"], default: null },
      },
    };
    expect(compileInputSchema(schema).uncheckedFormats).toEqual(["date-time"]);
    const sorted = { type: "object", properties: { b: { format: "time" }, a: { format: "date" }, c: { format: "uri" } } };
    expect(compileInputSchema(sorted).uncheckedFormats).toEqual(["date", "time"]);
  });
});

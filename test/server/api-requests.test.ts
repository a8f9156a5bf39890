import { describe, expect, it } from "vitest";
import { InputError } from "../../src/core/errors.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import { apiImage, encodeCursor, idempotencyOf, jobListQuery, quotedRequestOfBody, requestOfBody, submissionOfBody, timeOf, utf8Body } from "../../src/server/api/requests.js";

/**
 * The API's reading of its requests, unit by unit: every refusal names its
 * field and says what is allowed (issue 35: the mutation run left these
 * paths unchecked; the HTTP tests reach only some of them).
 */
function refusal(action: () => unknown): InputError {
  try {
    action();
  } catch (error) {
    if (error instanceof InputError) return error;
    throw error;
  }
  throw new Error("expected an InputError");
}

const png = renderPng(8, 8, "a fox", 1);
const pngData = `data:image/png;base64,${png.toString("base64")}`;

describe("API requests: images", () => {
  it("an http(s) URL is kept as given, in either case of scheme", () => {
    expect(apiImage("https://img.example/a.png", "image")).toBe("https://img.example/a.png");
    expect(apiImage("HTTP://img.example/a.png", "image")).toBe("HTTP://img.example/a.png");
  });

  it("a data: URL's bytes are read, named by the field and the type (jpeg as jpg)", () => {
    const image = apiImage(pngData, "images[0]") as { fileName: string; bytes: Buffer };
    expect(image.fileName).toBe("images_0_.png");
    expect(image.bytes.equals(png)).toBe(true);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1]);
    expect((apiImage(`data:image/jpeg;base64,${jpeg.toString("base64")}`, "image") as { fileName: string }).fileName).toBe("image.jpg");
  });

  it("a path, a non-image data: URL or bytes that are no image are refused naming the field", () => {
    const path = refusal(() => apiImage("/etc/passwd", "image"));
    expect(path.field).toBe("image");
    expect(path.message).toBe("image: must be an http(s) URL or a data:image/…;base64 URL (the API reads no file of its server) (allowed: https://… or data:image/png;base64,…)");
    expect(refusal(() => apiImage("data:text/plain;base64,aGk=", "image")).field).toBe("image");
    const notImage = refusal(() => apiImage(`data:image/png;base64,${Buffer.from("not an image at all").toString("base64")}`, "images[1]"));
    expect(notImage.field).toBe("images[1]");
    expect(notImage.reason).toMatch(/^carries data that is not .* \(judged by its first bytes\)$/);
  });
});

describe("API requests: a native request", () => {
  const base = { provider: "d", model: "gen-2-pro", input: { prompt: "a fox" } };

  it("is read with its fields, operation and images only when given", () => {
    expect(requestOfBody(base, [])).toEqual({ provider: "d", model: "gen-2-pro", input: { prompt: "a fox" } });
    expect(requestOfBody({ ...base, operation: "edit", images: ["https://img.example/a.png", pngData] }, [])).toMatchObject({
      operation: "edit",
      images: ["https://img.example/a.png", { fileName: "images_1_.png" }],
    });
    expect(requestOfBody({ ...base, images: [] }, [])).not.toHaveProperty("images");
  });

  it("refuses each malformed field by name, and a field of neither kind of request", () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ ...base, colour: "red" }, "colour", /is not a field of a native request \(one with task is a common request\)/],
      [{ ...base, provider: "z" }, "provider", /must be one of a, b, c, d, e, f \(or give task, for a common request\)/],
      [{ ...base, provider: 4 }, "provider", /must be one of/],
      [{ ...base, model: "" }, "model", /is required: the provider's model or endpoint/],
      [{ ...base, model: 7 }, "model", /is required/],
      [{ ...base, operation: "" }, "operation", /must be a non-empty string/],
      [{ ...base, operation: 3 }, "operation", /must be a non-empty string/],
      [{ ...base, input: "a fox" }, "input", /must be an object of the provider's native fields/],
      [{ ...base, input: ["a fox"] }, "input", /must be an object/],
      [{ ...base, input: null }, "input", /must be an object/],
      [{ ...base, images: "https://img.example/a.png" }, "images", /must be a list of image URLs/],
      [{ ...base, images: [5] }, "images[0]", /must be an image URL/],
    ];
    for (const [body, field, reason] of cases) {
      const error = refusal(() => requestOfBody(body, []));
      expect([error.field, error.message], JSON.stringify(body)).toEqual([field, expect.stringMatching(reason)]);
    }
    // A field skipped by the caller (ref, notify_url) is not the request's.
    expect(requestOfBody({ ...base, ref: "r" }, ["ref"])).toEqual({ provider: "d", model: "gen-2-pro", input: { prompt: "a fox" } });
  });

  it("a body with task is a common request, routed", () => {
    expect(requestOfBody({ task: "image", prompt: "a fox", model: "d/gen-2-pro" }, [])).toEqual({
      common: { task: "image", prompt: "a fox" },
      targets: [{ provider: "d", model: "gen-2-pro", name: "d/gen-2-pro" }],
      routeBy: "order",
      fallbackOnFailure: false,
    });
  });

  it("a job body carries its ref and notify_url apart from the request; a quote ignores them; neither takes a non-object", () => {
    expect(submissionOfBody({ ...base, ref: "fox", notify_url: "https://hooks.example/x" })).toEqual({
      ref: "fox",
      notifyUrl: "https://hooks.example/x",
      request: { provider: "d", model: "gen-2-pro", input: { prompt: "a fox" } },
      cancelAfterS: null,
    });
    expect(submissionOfBody(base).ref).toBeNull();
    // Its deadline too (issue 37, part 2), refused naming the field when it is not whole seconds.
    expect(submissionOfBody({ ...base, cancel_after_s: 90 }).cancelAfterS).toBe(90);
    expect(refusal(() => submissionOfBody({ ...base, cancel_after_s: "90" })).field).toBe("cancel_after_s");
    expect(quotedRequestOfBody({ ...base, ref: "fox", notify_url: "x" })).toEqual({ provider: "d", model: "gen-2-pro", input: { prompt: "a fox" } });
    for (const body of [[base], "text", null, 3]) {
      expect(refusal(() => submissionOfBody(body)).field).toBe("body");
      expect(refusal(() => quotedRequestOfBody(body)).field).toBe("body");
    }
  });
});

describe("API requests: listings", () => {
  it("reads every filter, and a page of 50 by default, 1 to 200 when given", () => {
    const cursor = encodeCursor({ createdAt: 1_700_000_000_000, id: "job_x" });
    const { filter, limit } = jobListQuery({
      state: "queued, running",
      provider: "d",
      ref: "fox",
      ref_prefix: "batch-7",
      batch: "batch_1",
      created_after: "2026-11-27T10:00:00Z",
      created_before: "1700000000000",
      cursor,
      limit: "200",
    });
    expect(filter).toEqual({
      states: ["queued", "running"],
      provider: "d",
      ref: "fox",
      refPrefix: "batch-7",
      batchId: "batch_1",
      createdAfter: Date.parse("2026-11-27T10:00:00Z"),
      createdBefore: 1_700_000_000_000,
      olderThan: { createdAt: 1_700_000_000_000, id: "job_x" },
    });
    expect(limit).toBe(200);
    expect(jobListQuery({})).toEqual({ filter: {}, limit: 50 });
    expect(jobListQuery({ limit: "1" }).limit).toBe(1);
  });

  it("refuses each malformed filter by name", () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ state: "queued,flying" }, "state"],
      [{ provider: "z" }, "provider"],
      [{ created_after: "yesterday" }, "created_after"],
      [{ created_before: "soon" }, "created_before"],
      [{ cursor: "not-a-cursor" }, "cursor"],
      [{ cursor: Buffer.from(JSON.stringify(["x", 1])).toString("base64url") }, "cursor"],
      [{ limit: "0" }, "limit"],
      [{ limit: "201" }, "limit"],
      [{ limit: "1.5" }, "limit"],
      [{ limit: "ten" }, "limit"],
    ];
    for (const [query, field] of cases) expect(refusal(() => jobListQuery(query)).field, JSON.stringify(query)).toBe(field);
    expect(refusal(() => jobListQuery({ limit: "0" })).message).toBe('limit: "0" is not a page size (allowed: 1 to 200)');
    expect(refusal(() => jobListQuery({ state: "flying" })).message).toMatch(/^state: "flying" is not a job state \(allowed: queued, /);
  });

  it("a time is ISO 8601 or milliseconds since the epoch", () => {
    expect(timeOf("0", "from")).toBe(0);
    expect(timeOf("2026-11-27T10:00:00Z", "from")).toBe(Date.parse("2026-11-27T10:00:00Z"));
    expect(refusal(() => timeOf("noon", "from")).message).toBe('from: "noon" is not a time (allowed: an ISO 8601 time (2026-11-27T10:00:00Z) or milliseconds since the epoch)');
  });
});

describe("API requests: bodies and keys", () => {
  it("a body must be UTF-8", () => {
    expect(utf8Body(Buffer.from('{"a":"é"}'))).toBe('{"a":"é"}');
    expect(() => utf8Body(Buffer.from([0x7b, 0xff, 0x7d]))).toThrow(/not UTF-8/);
  });

  it("an Idempotency-Key's request is its route and its body with keys in order: key order does not matter, the route and values do", () => {
    expect(idempotencyOf(undefined, "/v1/jobs", {})).toBeNull();
    const one = idempotencyOf("key-1", "/v1/jobs", { b: [1, { d: 2, c: null }], a: "x" })!;
    const same = idempotencyOf("key-1", "/v1/jobs", { a: "x", b: [1, { c: null, d: 2 }] })!;
    expect(one).toEqual(same);
    expect(one.key).toBe("key-1");
    expect(one.requestSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(idempotencyOf("key-1", "/v1/batches", { a: "x", b: [1, { c: null, d: 2 }] })!.requestSha256).not.toBe(one.requestSha256);
    expect(idempotencyOf("key-1", "/v1/jobs", { a: "y", b: [1, { c: null, d: 2 }] })!.requestSha256).not.toBe(one.requestSha256);
    expect(idempotencyOf("key-1", "/v1/jobs", { a: "x", b: [{ c: null, d: 2 }, 1] })!.requestSha256).not.toBe(one.requestSha256);
    // Repeated headers are one key, joined as HTTP joins them.
    expect(idempotencyOf(["k1", "k2"], "/v1/jobs", {})!.key).toBe("k1,k2");
  });
});

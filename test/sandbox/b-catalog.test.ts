import { Ajv2020 } from "ajv/dist/2020.js";
import { afterEach, describe, expect, it } from "vitest";
import { B_KEY, call, IMAGE_TO_VIDEO, startB, submit, type BSandbox } from "./b-http.js";

let world: BSandbox | undefined;
afterEach(async () => {
  await world?.sandbox.stop();
  world = undefined;
});

async function quote(current: BSandbox, apiId: string, body: unknown): Promise<number> {
  const answer = await call(current, "POST", `/catalog/apis/${apiId}/quote`, { body, key: null });
  expect(answer.status).toBe(200);
  return answer.body.amount_micro_usd;
}

describe("B catalog and quotes", () => {
  it("B: the catalog list needs no key and has at least 20 operations of several vendors, video and audio", async () => {
    world = await startB();
    const { status, body } = await call(world, "GET", "/catalog/apis", { key: null });
    expect(status).toBe(200);
    expect(body.count).toBe(body.data.length);
    expect(body.data.length).toBeGreaterThanOrEqual(20);
    const vendors = new Set(body.data.map((record: { vendor: string }) => record.vendor));
    expect(vendors.size).toBeGreaterThanOrEqual(3);
    const functions = new Set(body.data.map((record: { function: string }) => record.function));
    for (const expected of ["image-to-video", "text-to-video", "keyframes-to-video", "video-to-video", "reference-to-audio", "text-to-audio"]) {
      expect(functions).toContain(expected);
    }
    const mediaTypes = new Set(body.data.map((record: { output_media_type: string }) => record.output_media_type));
    expect([...mediaTypes].sort()).toEqual(["audio", "video"]);
  });

  it("B: one model appears under several functions", async () => {
    world = await startB();
    const { body } = await call(world, "GET", "/catalog/apis", { key: null });
    const functionsOf = body.data.filter((record: { vendor: string; model: string }) => record.vendor === "vendorx" && record.model === "video-2.5").map((record: { function: string }) => record.function);
    expect(functionsOf.sort()).toEqual(["image-to-video", "keyframes-to-video", "text-to-video"]);
  });

  it("B: every catalog record's input_schema is a valid JSON Schema 2020-12 that refuses unknown fields", async () => {
    world = await startB();
    const { body } = await call(world, "GET", "/catalog/apis", { key: null });
    const ajv = new Ajv2020({ strict: true, validateFormats: false });
    for (const summary of body.data as { api_id: string }[]) {
      const { status, body: record } = await call(world, "GET", `/catalog/apis/${summary.api_id}?expand=inputs`, { key: null });
      expect(status).toBe(200);
      const schema = record.input_schema;
      expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(schema.additionalProperties).toBe(false);
      expect(ajv.validateSchema(schema)).toBe(true);
      const validate = ajv.compile(schema);
      expect(validate({ surely_not_a_field: 1 })).toBe(false);
      expect(record.required_inputs).toEqual(schema.required);
      expect(record.request_fields.map((field: { name: string }) => field.name)).toEqual(Object.keys(schema.properties));
    }
  });

  it("B: a record read with expand=inputs carries availability, required inputs, enum values and pricing", async () => {
    world = await startB();
    const plain = await call(world, "GET", `/catalog/apis/${IMAGE_TO_VIDEO}`, { key: null });
    expect(plain.status).toBe(200);
    expect(plain.body.input_schema).toBeUndefined();
    const { body } = await call(world, "GET", `/catalog/apis/${IMAGE_TO_VIDEO}?expand=inputs`, { key: null });
    expect(body).toMatchObject({
      api_id: IMAGE_TO_VIDEO,
      vendor: "vendorx",
      model: "video-2.5",
      function: "image-to-video",
      availability: "available",
      required_inputs: ["image", "resolution", "duration_s"],
      enum_values: { resolution: ["720p", "1080p"], duration_s: [5, 10] },
      pricing: { unit: "per_second", currency: "USD", platform_fee_included: true },
    });
    expect(body.pricing.rates).toContainEqual({ conditions: { resolution: "720p" }, rate_usd: 0.04, rate_micro_usd: 40_000 });
    expect(body.pricing.rates).toContainEqual({ conditions: { resolution: "1080p" }, rate_usd: 0.06, rate_micro_usd: 60_000 });
  });

  it("B: model names do not tell which functions and values a model offers", async () => {
    world = await startB();
    const turbo = await call(world, "GET", "/catalog/apis/lumora/text-to-video-turbo/text-to-video", { key: null });
    expect(turbo.status).toBe(404);
    expect((await call(world, "GET", "/catalog/apis/lumora/text-to-video-turbo/image-to-video", { key: null })).status).toBe(200);
    const clip = await call(world, "GET", "/catalog/apis/kestrel/clip-1080p/text-to-video?expand=inputs", { key: null });
    expect(clip.body.enum_values.resolution).not.toContain("1080p");
    const refused = await submit(world, "kestrel/clip-1080p/text-to-video", { prompt: "a hawk", resolution: "1080p", duration_s: 5 });
    expect(refused.body.status).toBe("failed");
    expect(refused.body.error.code).toBe("invalid_request");
  });

  it("B: slashes inside a model identifier are literal; an encoded slash names no operation", async () => {
    world = await startB();
    expect((await call(world, "GET", "/catalog/apis/kestrel/motion/v3/video-to-video", { key: null })).status).toBe(200);
    const encoded = await call(world, "GET", "/catalog/apis/kestrel/motion%2Fv3/video-to-video", { key: null });
    expect(encoded.status).toBe(404);
    expect(encoded.body.error.code).toBe("operation_not_found");
    const accepted = await submit(world, "kestrel/motion/v3/video-to-video", { video: "https://videos.example.com/a.mp4", prompt: "as a watercolour" });
    expect(accepted.status).toBe(200);
    expect(accepted.body.status).toBe("queued");
  });

  it("B: quotes follow the published rates and need no key", async () => {
    world = await startB();
    expect(await quote(world, IMAGE_TO_VIDEO, { image: "https://x.example/a.png", resolution: "720p", duration_s: 5 })).toBe(200_000);
    expect(await quote(world, IMAGE_TO_VIDEO, { image: "https://x.example/a.png", resolution: "1080p", duration_s: 10 })).toBe(600_000);
    expect(await quote(world, IMAGE_TO_VIDEO, { image: "https://x.example/a.png", resolution: "1080p", duration_s: 5 })).toBe(450_000);
    expect(await quote(world, "vendorx/video-2.5/keyframes-to-video", { resolution: "1080p", duration_s: 5 })).toBe(300_000);
    expect(await quote(world, "vendorx/effects/image-to-video", { image: "https://x.example/a.png", effect: "melt" })).toBe(50_000);
    expect(await quote(world, "vendorx/swaps/video-to-video", {})).toBe(30_000);
    expect(await quote(world, "vendorx/soundtrack/video-to-video", { duration_s: 20 })).toBe(100_000);
    expect(await quote(world, "vendorx/music/reference-to-audio", { duration_s: 30 })).toBe(7_500);
    expect(await quote(world, "vendorx/sfx/text-to-audio", { prompt: "door", duration_s: 10 })).toBe(2_000);
    // 150 characters are 10 s of speech at 0.01 per minute.
    expect(await quote(world, "vendorx/speech/text-to-audio", { text: "a".repeat(150), voice: "ember" })).toBe(1_667);
  });

  it("B: a quote never refuses: it prices what is missing or invalid at the dearest allowed value", async () => {
    world = await startB();
    expect(await quote(world, IMAGE_TO_VIDEO, {})).toBe(600_000);
    expect(await quote(world, IMAGE_TO_VIDEO, { resolution: "8k", duration_s: 5 })).toBe(450_000);
    expect(await quote(world, IMAGE_TO_VIDEO, "not an object")).toBe(600_000);
    // Balance is never reported at quote time.
    world.b.balanceMicroUsd = 0;
    expect(await quote(world, IMAGE_TO_VIDEO, { resolution: "720p", duration_s: 10 })).toBe(400_000);
  });

  it("B: catalog reads and quotes are never charged", async () => {
    world = await startB();
    const before = world.b.balanceMicroUsd;
    await call(world, "GET", "/catalog/apis", { key: B_KEY });
    await quote(world, IMAGE_TO_VIDEO, {});
    expect(world.b.balanceMicroUsd).toBe(before);
    expect(world.b.jobs).toHaveLength(0);
  });

  it("B: an operation listed as unavailable refuses submissions with a failed job", async () => {
    world = await startB();
    const record = await call(world, "GET", "/catalog/apis/lumora/ray-1.6/text-to-video", { key: null });
    expect(record.body.availability).toBe("unavailable");
    const refused = await submit(world, "lumora/ray-1.6/text-to-video", { prompt: "rain", resolution: "720p", duration_s: 5 });
    expect(refused.body).toMatchObject({ status: "failed", error: { code: "operation_unavailable" }, billing: null });
  });
});

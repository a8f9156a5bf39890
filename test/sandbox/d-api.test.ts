import { afterEach, describe, expect, it } from "vitest";
import { D_ENDPOINT_IDS } from "../../src/sandbox/d/index.js";
import { pngSize } from "../../src/sandbox/media/png.js";
import { D_KEY, poll, PROMPT, startD, submit, submitOk, type DSandbox } from "./d-http.js";

let world: DSandbox | undefined;
afterEach(async () => {
  await world?.sandbox.stop();
  world = undefined;
});

async function started(options: Parameters<typeof startD>[0] = {}, timeScale = 1): Promise<DSandbox> {
  world = await startD(options, timeScale);
  return world;
}

/** `count` reference fields with URL values: input_image, input_image_2, … */
function references(count: number): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let position = 1; position <= count; position++) {
    fields[position === 1 ? "input_image" : `input_image_${position}`] = `https://images.example/${position}.png`;
  }
  return fields;
}

describe("D authentication", () => {
  it("D: x-key is required and a Bearer header is refused", async () => {
    const d = await started();
    const missing = await submit(d, "gen-2-pro", PROMPT, {});
    expect(missing.status).toBe(401);
    expect(missing.body.code).toBe("invalid_key");

    const wrong = await submit(d, "gen-2-pro", PROMPT, { "x-key": "not-a-key" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe("invalid_key");

    // spec D Authentication 1: the key "is not a bearer token", even a valid one.
    const bearer = await submit(d, "gen-2-pro", PROMPT, { authorization: `Bearer ${D_KEY}` });
    expect(bearer.status).toBe(401);
    expect(bearer.body.code).toBe("bearer_not_accepted");

    expect(d.d.jobs).toHaveLength(0);
    expect(d.d.submitCount).toBe(0);
    expect((await submit(d, "gen-2-pro", PROMPT)).status).toBe(200);
  });

  it("D: polling needs x-key too", async () => {
    const d = await started();
    const { polling_url } = await submitOk(d, "gen-2-pro", PROMPT);
    expect((await poll(polling_url, {})).status).toBe(401);
    expect((await poll(polling_url, { authorization: `Bearer ${D_KEY}` })).body.code).toBe("bearer_not_accepted");
    expect((await poll(polling_url)).status).toBe(200);
  });

  it("D: every key of the account is accepted", async () => {
    const d = await started({ apiKeys: ["first-key", "second-key"] });
    expect((await submit(d, "gen-2-pro", PROMPT, { "x-key": "first-key" })).status).toBe(200);
    expect((await submit(d, "gen-2-pro", PROMPT, { "x-key": "second-key" })).status).toBe(200);
    expect((await submit(d, "gen-2-pro", PROMPT, { "x-key": D_KEY })).status).toBe(401);
  });
});

describe("D endpoints", () => {
  it("D: every endpoint identifier of the table accepts a submit under /v1/", async () => {
    const d = await started();
    for (const endpoint of D_ENDPOINT_IDS) {
      const { status, body } = await submit(d, endpoint, { ...PROMPT, width: 512, height: 512 });
      expect(status, endpoint).toBe(200);
      expect(d.d.job(body.id)?.endpoint).toBe(endpoint);
    }
  });

  it("D: the dev tier, base variants and unknown endpoints have no hosted endpoint (404)", async () => {
    const d = await started();
    const balance = d.d.balanceMicroUsd;
    for (const endpoint of ["gen-2-dev", "gen-2-pro-base", "gen-2-max-base", "gen-3-max", "GEN-2-PRO"]) {
      const { status, body } = await submit(d, endpoint, PROMPT);
      expect(status, endpoint).toBe(404);
      expect(body.code).toBe("endpoint_not_found");
    }
    expect(d.d.jobs).toHaveLength(0);
    expect(d.d.balanceMicroUsd).toBe(balance);
  });

  it("D: other paths under /d answer a JSON 404", async () => {
    const d = await started();
    const response = await fetch(`${d.baseUrl}/v2/gen-2-pro`, { method: "POST", headers: { "x-key": D_KEY } });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { code: string }).code).toBe("not_found");
  });
});

describe("D submit validation", () => {
  it("D: prompt is required and must be a non-empty string", async () => {
    const d = await started();
    for (const body of [{}, { prompt: "" }, { prompt: "   " }, { prompt: 42 }, { prompt: null }]) {
      const { status, body: error } = await submit(d, "gen-2-pro", body);
      expect(status, JSON.stringify(body)).toBe(422);
      expect(error.field).toBe("prompt");
    }
    expect(d.d.jobs).toHaveLength(0);
  });

  it("D: the body must be a JSON object", async () => {
    const d = await started();
    expect((await submit(d, "gen-2-pro", ["a prompt"])).body.field).toBe("body");
    const unparsable = await fetch(`${d.baseUrl}/v1/gen-2-pro`, {
      method: "POST",
      headers: { "x-key": D_KEY, "content-type": "application/json" },
      body: "{not json",
    });
    expect(unparsable.status).toBe(422);
  });

  it("D: width must be a multiple of 16", async () => {
    const d = await started();
    const width = await submit(d, "gen-2-pro", { ...PROMPT, width: 1000, height: 1024 });
    expect(width.status).toBe(422);
    expect(width.body.field).toBe("width");
    const height = await submit(d, "gen-2-pro", { ...PROMPT, width: 1024, height: 1000 });
    expect(height.status).toBe(422);
    expect(height.body.field).toBe("height");
    expect((await submit(d, "gen-2-pro", { ...PROMPT, width: 1008, height: 1024 })).status).toBe(200);
  });

  it("D: each side is at least 64", async () => {
    const d = await started();
    expect((await submit(d, "gen-2-pro", { ...PROMPT, width: 48, height: 1024 })).body.field).toBe("width");
    expect((await submit(d, "gen-2-pro", { ...PROMPT, width: 1024, height: 0 })).body.field).toBe("height");
    expect((await submit(d, "gen-2-pro", { ...PROMPT, width: 1024, height: -64 })).body.field).toBe("height");
    expect((await submit(d, "gen-2-pro", { ...PROMPT, width: 64, height: 64 })).status).toBe(200);
  });

  it("D: width and height are integers", async () => {
    const d = await started();
    expect((await submit(d, "gen-2-pro", { ...PROMPT, width: 512.5, height: 512 })).body.field).toBe("width");
    expect((await submit(d, "gen-2-pro", { ...PROMPT, width: 512, height: "512" })).body.field).toBe("height");
  });

  it("D: width and height default to 1024 when omitted (sandbox choice)", async () => {
    const d = await started();
    const { id } = await submitOk(d, "gen-2-pro", PROMPT);
    expect(d.d.job(id)?.outputSize).toEqual({ width: 1024, height: 1024 });
  });

  it("D: negative prompts are not supported", async () => {
    const d = await started();
    const { status, body } = await submit(d, "gen-2-pro", { ...PROMPT, negative_prompt: "blurry" });
    expect(status).toBe(422);
    expect(body.code).toBe("unsupported_field");
    expect(body.field).toBe("negative_prompt");
    expect(d.d.jobs).toHaveLength(0);
  });

  it("D: seed is an integer; fields the spec does not show are ignored and recorded", async () => {
    const d = await started();
    expect((await submit(d, "gen-2-pro", { ...PROMPT, seed: 1.5 })).body.field).toBe("seed");
    const body = { ...PROMPT, width: 512, height: 512, seed: 7, output_format: "png", safety_tolerance: 2 };
    const { id } = await submitOk(d, "gen-2-pro", body);
    expect(d.d.job(id)?.seed).toBe(7);
    expect(d.d.job(id)?.body).toEqual(body);
  });
});

describe("D output size", () => {
  it("D: above 4 MP is reduced to 4 MP", async () => {
    const d = await started({ renderTimeMs: 1_000 });
    const { id, polling_url } = await submitOk(d, "gen-2-pro", { ...PROMPT, width: 4096, height: 4096 });
    expect(d.d.job(id)?.requestedSize).toEqual({ width: 4096, height: 4096 });
    expect(d.d.job(id)?.outputSize).toEqual({ width: 2048, height: 2048 });

    d.sandbox.clock.advance(1_000);
    const ready = await poll(polling_url);
    const image = Buffer.from(await (await fetch(ready.body.result!.sample)).arrayBuffer());
    expect(pngSize(image)).toEqual({ width: 2048, height: 2048 });
  });

  it("D: the 4 MP reduction keeps the aspect ratio and multiples of 16", async () => {
    const d = await started();
    for (const [width, height] of [
      [4096, 2048],
      [1024, 8192],
      [3008, 2000],
      [64, 100_000],
    ] as const) {
      const { id } = await submitOk(d, "gen-2-flex", { ...PROMPT, width, height });
      const output = d.d.job(id)!.outputSize;
      expect(output.width * output.height).toBeLessThanOrEqual(4 * 1_048_576);
      expect(output.width % 16).toBe(0);
      expect(output.height % 16).toBe(0);
      expect(Math.min(output.width, output.height)).toBeGreaterThanOrEqual(64);
      if (width !== 64) expect(Math.abs(output.width / output.height - width / height) / (width / height)).toBeLessThan(0.02);
      // The largest such size: one more step on either side would pass 4 MP or the aspect ratio.
      expect((output.width + 16) * (output.height + 16)).toBeGreaterThan(4 * 1_048_576);
    }
  });

  it("D: exactly 4 MP is kept as asked", async () => {
    const d = await started();
    const { id } = await submitOk(d, "gen-2-flex", { ...PROMPT, width: 2048, height: 2048 });
    expect(d.d.job(id)?.outputSize).toEqual({ width: 2048, height: 2048 });
  });
});

describe("D reference images", () => {
  it("D: reference images are input_image, input_image_2, …; a gap in the numbering is refused", async () => {
    const d = await started();
    const gap = await submit(d, "gen-2-pro", { ...PROMPT, input_image: "https://images.example/1.png", input_image_3: "https://images.example/3.png" });
    expect(gap.status).toBe(422);
    expect(gap.body.field).toBe("input_image_3");

    const noFirst = await submit(d, "gen-2-pro", { ...PROMPT, input_image_2: "https://images.example/2.png" });
    expect(noFirst.body.field).toBe("input_image_2");

    const misnamed = await submit(d, "gen-2-pro", { ...PROMPT, input_image_1: "https://images.example/1.png" });
    expect(misnamed.body.field).toBe("input_image_1");

    const { id } = await submitOk(d, "gen-2-pro", { ...PROMPT, ...references(3) });
    expect(d.d.job(id)?.referenceCount).toBe(3);
    expect(d.d.jobs).toHaveLength(1);
  });

  it("D: a reference value is a non-empty string (URL or base64)", async () => {
    const d = await started();
    expect((await submit(d, "gen-2-pro", { ...PROMPT, input_image: "" })).body.field).toBe("input_image");
    expect((await submit(d, "gen-2-pro", { ...PROMPT, input_image: 12 })).body.field).toBe("input_image");
    expect((await submit(d, "gen-2-pro", { ...PROMPT, input_image: "iVBORw0KGgo=" })).status).toBe(200);
    // null counts as absent
    const { id } = await submitOk(d, "gen-2-pro", { ...PROMPT, input_image: null });
    expect(d.d.job(id)?.referenceCount).toBe(0);
  });

  it("D: compact endpoints take at most 4 reference images", async () => {
    const d = await started();
    for (const endpoint of ["gen-2-compact-4b", "gen-2-compact-9b", "gen-2-compact-9b-preview", "gen-2-compact-9b-kv-finetuned"]) {
      expect((await submit(d, endpoint, { ...PROMPT, ...references(4) })).status, endpoint).toBe(200);
      const tooMany = await submit(d, endpoint, { ...PROMPT, ...references(5) });
      expect(tooMany.status, endpoint).toBe(422);
      expect(tooMany.body.field).toBe("input_image_5");
    }
  });

  it("D: max, pro and flex take at most 8 reference images through the API", async () => {
    const d = await started();
    for (const endpoint of ["gen-2-max", "gen-2-pro", "gen-2-pro-preview", "gen-2-flex"]) {
      expect((await submit(d, endpoint, { ...PROMPT, width: 1024, height: 1024, ...references(8) })).status, endpoint).toBe(200);
      const tooMany = await submit(d, endpoint, { ...PROMPT, width: 1024, height: 1024, ...references(9) });
      expect(tooMany.status, endpoint).toBe(422);
      expect(tooMany.body.field).toBe("input_image_9");
    }
  });

  it("D: gen-ctx-max takes at most 4 reference images (sandbox choice; configurable)", async () => {
    const d = await started();
    expect((await submit(d, "gen-ctx-max", { ...PROMPT, ...references(4) })).status).toBe(200);
    expect((await submit(d, "gen-ctx-max", { ...PROMPT, ...references(5) })).status).toBe(422);
    await d.sandbox.stop();
    const wider = await started({ referenceLimits: { "gen-ctx-max": 8 } });
    expect((await submit(wider, "gen-ctx-max", { ...PROMPT, ...references(8) })).status).toBe(200);
  });

  it("D: pro's 9 MP budget: 1 MP output allows 8 references, 2 MP allows 7, 4 MP allows 5", async () => {
    const d = await started();
    for (const endpoint of ["gen-2-pro", "gen-2-pro-preview"]) {
      expect((await submit(d, endpoint, { ...PROMPT, width: 1024, height: 1024, ...references(8) })).status).toBe(200);
      const twoMegapixels = { ...PROMPT, width: 2048, height: 1024 };
      const overBudget = await submit(d, endpoint, { ...twoMegapixels, ...references(8) });
      expect(overBudget.status).toBe(422);
      expect(overBudget.body.field).toBe("input_image_8");
      expect((await submit(d, endpoint, { ...twoMegapixels, ...references(7) })).status).toBe(200);
      // A bit over 1 MP already takes the second megapixel of the budget.
      expect((await submit(d, endpoint, { ...PROMPT, width: 1024, height: 1040, ...references(8) })).status).toBe(422);
      const fourMegapixels = { ...PROMPT, width: 2048, height: 2048 };
      expect((await submit(d, endpoint, { ...fourMegapixels, ...references(5) })).status).toBe(200);
      expect((await submit(d, endpoint, { ...fourMegapixels, ...references(6) })).status).toBe(422);
    }
    // The budget is pro's alone.
    expect((await submit(d, "gen-2-max", { ...PROMPT, width: 2048, height: 1024, ...references(8) })).status).toBe(200);
  });
});

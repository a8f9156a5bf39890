import { afterEach, describe, expect, it } from "vitest";
import { startD, submit, submitOk, type DSandbox } from "./d-http.js";

/**
 * spec D: "other optional fields of each endpoint: not shown". What common
 * clients send beside prompt, width and height is accepted (README "Where
 * the spec says 'not shown'"). The bodies are @ai-sdk/black-forest-labs's.
 */

let d: DSandbox | undefined;
afterEach(async () => {
  await d?.sandbox.stop();
  d = undefined;
});

describe("D: where the spec says 'not shown'", () => {
  it("D: optional fields the spec does not show (aspect_ratio, output_format, safety_tolerance, prompt_upsampling, steps, guidance) are accepted, ignored and kept; the size is width x height", async () => {
    d = await startD();
    const body = {
      prompt: "a red fox in snow",
      seed: 7,
      aspect_ratio: "4:3",
      width: 1024,
      height: 768,
      output_format: "jpeg",
      safety_tolerance: 2,
      prompt_upsampling: false,
      steps: 28,
      guidance: 3.5,
    };
    const { id } = await submitOk(d, "gen-2-flex", body);
    expect(d.d.job(id)).toMatchObject({ body, requestedSize: { width: 1024, height: 768 }, outputSize: { width: 1024, height: 768 }, seed: 7 });
  });

  it("D: gen-ctx-max with only aspect_ratio (no width or height) is accepted at the default 1024x1024, and null optional fields count as absent", async () => {
    d = await startD();
    const { id } = await submitOk(d, "gen-ctx-max", { prompt: "the same scene at night", aspect_ratio: "16:9", input_image: "https://images.example/scene.png" });
    expect(d.d.job(id)).toMatchObject({ outputSize: { width: 1024, height: 1024 }, referenceCount: 1 });
    expect((await submit(d, "gen-2-pro", { prompt: "x", seed: null, width: null, height: null, input_image: null })).status).toBe(200);
  });
});

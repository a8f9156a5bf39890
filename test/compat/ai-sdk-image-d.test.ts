import { createBlackForestLabs } from "@ai-sdk/black-forest-labs";
import { generateImage } from "ai";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { pngSize, renderPng } from "../../src/sandbox/media/png.js";
import { startCompatSandbox, type CompatSandbox } from "./sandbox.js";

/**
 * The Vercel AI SDK's Black Forest Labs provider, unchanged but for its base
 * URL, against sandbox D (the same protocol): `generateImage` submits, polls
 * the `polling_url` as given (on another host name than the submit) and
 * downloads `result.sample` itself.
 */

const D_KEY = "sandbox-d-key";
const SUBMIT = (endpoint: string) => new RegExp(`^/d/v1/${endpoint}$`);
const POLL = /^\/d-poll\/v1\/get_result$/;
const RESULT = /^\/d-results\//;

beforeAll(() => {
  // Warnings are asserted on the results; the SDK's console copy of them is noise here.
  (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
});

let running: CompatSandbox | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** The sandbox with D rendering in 300 ms, and the SDK's provider pointed at `{sandbox}/d/v1`. */
async function sandboxedD() {
  running = await startCompatSandbox({ renderMs: { d: 300 } });
  const blackForestLabs = createBlackForestLabs({ baseURL: `${running.sandbox.url}/d/v1`, apiKey: D_KEY });
  return { running, d: running.emulators.d, blackForestLabs };
}

describe("compat: AI SDK generateImage with @ai-sdk/black-forest-labs against sandbox D", () => {
  it("D via the AI SDK: gen-2-pro with a prompt and a seed is one submit, polls until Ready, and the PNG the sandbox drew (1024x1024 default), billed at the first-MP rate", async () => {
    const { running, d, blackForestLabs } = await sandboxedD();
    const result = await generateImage({ model: blackForestLabs.image("gen-2-pro"), prompt: "a red fox in snow", seed: 42 });

    expect(result.images).toHaveLength(1);
    expect(result.image.mediaType).toBe("image/png");
    const bytes = Buffer.from(result.image.uint8Array);
    expect(pngSize(bytes)).toEqual({ width: 1024, height: 1024 });
    expect(bytes.equals(renderPng(1024, 1024, "a red fox in snow", 42))).toBe(true);
    expect(result.warnings).toEqual([]);

    const [submit] = running.arrived(SUBMIT("gen-2-pro"), "POST");
    expect(submit!.body).toEqual({ prompt: "a red fox in snow", seed: 42 });
    expect(submit!.headers["x-key"]).toBe(D_KEY);
    expect(String(submit!.headers["user-agent"])).toMatch(/^ai\/6\.\S+ ai-sdk\/provider-utils\//);
    expect(submit!.statusCode).toBe(200);
    // Polled on the polling_url's own host (localhost), with the key; the last poll saw Ready.
    const polls = running.arrived(POLL, "GET");
    expect(polls.length).toBeGreaterThanOrEqual(2);
    expect(polls.every((poll) => String(poll.headers.host).startsWith("localhost:") && poll.headers["x-key"] === D_KEY)).toBe(true);
    expect(running.arrived(RESULT, "GET").map((download) => download.statusCode)).toEqual([200]);

    expect(d.jobs).toHaveLength(1);
    expect(d.jobs[0]).toMatchObject({ endpoint: "gen-2-pro", status: "Ready", seed: 42, outputSize: { width: 1024, height: 1024 }, chargeMicroUsd: 30_000, downloads: 1 });
  });

  it("D via the AI SDK: gen-2-flex takes size as width and height (with the derived aspect_ratio), or size with an aspect ratio; the PNG has the size asked", async () => {
    const { running, d, blackForestLabs } = await sandboxedD();
    const sized = await generateImage({ model: blackForestLabs.image("gen-2-flex"), prompt: "a travel poster of Lisbon", size: "768x1152" });
    const both = await generateImage({ model: blackForestLabs.image("gen-2-flex"), prompt: "a lantern on a snowy path", size: "1024x768", aspectRatio: "4:3" });

    expect(pngSize(Buffer.from(sized.image.uint8Array))).toEqual({ width: 768, height: 1152 });
    expect(pngSize(Buffer.from(both.image.uint8Array))).toEqual({ width: 1024, height: 768 });
    // The SDK says what it did with size: derived an aspect ratio from it, or sent both.
    expect(sized.warnings).toEqual([expect.objectContaining({ type: "unsupported", feature: "size" })]);
    expect(both.warnings).toEqual([expect.objectContaining({ type: "unsupported", feature: "size" })]);

    expect(running.arrived(SUBMIT("gen-2-flex"), "POST").map((submit) => submit.body)).toEqual([
      { prompt: "a travel poster of Lisbon", aspect_ratio: "2:3", width: 768, height: 1152 },
      { prompt: "a lantern on a snowy path", aspect_ratio: "4:3", width: 1024, height: 768 },
    ]);
    // spec D rates, flex: 0.05 USD for the first megapixel; 768x1152 and 1024x768 each round up to one.
    expect(d.jobs.map((job) => [job.outputSize, job.chargeMicroUsd])).toEqual([
      [{ width: 768, height: 1152 }, 50_000],
      [{ width: 1024, height: 768 }, 50_000],
    ]);
  });

  it("D via the AI SDK: gen-ctx-max edits one reference image sent as input_image (bare base64), with an aspect ratio; billed as gen-2-max plus the reference", async () => {
    const { running, d, blackForestLabs } = await sandboxedD();
    const reference = renderPng(512, 512, "a harbour at noon", 7);
    const result = await generateImage({
      model: blackForestLabs.image("gen-ctx-max"),
      prompt: { text: "the same harbour at night", images: [reference] },
      aspectRatio: "1:1",
      seed: 9,
    });

    const bytes = Buffer.from(result.image.uint8Array);
    expect(pngSize(bytes)).toEqual({ width: 1024, height: 1024 });
    expect(bytes.equals(renderPng(1024, 1024, "the same harbour at night", 9))).toBe(true);
    const [submit] = running.arrived(SUBMIT("gen-ctx-max"), "POST");
    expect(submit!.body).toEqual({ prompt: "the same harbour at night", seed: 9, aspect_ratio: "1:1", input_image: reference.toString("base64") });
    // gen-ctx-max is billed at gen-2-max's rates (README): 0.07 for the output megapixel, 0.03 for the 512x512 reference.
    expect(d.jobs[0]).toMatchObject({ endpoint: "gen-ctx-max", referenceCount: 1, chargeMicroUsd: 100_000 });
  });
});

import { readFileSync } from "node:fs";
import { UnsupportedFunctionalityError } from "@ai-sdk/provider";
import { experimental_generateVideo as generateVideo } from "ai";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createMediagate } from "../../src/ai-sdk/index.js";
import { Mediagate, NoEligibleTargetError } from "../../src/index.js";
import { createAEmulator, type AEmulator } from "../../src/sandbox/a/index.js";
import { startWorld, type World } from "../helpers/world.js";

/** An A model the sandbox serves (its newest generation). */
const A_MODEL = "vidgen-2-0-250601";
/** A takes media as links and the sandbox never fetches them, so any https link stands for a frame. */
const FIRST_FRAME = "https://frames.example/first.png";
const LAST_FRAME = "https://frames.example/last.png";
/** The smallest PNG: the signature and an IHDR of 1x1, enough to be judged an image by its first bytes. */
const TINY_PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");

interface VideoMetadata {
  jobId: string;
  target: string;
  path: string;
  chargeMicroUsd: number | null;
}

function videosMetadata(providerMetadata: unknown): VideoMetadata[] {
  return (providerMetadata as { mediagate: { videos: VideoMetadata[] } }).mediagate.videos;
}

/** An ISO media file: its first box is `ftyp`. */
function isoBrand(bytes: Uint8Array): { box: string; brand: string } {
  const buffer = Buffer.from(bytes);
  return { box: buffer.toString("latin1", 4, 8), brand: buffer.toString("latin1", 8, 12) };
}

beforeAll(() => {
  // Warnings are asserted on the results; the SDK's console copy of them is noise here.
  (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
});

let world: World | undefined;
let gate: Mediagate | undefined;
afterEach(async () => {
  await gate?.close();
  gate = undefined;
  await world?.close();
  world = undefined;
});

/**
 * Sandbox A over loopback, rendering in 2 s of virtual time at 20× (0.1 s
 * real), and a library instance whose engine runs on the sandbox's clock, so
 * A's polling delays pass at the same pace. A is priced at $1 per million tokens.
 */
async function sandboxedA(): Promise<{ a: AEmulator; world: World; gate: Mediagate; mediagate: ReturnType<typeof createMediagate> }> {
  const a = createAEmulator({ queueMs: 0, renderMs: 2_000 });
  // A bills in tokens; with a rate configured the job's charge is computed from the usage A reports.
  world = await startWorld([a], { timeScale: 20, env: { MEDIAGATE_A_USD_PER_MILLION_TOKENS: "1" } });
  gate = await Mediagate.open({ env: world.env, clock: world.sandbox.clock });
  return { a, world, gate, mediagate: createMediagate({ gate }) };
}

describe("AI SDK provider: videos through the sandbox (real HTTP over loopback)", () => {
  it("AI SDK video: experimental_generateVideo on an A model makes one text-to-video job; the bytes are its saved MP4, 16:9 and 5 seconds as asked", async () => {
    const { a, gate, mediagate } = await sandboxedA();
    const result = await generateVideo({ model: mediagate.video(`a/${A_MODEL}`), prompt: "a lighthouse at dusk", aspectRatio: "16:9", duration: 5 });

    expect(result.videos).toHaveLength(1);
    expect(result.video.mediaType).toBe("video/mp4");
    expect(isoBrand(result.video.uint8Array).box).toBe("ftyp");
    const [metadata] = videosMetadata(result.providerMetadata);
    expect(Buffer.from(result.video.uint8Array).equals(readFileSync(metadata!.path))).toBe(true);
    const job = (await gate.get(metadata!.jobId))!;
    expect(job).toMatchObject({ state: "succeeded", provider: "a", model: A_MODEL });
    expect(job.chargeMicroUsd).toBeGreaterThan(0);
    expect(metadata).toMatchObject({ target: `a/${A_MODEL}`, chargeMicroUsd: job.chargeMicroUsd });
    expect(a.tasks()).toMatchObject([{ kind: "text_to_video", requestedRatio: "16:9", duration: 5, status: "succeeded" }]);
    expect(result.warnings).toEqual([]);
  });

  it("AI SDK video: frameImages' first and last frame (links) make A's first-frame task, its ratio adaptive as A requires", async () => {
    const { a, gate, mediagate } = await sandboxedA();
    const result = await generateVideo({
      model: mediagate.video(`a/${A_MODEL}`),
      prompt: "the tide comes in",
      aspectRatio: "adaptive",
      frameImages: [
        { image: FIRST_FRAME, frameType: "first_frame" },
        { image: LAST_FRAME, frameType: "last_frame" },
      ],
    });
    expect(isoBrand(result.video.uint8Array).box).toBe("ftyp");
    const job = (await gate.get(videosMetadata(result.providerMetadata)[0]!.jobId))!;
    expect(job.body).toMatchObject({
      ratio: "adaptive",
      content: [
        { type: "text", text: "the tide comes in" },
        { type: "image_url", image_url: { url: FIRST_FRAME }, role: "first_frame" },
        { type: "image_url", image_url: { url: LAST_FRAME }, role: "last_frame" },
      ],
    });
    expect(a.tasks()).toMatchObject([{ kind: "first_frame", requestedRatio: "adaptive", status: "succeeded" }]);
  });

  it("AI SDK video: frames given as bytes are refused before anything is stored or sent: A takes media as links, and both frames are named", async () => {
    const { world, gate, mediagate } = await sandboxedA();
    const call = generateVideo({
      model: mediagate.video(`a/${A_MODEL}`),
      prompt: "the tide comes in",
      frameImages: [
        { image: TINY_PNG, frameType: "first_frame" },
        { image: TINY_PNG, frameType: "last_frame" },
      ],
    });
    await expect(call).rejects.toBeInstanceOf(NoEligibleTargetError);
    await expect(call).rejects.toThrow(/a\/vidgen-2-0-250601: first_frame: A takes media as links; the local file first-frame\.png cannot be sent; last_frame: A takes media as links; the local file last-frame\.png cannot be sent/);
    expect(world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
    expect(await gate.list()).toEqual([]);
  });

  it("AI SDK video: fps is refused, not dropped: a common request has no frame rate", async () => {
    const { world, mediagate } = await sandboxedA();
    const call = generateVideo({ model: mediagate.video(`a/${A_MODEL}`), prompt: "a lighthouse", fps: 60 });
    await expect(call).rejects.toSatisfy((error: unknown) => UnsupportedFunctionalityError.isInstance(error) && error.functionality === "fps");
    expect(world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
  });
});

import { readFileSync } from "node:fs";
import { InvalidArgumentError, UnsupportedFunctionalityError } from "@ai-sdk/provider";
import { experimental_generateVideo as generateVideo } from "ai";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createMediagate, type VideoCallOptions } from "../../src/ai-sdk/index.js";
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

/** The first bytes of an MP4: a video, not an image. */
const MP4_START = Buffer.from([0x00, 0x00, 0x00, 0x18, ...Buffer.from("ftypisom")]);

/** A video call as `experimental_generateVideo` hands it to the model: one video, nothing else set but `fields`. */
function videoCall(fields: Partial<VideoCallOptions>): VideoCallOptions {
  return {
    prompt: "the tide comes in",
    n: 1,
    aspectRatio: undefined,
    resolution: undefined,
    duration: undefined,
    fps: undefined,
    seed: undefined,
    image: undefined,
    frameImages: undefined,
    inputReferences: undefined,
    generateAudio: undefined,
    providerOptions: {},
    headers: undefined,
    abortSignal: undefined,
    ...fields,
  };
}

/** The error `call` rejects with, or null. */
function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => null,
    (thrown: unknown) => thrown,
  );
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
    await expect(call).rejects.toThrow(/^fps: a common request has no frame rate, and leaving it out would make another clip; give a provider's native field in providerOptions\.mediagate\.provider_options\.<provider>$/);
    expect(world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
  });

  it("AI SDK video: resolution, duration, seed and generateAudio reach A's fields (resolution WxH as A's ratio and resolution, with a warning); n videos take seed, seed + 1; headers set are warned about, not sent", async () => {
    const { a, gate, mediagate } = await sandboxedA();
    const result = await generateVideo({
      model: mediagate.video(`a/${A_MODEL}`),
      prompt: "a lighthouse",
      resolution: "1280x720",
      duration: 5,
      seed: 42,
      generateAudio: true,
      n: 2,
      headers: { "x-trace": "abc" },
    });
    expect(result.videos).toHaveLength(2);
    const text = [{ type: "text", text: "a lighthouse" }];
    expect((await gate.list()).map((job) => job.body)).toEqual([
      { model: A_MODEL, content: text, generate_audio: true, ratio: "16:9", duration: 5, resolution: "720p", seed: 42 },
      { model: A_MODEL, content: text, generate_audio: true, ratio: "16:9", duration: 5, resolution: "720p", seed: 43 },
    ]);
    expect(a.tasks().map(({ kind, seed, resolution }) => ({ kind, seed, resolution }))).toEqual([
      { kind: "text_to_video", seed: 42, resolution: "720p" },
      { kind: "text_to_video", seed: 43, resolution: "720p" },
    ]);
    expect(result.warnings).toEqual([
      { type: "unsupported", feature: "headers", details: expect.stringMatching(/^not sent: x-trace; /) },
      { type: "other", message: "n 2 with seed 42: each video has its own seed (42 and 43), since one seed would make the same video 2 times, each paid for" },
      { type: "other", message: "size 1280x720 sent as ratio 16:9, resolution 720p (A takes a ratio and a resolution, not pixels)" },
    ]);
  });

  it("AI SDK video: the prompt's image (the SDK's start image) is the first frame: A makes a first-frame task from it", async () => {
    const { a, gate, mediagate } = await sandboxedA();
    const result = await generateVideo({ model: mediagate.video(`a/${A_MODEL}`), prompt: { image: FIRST_FRAME, text: "the tide goes out" }, aspectRatio: "adaptive" });
    const job = (await gate.get(videosMetadata(result.providerMetadata)[0]!.jobId))!;
    expect(job.body).toEqual({
      model: A_MODEL,
      ratio: "adaptive",
      content: [
        { type: "text", text: "the tide goes out" },
        { type: "image_url", image_url: { url: FIRST_FRAME }, role: "first_frame" },
      ],
    });
    expect(a.tasks()).toMatchObject([{ kind: "first_frame", status: "succeeded" }]);
  });

  it("AI SDK video: reference images given as links make A's reference-to-video task, each a reference_image in order", async () => {
    const { a, gate, mediagate } = await sandboxedA();
    const references = ["https://refs.example/keeper.png", "https://refs.example/boat.png"];
    const result = await generateVideo({ model: mediagate.video(`a/${A_MODEL}`), prompt: "the keeper rows out", inputReferences: references });
    const job = (await gate.get(videosMetadata(result.providerMetadata)[0]!.jobId))!;
    expect(job.body).toEqual({
      model: A_MODEL,
      content: [{ type: "text", text: "the keeper rows out" }, ...references.map((url) => ({ type: "image_url", image_url: { url }, role: "reference_image" }))],
    });
    expect(a.tasks()).toMatchObject([{ kind: "reference_to_video", status: "succeeded" }]);
  });

  it("AI SDK video: reference images as bytes reach A as files named reference-1, reference-2 (which A refuses, taking links); a reference video is refused as not an image; nothing is stored or sent", async () => {
    const { world, gate, mediagate } = await sandboxedA();
    const model = mediagate.video(`a/${A_MODEL}`);
    const files = generateVideo({ model, prompt: "the keeper rows out", inputReferences: [TINY_PNG, TINY_PNG] });
    await expect(files).rejects.toThrow(/reference_images: A takes media as links; the local files reference-1\.png, reference-2\.png cannot be sent/);
    const video = await rejectionOf(generateVideo({ model, prompt: "the keeper rows out", inputReferences: ["https://refs.example/keeper.png", { data: MP4_START, mediaType: "video/mp4" }] }));
    expect(UnsupportedFunctionalityError.isInstance(video)).toBe(true);
    expect(video).toMatchObject({ functionality: "inputReferences[1] of type video/mp4" });
    expect(world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
    expect(await gate.list()).toEqual([]);
  });

  it("AI SDK video: two first frames or two last frames are refused, counting each role; so is a start image that is not frameImages' first frame (one would be dropped)", async () => {
    const { world, gate, mediagate } = await sandboxedA();
    const model = mediagate.video(`a/${A_MODEL}`);
    const firsts = await rejectionOf(
      generateVideo({
        model,
        prompt: "the tide",
        frameImages: [
          { image: FIRST_FRAME, frameType: "first_frame" },
          { image: LAST_FRAME, frameType: "first_frame" },
        ],
      }),
    );
    expect(InvalidArgumentError.isInstance(firsts)).toBe(true);
    expect(firsts).toMatchObject({ argument: "frameImages", message: "frameImages: one first_frame and one last_frame at most, got 2 and 0" });
    const lasts = generateVideo({
      model,
      prompt: "the tide",
      frameImages: [
        { image: LAST_FRAME, frameType: "last_frame" },
        { image: FIRST_FRAME, frameType: "first_frame" },
        { image: LAST_FRAME, frameType: "last_frame" },
      ],
    });
    await expect(lasts).rejects.toMatchObject({ message: "frameImages: one first_frame and one last_frame at most, got 1 and 2" });

    // experimental_generateVideo passes the first_frame itself as `image`; a caller of doGenerate may pass two.
    const twice = await rejectionOf(
      model.doGenerate(videoCall({ image: { type: "url", url: LAST_FRAME }, frameImages: [{ image: { type: "url", url: FIRST_FRAME }, frameType: "first_frame" }] })),
    );
    expect(InvalidArgumentError.isInstance(twice)).toBe(true);
    expect(twice).toMatchObject({ argument: "image", message: "image and frameImages' first_frame are two different first frames; give one" });
    expect(world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
    expect(await gate.list()).toEqual([]);
  });

  it("AI SDK video: a frame that is not an image, or a link that is not http(s), is refused naming the frame", async () => {
    const { gate, mediagate } = await sandboxedA();
    const model = mediagate.video(`a/${A_MODEL}`);
    const first = await rejectionOf(model.doGenerate(videoCall({ frameImages: [{ image: { type: "file", mediaType: "video/mp4", data: MP4_START }, frameType: "first_frame" }] })));
    expect(first).toMatchObject({ functionality: "first frame of type video/mp4", message: "first frame: mediagate takes images (PNG, JPEG or WebP) here, not video/mp4" });
    const last = await rejectionOf(
      model.doGenerate(
        videoCall({
          frameImages: [
            { image: { type: "url", url: FIRST_FRAME }, frameType: "first_frame" },
            { image: { type: "url", url: "file:///frames/last.png" }, frameType: "last_frame" },
          ],
        }),
      ),
    );
    expect(InvalidArgumentError.isInstance(last)).toBe(true);
    expect(last).toMatchObject({ argument: "last frame", message: expect.stringMatching(/^last frame: "file:\/\/\/frames\/last\.png" is not an http\(s\) link/) });
    expect(await gate.list()).toEqual([]);
  });

  it("AI SDK video: the model answers the saved MP4 as binary data with its content type, the job in the metadata and the target as the response's model id", async () => {
    const { gate, mediagate } = await sandboxedA();
    const model = mediagate.video(`a/${A_MODEL}`);
    expect(model).toMatchObject({ specificationVersion: "v3", provider: "mediagate.video", modelId: `a/${A_MODEL}`, maxVideosPerCall: Number.MAX_SAFE_INTEGER });
    const before = Date.now();
    const result = await model.doGenerate(videoCall({ aspectRatio: "16:9" }));
    const [job] = await gate.list();
    const [output] = await gate.outputs(job!.id);
    expect(result.videos).toEqual([{ type: "binary", data: new Uint8Array(readFileSync(output!.path)), mediaType: "video/mp4" }]);
    expect(result.warnings).toEqual([]);
    expect(result.providerMetadata).toMatchObject({ mediagate: { videos: [{ jobId: job!.id, target: `a/${A_MODEL}`, path: output!.path, contentType: "video/mp4" }] } });
    expect(result.response).toEqual({ timestamp: expect.any(Date), modelId: `a/${A_MODEL}`, headers: undefined });
    expect(result.response.timestamp.getTime()).toBeGreaterThanOrEqual(before);
  });

  it("AI SDK video: an aspect ratio is sent as given (9:16, not A's default), and providerOptions.mediagate.provider_options reach A's body as native fields", async () => {
    const { a, gate, mediagate } = await sandboxedA();
    const result = await generateVideo({
      model: mediagate.video(`a/${A_MODEL}`),
      prompt: "a lighthouse, upright",
      aspectRatio: "9:16",
      providerOptions: { mediagate: { provider_options: { a: { camera_fixed: true } } } },
    });
    const job = (await gate.get(videosMetadata(result.providerMetadata)[0]!.jobId))!;
    expect(job.body).toEqual({ model: A_MODEL, content: [{ type: "text", text: "a lighthouse, upright" }], ratio: "9:16", camera_fixed: true });
    expect(a.tasks()).toMatchObject([{ kind: "text_to_video", requestedRatio: "9:16", status: "succeeded" }]);
  });
});

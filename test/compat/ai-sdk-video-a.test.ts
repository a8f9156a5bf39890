import { createByteDance } from "@ai-sdk/bytedance";
import { experimental_generateVideo as generateVideo } from "ai";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { probeVideo } from "../../src/sandbox/media/video-probe.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import { startCompatSandbox, type CompatSandbox } from "./sandbox.js";

/**
 * The Vercel AI SDK's ByteDance provider, unchanged but for its base URL,
 * against sandbox A (the same protocol): `experimental_generateVideo`
 * creates a task, polls it, and downloads `content.video_url`.
 */

const A_KEY = "sandbox-a-key";
const A_MODEL = "vidgen-2-0-250601";
const TASKS = /^\/a\/api\/v3\/contents\/generations\/tasks$/;
const TASK = /^\/a\/api\/v3\/contents\/generations\/tasks\/cgt-/;
/** A renders in 12 virtual seconds after 1 queued, at 60×: about 0.2 s of real time. */
const TIME_SCALE = 60;
/**
 * The SDK polls every 3 s by default; its documented per-call option keeps
 * the test to a fraction of a second, still polling while the task renders.
 */
const FAST_POLLING = { bytedance: { pollIntervalMs: 50 } };

/**
 * The SDK's default download refuses loopback and private addresses (its
 * guard against server-side request forgery); the sandbox is on loopback, so
 * the test passes the download function the SDK takes for this.
 */
async function download({ url, abortSignal }: { url: URL; abortSignal?: AbortSignal }): Promise<{ data: Uint8Array; mediaType: string | undefined }> {
  const response = await fetch(url, abortSignal ? { signal: abortSignal } : {});
  if (!response.ok) throw new Error(`downloading ${url.pathname} answered ${response.status}`);
  return { data: new Uint8Array(await response.arrayBuffer()), mediaType: response.headers.get("content-type") ?? undefined };
}

/** spec A usage in the sandbox: floor(width × height × 24 × seconds / 1024) of the nominal size (720p 16:9 = 1280x720). */
const TOKENS_720P_5S = Math.floor((1280 * 720 * 24 * 5) / 1024);

beforeAll(() => {
  (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
});

let running: CompatSandbox | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function sandboxedA() {
  running = await startCompatSandbox({ timeScale: TIME_SCALE, queueMs: { a: 1_000 }, renderMs: { a: 12_000 } });
  const byteDance = createByteDance({ baseURL: `${running.sandbox.url}/a/api/v3`, apiKey: A_KEY });
  return { running, a: running.emulators.a, byteDance };
}

function usageOf(providerMetadata: unknown): { completion_tokens: number } {
  return (providerMetadata as { bytedance: { usage: { completion_tokens: number } } }).bytedance.usage;
}

describe("compat: AI SDK experimental_generateVideo with @ai-sdk/bytedance against sandbox A", () => {
  it("A via the AI SDK: text-to-video creates one task, polls it until it succeeds, and gets the MP4 (H.264, 16:9) with its token usage", async () => {
    const { running, a, byteDance } = await sandboxedA();
    const result = await generateVideo({
      model: byteDance.video(A_MODEL),
      prompt: "a lighthouse at dusk",
      aspectRatio: "16:9",
      duration: 5,
      providerOptions: FAST_POLLING,
      download,
    });

    expect(result.videos).toHaveLength(1);
    expect(result.video.mediaType).toBe("video/mp4");
    const probe = probeVideo(Buffer.from(result.video.uint8Array));
    expect(probe).toMatchObject({ container: "mp4", codec: "avc1" });
    expect(probe.width * 9).toBe(probe.height * 16);
    expect(result.warnings).toEqual([]);

    const [task] = a.tasks();
    expect(task).toMatchObject({ model: A_MODEL, kind: "text_to_video", requestedRatio: "16:9", duration: 5, resolution: "720p", status: "succeeded", downloads: 1 });
    const metadata = (result.providerMetadata as { bytedance: { taskId: string } }).bytedance;
    expect(metadata.taskId).toBe(task!.id);
    expect(usageOf(result.providerMetadata).completion_tokens).toBe(TOKENS_720P_5S);

    const [create] = running.arrived(TASKS, "POST");
    expect(create!.body).toEqual({ model: A_MODEL, content: [{ type: "text", text: "a lighthouse at dusk" }], ratio: "16:9", duration: 5 });
    expect(create!.headers.authorization).toBe(`Bearer ${A_KEY}`);
    expect(running.arrived(TASK, "GET").length).toBeGreaterThanOrEqual(2);
  });

  it("A via the AI SDK: first and last frame without an aspect ratio (the SDK sends no ratio) is accepted as A's default, adaptive, and succeeds", async () => {
    const { running, a, byteDance } = await sandboxedA();
    const first = renderPng(64, 36, "the beach at low tide", 1);
    const last = renderPng(64, 36, "the beach at high tide", 2);
    const result = await generateVideo({
      model: byteDance.video(A_MODEL),
      prompt: "the tide comes in",
      frameImages: [
        { image: first, frameType: "first_frame" },
        { image: last, frameType: "last_frame" },
      ],
      duration: 5,
      providerOptions: FAST_POLLING,
      download,
    });

    const probe = probeVideo(Buffer.from(result.video.uint8Array));
    expect(probe.container).toBe("mp4");
    // An adaptive task is rendered at the sandbox's adaptive ratio, 16:9.
    expect(probe.width * 9).toBe(probe.height * 16);
    expect(usageOf(result.providerMetadata).completion_tokens).toBe(TOKENS_720P_5S);

    const [create] = running.arrived(TASKS, "POST");
    expect(create!.statusCode).toBe(200);
    expect(create!.body).not.toHaveProperty("ratio");
    expect(create!.body!.content).toEqual([
      { type: "text", text: "the tide comes in" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${first.toString("base64")}` }, role: "first_frame" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${last.toString("base64")}` }, role: "last_frame" },
    ]);
    expect(a.tasks()).toMatchObject([{ kind: "first_frame", requestedRatio: "adaptive", ratio: "16:9", status: "succeeded" }]);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { createAEmulator, type AEmulator } from "../../src/sandbox/a/index.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

/**
 * Where spec A shows no default, a field a client leaves out is the
 * service's default and is accepted (README "Where the spec says 'not
 * shown'"). The bodies are what third-party clients send: @ai-sdk/bytedance
 * omits `ratio` unless asked for one, and sends frames as data URIs.
 */

const KEY = "sandbox-a-key";
const MODEL = "vidgen-2-0-250601";
const TASKS = "/a/api/v3/contents/generations/tasks";
const FRAME_DATA_URI = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

let sandbox: Sandbox | undefined;
let emulator: AEmulator;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

async function start(): Promise<void> {
  emulator = createAEmulator();
  sandbox = await startSandbox({ providers: ["a"], emulators: { a: emulator } });
}

async function create(body: Record<string, unknown>): Promise<{ status: number; body: { id?: string; error?: { param?: string } } }> {
  const response = await fetch(`${sandbox!.url}${TASKS}`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, ...body }),
  });
  return { status: response.status, body: (await response.json()) as { id?: string } };
}

async function taskObject(id: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${sandbox!.url}${TASKS}/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
  return (await response.json()) as Record<string, unknown>;
}

const text = (prompt: string) => ({ type: "text", text: prompt });
const frame = (role: "first_frame" | "last_frame", url = FRAME_DATA_URI) => ({ type: "image_url", image_url: { url }, role });
const referenceVideo = () => ({ type: "video_url", video_url: { url: "https://clips.example/source.mp4" }, role: "reference_video" });

describe("A: where the spec shows no default, an omitted field is the service default", () => {
  it("A: a first and last frame task without ratio is accepted as adaptive (the default is not shown, so omission is not 'other than adaptive')", async () => {
    await start();
    // Exactly @ai-sdk/bytedance's body for frameImages [first_frame, last_frame] and no aspectRatio.
    const created = await create({ content: [text("the tide comes in"), frame("first_frame"), frame("last_frame", "https://frames.example/last.png")], duration: 5 });
    expect(created.status).toBe(200);
    expect(emulator.task(created.body.id!)).toMatchObject({ kind: "first_frame", requestedRatio: "adaptive", ratio: "16:9", duration: 5 });
    expect(await taskObject(created.body.id!)).toMatchObject({ status: "queued", ratio: "16:9" });
  });

  it("A: a single first frame, a video extension and a video editing task without ratio are adaptive too", async () => {
    await start();
    const firstOnly = await create({ content: [frame("first_frame")] });
    const extension = await create({ content: [text("keep going"), referenceVideo()], omni_reference_task_type: "video_extension" });
    const editing = await create({ content: [text("make it night"), referenceVideo()], omni_reference_task_type: "video_editing", duration: -1 });
    expect([firstOnly.status, extension.status, editing.status]).toEqual([200, 200, 200]);
    expect([firstOnly, extension, editing].map((created) => emulator.task(created.body.id!)?.requestedRatio)).toEqual(["adaptive", "adaptive", "adaptive"]);
  });

  it("A: video editing without duration is accepted as -1, the only duration editing may have", async () => {
    await start();
    const created = await create({ content: [text("make it night"), referenceVideo()], omni_reference_task_type: "video_editing", ratio: "adaptive" });
    expect(created.status).toBe(200);
    expect(emulator.task(created.body.id!)).toMatchObject({ kind: "video_editing", duration: -1 });
    expect(await taskObject(created.body.id!)).toMatchObject({ duration: -1 });
  });

  it("A: an omitted ratio and duration on text-to-video are 16:9 and 5 s", async () => {
    await start();
    const created = await create({ content: [text("a lighthouse at dusk")] });
    expect(created.status).toBe(200);
    expect(emulator.task(created.body.id!)).toMatchObject({ kind: "text_to_video", requestedRatio: "16:9", ratio: "16:9", duration: 5 });
  });

  it("A: only a ratio the client sent can break the adaptive rule: an explicit 16:9, in the body or as a prompt flag, is still refused on ratio", async () => {
    await start();
    const inBody = await create({ content: [text("x"), frame("first_frame"), frame("last_frame")], ratio: "16:9" });
    const asFlag = await create({ content: [text("x --rt 16:9"), frame("first_frame"), frame("last_frame")] });
    for (const refused of [inBody, asFlag]) {
      expect(refused.status).toBe(400);
      expect(refused.body.error?.param).toBe("ratio");
    }
  });
});

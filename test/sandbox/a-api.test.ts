import { afterEach, describe, expect, it } from "vitest";
import { createAEmulator, type AEmulator, type AEmulatorOptions } from "../../src/sandbox/a/index.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

const STANDARD_KEY = "sandbox-a-key";
const ENTERPRISE_KEY = "sandbox-a-enterprise-key";
const NEWEST = "vidgen-2-0-250601";
const OLDER = "vidgen-1-5-250301";
const TASKS = "/a/api/v3/contents/generations/tasks";
const PLAN_TASKS = "/a/api/plan/v3/contents/generations/tasks";

let sandbox: Sandbox | undefined;
let emulator: AEmulator;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

async function start(options: AEmulatorOptions = {}): Promise<Sandbox> {
  emulator = createAEmulator(options);
  sandbox = await startSandbox({ providers: ["a"], emulators: { a: emulator } });
  return sandbox;
}

interface Answer {
  status: number;
  body: { id?: string; status?: string; error?: { code: string; message: string; param?: string } } & Record<string, unknown>;
}

async function call(method: "GET" | "POST", path: string, body?: unknown, key: string | null = STANDARD_KEY): Promise<Answer> {
  const headers: Record<string, string> = method === "POST" ? { "content-type": "application/json" } : {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`${sandbox!.url}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Answer["body"] };
}

const text = (prompt: string) => ({ type: "text", text: prompt });
const image = (role: string, url = "https://example.com/frame.png") => ({ type: "image_url", image_url: { url }, role });
const video = (url = "https://example.com/clip.mp4") => ({ type: "video_url", video_url: { url }, role: "reference_video" });
const audio = (url = "https://example.com/voice.mp3") => ({ type: "audio_url", audio_url: { url }, role: "reference_audio" });

function create(body: Record<string, unknown>, key?: string) {
  return call("POST", TASKS, { model: NEWEST, ...body }, key);
}

function expectRejectedOn(answer: Answer, param: string) {
  expect(answer.status).toBe(400);
  expect(answer.body.error?.code).toBe("InvalidParameter");
  expect(answer.body.error?.param).toBe(param);
}

describe("A: paths and keys", () => {
  it("A: a create answers an id that starts with cgt-, and the task reads back", async () => {
    await start();
    const created = await create({ content: [text("a fox in the snow")] });
    expect(created.status).toBe(200);
    expect(created.body.id).toMatch(/^cgt-/);
    const read = await call("GET", `${TASKS}/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: created.body.id, model: NEWEST, status: "queued" });
  });

  it("A: a missing or unknown Bearer key gets 401", async () => {
    await start();
    expect((await create({ content: [text("x")] }, "not-a-key")).status).toBe(401);
    const missing = await call("POST", TASKS, { model: NEWEST, content: [text("x")] }, null);
    expect(missing.status).toBe(401);
    expect(missing.body.error?.code).toBe("AuthenticationError");
  });

  it("A: an enterprise key on the standard path is refused", async () => {
    await start();
    const answer = await create({ content: [text("x")] }, ENTERPRISE_KEY);
    expect(answer.status).toBe(403);
    expect(answer.body.error?.code).toBe("KeyPlanMismatch");
    expect(emulator.tasks()).toHaveLength(0);
  });

  it("A: a standard key on the enterprise path is refused", async () => {
    await start();
    const answer = await call("POST", PLAN_TASKS, { model: NEWEST, content: [text("x")] }, STANDARD_KEY);
    expect(answer.status).toBe(403);
    expect(answer.body.error?.code).toBe("KeyPlanMismatch");
  });

  it("A: the enterprise key works on /api/plan/v3, for both create and read", async () => {
    await start();
    const created = await call("POST", PLAN_TASKS, { model: NEWEST, content: [text("x")] }, ENTERPRISE_KEY);
    expect(created.status).toBe(200);
    expect((await call("GET", `${PLAN_TASKS}/${created.body.id}`, undefined, ENTERPRISE_KEY)).status).toBe(200);
    expect(emulator.task(created.body.id!)?.plan).toBe("enterprise");
  });

  it("A: keys are configurable", async () => {
    await start({ standardKeys: ["mine"], enterpriseKeys: ["ours"] });
    expect((await create({ content: [text("x")] }, "mine")).status).toBe(200);
    expect((await create({ content: [text("x")] }, STANDARD_KEY)).status).toBe(401);
  });

  it("A: no /v1/ or /v2/ API version exists", async () => {
    await start();
    for (const path of ["/a/api/v1/contents/generations/tasks", "/a/api/v2/contents/generations/tasks", "/a/v2/tasks"]) {
      const answer = await call("POST", path, { model: NEWEST, content: [text("x")] });
      expect(answer.status).toBe(404);
      expect(answer.body.error?.message).toMatch(/no such API version/);
    }
  });

  it("A: a task is visible only to the key that created it", async () => {
    await start({ standardKeys: [STANDARD_KEY, "other-key"] });
    const created = await create({ content: [text("x")] });
    expect((await call("GET", `${TASKS}/${created.body.id}`, undefined, "other-key")).status).toBe(404);
  });

  it("A: an unknown task id is 404", async () => {
    await start();
    expect((await call("GET", `${TASKS}/cgt-nothing`)).status).toBe(404);
  });

  it("A: a body that is not valid JSON is refused naming the body", async () => {
    await start();
    const response = await fetch(`${sandbox!.url}${TASKS}`, {
      method: "POST",
      headers: { authorization: `Bearer ${STANDARD_KEY}`, "content-type": "application/json" },
      body: "{",
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as Answer["body"]).error?.param).toBe("body");
  });
});

describe("A: request validation", () => {
  it("A: model is required and must be a configured model", async () => {
    await start();
    expectRejectedOn(await call("POST", TASKS, { content: [text("x")] }), "model");
    expectRejectedOn(await create({ model: "vidgen-9-9-990101", content: [text("x")] }), "model");
  });

  it("A: content is a non-empty array of items of a known type", async () => {
    await start();
    expectRejectedOn(await create({ content: "a fox" }), "content");
    expectRejectedOn(await create({ content: [] }), "content");
    expectRejectedOn(await create({ content: [{ type: "gif", url: "x" }] }), "content[0].type");
    expectRejectedOn(await create({ content: [{ type: "text" }] }), "content[0].text");
    const noUrl = { type: "image_url", image_url: {}, role: "reference_image" };
    expectRejectedOn(await create({ content: [text("x"), noUrl] }), "content[1].image_url.url");
  });

  it("A: media items require a role that fits their type", async () => {
    await start();
    const noRole = { type: "image_url", image_url: { url: "https://e.com/a.png" } };
    expectRejectedOn(await create({ content: [text("x"), noRole] }), "content[1].role");
    expectRejectedOn(await create({ content: [text("x"), { ...video(), role: "reference_image" }] }), "content[1].role");
    expectRejectedOn(await create({ content: [text("x"), image("sideways")] }), "content[1].role");
  });

  it("A: video and audio items are video_url and audio_url objects", async () => {
    await start();
    const answer = await create({ content: [text("x"), image("reference_image"), video(), audio()] });
    expect(answer.status).toBe(200);
    expect(emulator.task(answer.body.id!)?.kind).toBe("reference_to_video");
  });

  it("A: first_frame tasks require ratio adaptive", async () => {
    await start();
    expectRejectedOn(await create({ content: [text("x"), image("first_frame")], ratio: "16:9" }), "ratio");
    const firstAndLast = await create({ content: [image("first_frame"), image("last_frame")], ratio: "adaptive" });
    expect(firstAndLast.status).toBe(200);
    expect(emulator.task(firstAndLast.body.id!)?.kind).toBe("first_frame");
  });

  it("A: a last_frame needs a first_frame, and frames do not mix with references", async () => {
    await start();
    expectRejectedOn(await create({ content: [image("last_frame")], ratio: "adaptive" }), "content");
    expectRejectedOn(await create({ content: [image("first_frame"), image("reference_image")], ratio: "adaptive" }), "content");
  });

  it("A: video editing requires ratio adaptive and duration -1", async () => {
    await start();
    const editing = { content: [text("make it night"), video()], omni_reference_task_type: "video_editing" };
    expectRejectedOn(await create({ ...editing, ratio: "16:9", duration: -1 }), "ratio");
    expectRejectedOn(await create({ ...editing, ratio: "adaptive", duration: 5 }), "duration");
    const accepted = await create({ ...editing, ratio: "adaptive", duration: -1 });
    expect(accepted.status).toBe(200);
    expect(emulator.task(accepted.body.id!)?.kind).toBe("video_editing");
  });

  it("A: video editing's reference video must be 4 to 30 seconds long (when its length is known)", async () => {
    await start({ referenceVideoSeconds: (url) => (url.endsWith("short.mp4") ? 2 : 12) });
    const editing = { omni_reference_task_type: "video_editing", ratio: "adaptive", duration: -1 };
    expectRejectedOn(await create({ ...editing, content: [text("x"), video("https://e.com/short.mp4")] }), "content[1].video_url");
    expect((await create({ ...editing, content: [text("x"), video("https://e.com/long.mp4")] })).status).toBe(200);
  });

  it("A: video extension requires ratio adaptive and exactly one reference video", async () => {
    await start();
    const extension = { omni_reference_task_type: "video_extension" };
    expectRejectedOn(await create({ ...extension, content: [text("x"), video()], ratio: "16:9" }), "ratio");
    expectRejectedOn(await create({ ...extension, content: [text("x"), video(), video()], ratio: "adaptive" }), "content");
    expect((await create({ ...extension, content: [text("x"), video()], ratio: "adaptive", duration: 10 })).status).toBe(200);
  });

  it("A: a declared omni_reference_task_type must match the content", async () => {
    await start();
    expectRejectedOn(await create({ content: [text("x")], omni_reference_task_type: "reference_to_video" }), "omni_reference_task_type");
    expectRejectedOn(await create({ content: [text("x")], omni_reference_task_type: "remix" }), "omni_reference_task_type");
    expect((await create({ content: [text("x")], omni_reference_task_type: "text_to_video" })).status).toBe(200);
  });

  it("A: duration is 4 to 30 seconds, and -1 only for editing", async () => {
    await start();
    expectRejectedOn(await create({ content: [text("x")], duration: 3 }), "duration");
    expectRejectedOn(await create({ content: [text("x")], duration: 31 }), "duration");
    expectRejectedOn(await create({ content: [text("x")], duration: -1 }), "duration");
    expectRejectedOn(await create({ content: [text("x")], duration: 4.5 }), "duration");
    expect((await create({ content: [text("x")], duration: 30 })).status).toBe(200);
  });

  it("A: ratio, resolution and output_format accept only the listed values", async () => {
    await start();
    expectRejectedOn(await create({ content: [text("x")], ratio: "2:1" }), "ratio");
    expectRejectedOn(await create({ content: [text("x")], resolution: "4k" }), "resolution");
    expectRejectedOn(await create({ content: [text("x")], output_format: "webm" }), "output_format");
    expectRejectedOn(await create({ content: [text("x")], watermark: "yes" }), "watermark");
    expectRejectedOn(await create({ content: [text("x")], callback_url: "ftp://e.com/hook" }), "callback_url");
    for (const ratio of ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16", "adaptive"]) {
      expect((await create({ content: [text("x")], ratio, resolution: "1080p" })).status).toBe(200);
    }
  });

  it("A: the newest generation allows 50 media items: at most 30 images, 10 videos, 10 audio", async () => {
    await start();
    const images = (n: number) => Array.from({ length: n }, () => image("reference_image"));
    const videos = (n: number) => Array.from({ length: n }, () => video());
    const audios = (n: number) => Array.from({ length: n }, () => audio());
    expect((await create({ content: [text("x"), ...images(30), ...videos(10), ...audios(10)] })).status).toBe(200);
    expectRejectedOn(await create({ content: [text("x"), ...images(31)] }), "content");
    expectRejectedOn(await create({ content: [text("x"), ...videos(11)] }), "content");
    expectRejectedOn(await create({ content: [text("x"), ...audios(11)] }), "content");
  });

  it("A: older model series allow at most 15 items", async () => {
    await start();
    const images = (n: number) => Array.from({ length: n }, () => image("reference_image"));
    expect((await create({ model: OLDER, content: [text("x"), ...images(15)] })).status).toBe(200);
    expectRejectedOn(await create({ model: OLDER, content: [text("x"), ...images(16)] }), "content");
  });

  it("A: audio-only content is allowed only on the newest generation", async () => {
    await start();
    expect((await create({ content: [text("sing"), audio()] })).status).toBe(200);
    expectRejectedOn(await create({ model: OLDER, content: [text("sing"), audio()] }), "content");
    expect((await create({ model: OLDER, content: [text("sing"), audio(), image("reference_image")] })).status).toBe(200);
  });

  it("A: the newest generation is the highest configured one", async () => {
    await start({ models: ["vidgen-1-5-250301", "vidgen-1-0-241115"] });
    expect(emulator.models.find((model) => model.id === "vidgen-1-5-250301")?.newestGeneration).toBe(true);
    expect((await call("POST", TASKS, { model: "vidgen-1-5-250301", content: [text("sing"), audio()] })).status).toBe(200);
    expectRejectedOn(await create({ content: [text("x")] }), "model");
  });
});

describe("A: prompt-suffix flags", () => {
  it("A: prompt flags fill the fields the body left out", async () => {
    await start();
    const created = await create({ content: [text("a fox --rs 480p --rt 9:16 --dur 8 --seed 42 --cf true --wm false")] });
    expect(created.status).toBe(200);
    const read = await call("GET", `${TASKS}/${created.body.id}`);
    expect(read.body).toMatchObject({ resolution: "480p", ratio: "9:16", duration: 8, seed: 42 });
  });

  it("A: prompt flags are weakly validated: a malformed value is ignored, not an error", async () => {
    await start();
    const created = await create({ content: [text("a fox --rs 4k --dur soon --cf maybe")] });
    expect(created.status).toBe(200);
    const task = emulator.task(created.body.id!)!;
    expect(task.resolution).toBe("720p");
    expect(task.duration).toBe(5);
    expect(task.ignoredFlags).toHaveLength(3);
  });

  it("A: body fields win over prompt flags", async () => {
    await start();
    const created = await create({ content: [text("a fox --rt 1:1")], ratio: "4:3" });
    expect(emulator.task(created.body.id!)?.ratio).toBe("4:3");
    expect(emulator.task(created.body.id!)?.ignoredFlags).toEqual(["ratio flag (the body field wins)"]);
  });

  it("A: a well-formed flag is held to the same rules as the body field", async () => {
    await start();
    expectRejectedOn(await create({ content: [text("x --rt 16:9"), image("first_frame")] }), "ratio");
    expect((await create({ content: [text("x --rt adaptive"), image("first_frame")] })).status).toBe(200);
  });
});

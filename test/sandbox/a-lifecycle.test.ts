import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createAEmulator, type AEmulator, type AEmulatorOptions, type ATaskObject } from "../../src/sandbox/a/index.js";
import { probeVideo } from "../../src/sandbox/media/video-probe.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

const KEY = "sandbox-a-key";
const NEWEST = "vidgen-2-0-250601";
const OLDER = "vidgen-1-5-250301";
const TASKS = "/a/api/v3/contents/generations/tasks";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let sandbox: Sandbox | undefined;
let emulator: AEmulator;
let hookServer: Server | undefined;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
  await new Promise<void>((resolve) => {
    if (!hookServer) return resolve();
    hookServer.close(() => resolve());
    hookServer.closeAllConnections();
  });
  hookServer = undefined;
});

/** Fixed queue and render times, so that a clock.advance() lands in a known status. */
async function start(options: AEmulatorOptions = {}): Promise<Sandbox> {
  emulator = createAEmulator({ queueMs: 1_000, renderMs: 30_000, ...options });
  sandbox = await startSandbox({ providers: ["a"], emulators: { a: emulator } });
  return sandbox;
}

const advance = (ms: number) => sandbox!.clock.advance(ms);
const text = (prompt: string) => ({ type: "text", text: prompt });

async function create(body: Record<string, unknown> = {}): Promise<string> {
  const response = await fetch(`${sandbox!.url}${TASKS}`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: NEWEST, content: [text("a lighthouse at dusk")], ...body }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
}

async function read(id: string): Promise<{ status: number; task: ATaskObject }> {
  const response = await fetch(`${sandbox!.url}${TASKS}/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
  return { status: response.status, task: (await response.json()) as ATaskObject };
}

async function finishedTask(body: Record<string, unknown> = {}): Promise<ATaskObject> {
  const id = await create(body);
  advance(31_001);
  const { task } = await read(id);
  expect(task.status).toBe("succeeded");
  return task;
}

describe("A: task states", () => {
  it("A: a task goes queued, running, succeeded, and only then carries content.video_url and usage", async () => {
    await start();
    const id = await create({ resolution: "720p", ratio: "16:9", duration: 5 });
    const queued = (await read(id)).task;
    expect(queued.status).toBe("queued");
    expect(queued.content).toBeUndefined();
    advance(1_000);
    expect((await read(id)).task.status).toBe("running");
    advance(30_000);
    const done = (await read(id)).task;
    expect(done).toMatchObject({ id, model: NEWEST, status: "succeeded", duration: 5, resolution: "720p", ratio: "16:9" });
    expect(done.content?.video_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/a\/results\//);
    // Sandbox formula: 1280 × 720 × 24 fps × 5 s / 1024.
    expect(done.usage).toEqual({ completion_tokens: 108_000, total_tokens: 108_000 });
    expect(typeof done.created_at).toBe("number");
    expect(done).toMatchObject({ output_format: "mp4", draft: false });
    expect(typeof done.seed).toBe("number");
  });

  it("A: a high time scale moves tasks with no clock.advance()", async () => {
    emulator = createAEmulator({ queueMs: 1_000, renderMs: 30_000 });
    sandbox = await startSandbox({ providers: ["a"], emulators: { a: emulator }, timeScale: 1_000 });
    const id = await create();
    await vi.waitFor(async () => expect((await read(id)).task.status).toBe("succeeded"), { timeout: 2_000, interval: 20 });
  });

  it("A: injected outcomes end failed or expired, with no video URL", async () => {
    await start();
    emulator.injectOutcome("failed");
    emulator.injectOutcome("expired");
    const failed = await create();
    const expired = await create();
    advance(31_001);
    const failedTask = (await read(failed)).task;
    expect(failedTask.status).toBe("failed");
    expect(failedTask.content).toBeUndefined();
    expect(failedTask.error?.code).toBe("GenerationFailed");
    expect((await read(expired)).task.status).toBe("expired");
  });

  it("A: only a queued task can be cancelled, and there is no public cancel route", async () => {
    await start();
    const queued = await create();
    expect(emulator.cancelTask(queued)).toBe("cancelled");
    expect((await read(queued)).task.status).toBe("cancelled");
    const running = await create();
    advance(1_000);
    expect(emulator.cancelTask(running)).toBe("not_queued");
    expect(emulator.cancelTask("cgt-unknown")).toBe("not_found");
    for (const method of ["DELETE", "POST"]) {
      const response = await fetch(`${sandbox!.url}${TASKS}/${running}${method === "POST" ? "/cancel" : ""}`, {
        method,
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(response.status).toBe(404);
    }
  });

  it("A: a cancelled record disappears 24 hours later", async () => {
    await start();
    const id = await create();
    emulator.cancelTask(id);
    advance(DAY - 1_000);
    expect((await read(id)).task.status).toBe("cancelled");
    advance(1_000);
    expect((await read(id)).status).toBe(404);
  });

  it("A: a task older than 7 days no longer exists", async () => {
    await start();
    const id = await create();
    advance(7 * DAY - 1_000);
    expect((await read(id)).status).toBe(200);
    advance(1_000);
    expect((await read(id)).status).toBe(404);
    expect(emulator.task(id)).toBeUndefined();
  });
});

describe("A: results", () => {
  it("A: serves a real MP4 of the requested ratio", async () => {
    await start();
    const expected = { "21:9": [168, 72], "16:9": [128, 72], "4:3": [96, 72], "1:1": [72, 72], "3:4": [72, 96], "9:16": [72, 128] };
    for (const [ratio, [width, height]] of Object.entries(expected)) {
      const task = await finishedTask({ ratio });
      const response = await fetch(task.content!.video_url);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("video/mp4");
      const probe = probeVideo(Buffer.from(await response.arrayBuffer()));
      expect(probe).toMatchObject({ container: "mp4", codec: "avc1", width, height });
    }
  });

  it("A: output_format mov serves a real QuickTime file", async () => {
    await start();
    const task = await finishedTask({ ratio: "9:16", output_format: "mov" });
    expect(task.output_format).toBe("mov");
    const response = await fetch(task.content!.video_url);
    expect(response.headers.get("content-type")).toBe("video/quicktime");
    expect(probeVideo(Buffer.from(await response.arrayBuffer()))).toMatchObject({ majorBrand: "qt  ", width: 72, height: 128 });
  });

  it("A: an adaptive task is rendered at one concrete ratio (16:9 unless configured)", async () => {
    await start({ adaptiveRatio: "1:1" });
    const task = await finishedTask({
      content: [{ type: "image_url", image_url: { url: "https://e.com/a.png" }, role: "first_frame" }],
      ratio: "adaptive",
    });
    expect(task.ratio).toBe("1:1");
    const bytes = Buffer.from(await (await fetch(task.content!.video_url)).arrayBuffer());
    expect(probeVideo(bytes)).toMatchObject({ width: 72, height: 72 });
  });

  it("A: the result URL is valid 24 hours after the task succeeded", async () => {
    await start();
    const task = await finishedTask();
    advance(DAY - 2_000);
    expect((await read(task.id)).task.content?.video_url).toBe(task.content?.video_url);
    expect((await fetch(task.content!.video_url)).status).toBe(200);
    advance(2_000);
    const expired = await fetch(task.content!.video_url);
    expect(expired.status).toBe(403);
    expect(((await expired.json()) as { error: { code: string } }).error.code).toBe("RequestExpired");
  });

  it("A: a tampered result URL is refused", async () => {
    await start();
    const task = await finishedTask();
    const tampered = task.content!.video_url.replace(/sig=[0-9a-f]/, "sig=g");
    expect((await fetch(tampered)).status).toBe(403);
  });

  it("A: the result URL allows at most 100 downloads", async () => {
    await start();
    const task = await finishedTask();
    for (let i = 0; i < 100; i++) {
      const response = await fetch(task.content!.video_url);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    const refused = await fetch(task.content!.video_url);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("DownloadLimitExceeded");
    expect(emulator.task(task.id)?.downloads).toBe(100);
  });

  it("A: an older generation's result URL has no download cap", async () => {
    await start({ newestGenerationDownloadLimit: 2 });
    const task = await finishedTask({ model: OLDER });
    for (let i = 0; i < 3; i++) expect((await fetch(task.content!.video_url)).status).toBe(200);
  });
});

describe("A: callbacks", () => {
  async function listen(): Promise<{ url: string; received: unknown[] }> {
    const received: unknown[] = [];
    hookServer = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        received.push({ headers: request.headers, body: JSON.parse(body) as unknown });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => hookServer!.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/hook`, received };
  }

  it("A: callback_url receives the finished task object once, unsigned JSON", async () => {
    await start();
    const hook = await listen();
    const id = await create({ callback_url: hook.url });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(hook.received).toHaveLength(0);
    advance(31_001);
    await vi.waitFor(() => expect(hook.received).toHaveLength(1), { timeout: 2_000, interval: 10 });
    const [delivery] = hook.received as { headers: Record<string, string>; body: ATaskObject }[];
    expect(delivery!.headers["content-type"]).toBe("application/json");
    expect(delivery!.body).toMatchObject({ id, status: "succeeded" });
    expect(delivery!.body.content?.video_url).toBeTruthy();
    await vi.waitFor(() => expect(emulator.callbacks()[0]).toMatchObject({ taskId: id, state: "sent", statusCode: 204 }));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(hook.received).toHaveLength(1);
  });

  it("A: a non-loopback callback_url is accepted but never called", async () => {
    await start();
    const id = await create({ callback_url: "https://hooks.example.com/a" });
    expect(emulator.callbacks()).toEqual([
      { taskId: id, url: "https://hooks.example.com/a", state: "skipped", error: "not a loopback address" },
    ]);
  });
});

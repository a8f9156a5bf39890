import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { createCEmulator, type CEmulator, type CEmulatorOptions } from "../../src/sandbox/c/index.js";
import { probeVideo } from "../../src/sandbox/media/video-probe.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

const KEY = "sandbox-c-key";
const SUBMIT = "/c/openapi/v2/video/text/generate";
const RESULT = "/c/openapi/v2/video/result";
/** The body with every value the spec shows ("Values seen"). */
const SEEN_BODY = {
  prompt: "a paper boat on a river",
  model: "v6",
  aspect_ratio: "16:9",
  duration: 5,
  quality: "720p",
  motion_mode: "normal",
  seed: 0,
};

let sandbox: Sandbox | undefined;
let emulator: CEmulator;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

async function start(options: CEmulatorOptions = {}): Promise<void> {
  emulator = createCEmulator({ renderMs: 60_000, ...options });
  sandbox = await startSandbox({ providers: ["c"], emulators: { c: emulator } });
}

interface Envelope {
  httpStatus: number;
  ErrCode: number;
  ErrMsg: string;
  Resp: { video_id?: string; status?: number; url?: string };
}

async function envelope(response: Response): Promise<Envelope> {
  return { httpStatus: response.status, ...((await response.json()) as Omit<Envelope, "httpStatus">) };
}

function headers(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const all: Record<string, string | undefined> = {
    "api-key": KEY,
    "ai-trace-id": randomUUID(),
    "content-type": "application/json",
    ...overrides,
  };
  return Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

async function submit(body: Record<string, unknown> = SEEN_BODY, overrides: Record<string, string | undefined> = {}): Promise<Envelope> {
  return envelope(await fetch(`${sandbox!.url}${SUBMIT}`, { method: "POST", headers: headers(overrides), body: JSON.stringify(body) }));
}

async function result(videoId: string, overrides: Record<string, string | undefined> = {}): Promise<Envelope> {
  const { "content-type": _json, ...getHeaders } = headers(overrides);
  return envelope(await fetch(`${sandbox!.url}${RESULT}/${videoId}`, { headers: getHeaders }));
}

const advance = (ms: number) => sandbox!.clock.advance(ms);

describe("C: submit and result", () => {
  it("C: submit answers { ErrCode 0, Resp.video_id }; the result is 5 while generating, then 1 with a url", async () => {
    await start();
    const submitted = await submit();
    expect(submitted).toMatchObject({ httpStatus: 200, ErrCode: 0, ErrMsg: "success" });
    const videoId = submitted.Resp.video_id!;
    expect(typeof videoId).toBe("string");
    expect((await result(videoId)).Resp).toEqual({ video_id: videoId, status: 5 });
    advance(60_000);
    const done = await result(videoId);
    expect(done).toMatchObject({ ErrCode: 0, Resp: { video_id: videoId, status: 1 } });
    expect(done.Resp.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/c\/results\//);
  });

  it("C: serves a real MP4 of the requested aspect ratio", async () => {
    await start();
    for (const [aspectRatio, width, height] of [["16:9", 128, 72], ["9:16", 72, 128], ["1:1", 72, 72]] as const) {
      const videoId = (await submit({ ...SEEN_BODY, aspect_ratio: aspectRatio })).Resp.video_id!;
      advance(60_000);
      const response = await fetch((await result(videoId)).Resp.url!);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("video/mp4");
      expect(probeVideo(Buffer.from(await response.arrayBuffer()))).toMatchObject({ container: "mp4", codec: "avc1", width, height });
    }
  });

  it("C: a missing or unknown API-KEY is an error envelope, with HTTP 200 by default", async () => {
    await start();
    expect(await submit(SEEN_BODY, { "api-key": "nope" })).toMatchObject({ httpStatus: 200, ErrCode: 400010, Resp: {} });
    expect(await submit(SEEN_BODY, { "api-key": undefined })).toMatchObject({ httpStatus: 200, ErrCode: 400010 });
    expect(emulator.tasks()).toHaveLength(0);
  });

  it("C: errorHttpStatus by-error pairs error envelopes with 4xx/5xx statuses", async () => {
    await start({ errorHttpStatus: "by-error", tier: "free" });
    expect((await submit(SEEN_BODY, { "api-key": "nope" })).httpStatus).toBe(401);
    for (let i = 0; i < 3; i++) await submit();
    expect(await submit()).toMatchObject({ httpStatus: 429, ErrCode: 500044 });
  });

  it("C: Ai-trace-id must be present and UUID-shaped, on submit and result alike", async () => {
    await start();
    expect((await submit(SEEN_BODY, { "ai-trace-id": undefined })).ErrCode).toBe(400011);
    expect((await submit(SEEN_BODY, { "ai-trace-id": "request-1" })).ErrCode).toBe(400011);
    const videoId = (await submit()).Resp.video_id!;
    expect((await result(videoId, { "ai-trace-id": undefined })).ErrCode).toBe(400011);
    expect(emulator.tasks()).toHaveLength(1);
  });

  it("C: a reused Ai-trace-id is accepted but recorded", async () => {
    await start();
    const traceId = randomUUID();
    expect((await submit(SEEN_BODY, { "ai-trace-id": traceId })).ErrCode).toBe(0);
    expect(emulator.traceIds().reused).toEqual([]);
    const videoId = (await submit()).Resp.video_id!;
    await result(videoId, { "ai-trace-id": traceId.toUpperCase() });
    expect(emulator.traceIds()).toEqual({ seen: 3, reused: [traceId] });
  });

  it("C: prompt is required; other fields default, and a value outside the accepted set is refused naming the field", async () => {
    await start();
    const missing = await submit({ model: "v6" });
    expect(missing.ErrCode).toBe(400012);
    expect(missing.ErrMsg).toMatch(/^prompt/);
    expect((await submit({ prompt: "only a prompt" })).ErrCode).toBe(0);
    const defaults = { model: "v6", aspectRatio: "16:9", duration: 5, quality: "720p", motionMode: "normal", seed: 0 };
    expect(emulator.tasks()[0]).toMatchObject(defaults);
    const outsideTheSets = [
      ["aspect_ratio", "2:1"],
      ["duration", 7],
      ["quality", "4k"],
      ["motion_mode", "warp"],
      ["model", "v99"],
      ["seed", -5],
    ] as const;
    for (const [field, value] of outsideTheSets) {
      const refused = await submit({ ...SEEN_BODY, [field]: value });
      expect(refused.ErrCode).toBe(400012);
      expect(refused.ErrMsg.startsWith(field)).toBe(true);
    }
  });

  it("C: fields the spec does not list (negative_prompt, water_mark, template_id) are accepted and ignored", async () => {
    await start();
    const accepted = await submit({ prompt: "a paper boat", negative_prompt: "rain", water_mark: false, template_id: 0 });
    expect(accepted.ErrCode).toBe(0);
    expect(emulator.tasks()[0]).toMatchObject({ prompt: "a paper boat", model: "v6", aspectRatio: "16:9" });
  });

  it("C: the accepted value sets are configurable", async () => {
    await start({ accepted: { models: ["v6"], durations: [5, 8, 10] } });
    expect((await submit({ ...SEEN_BODY, model: "v5" })).ErrCode).toBe(400012);
    expect((await submit({ ...SEEN_BODY, duration: 10 })).ErrCode).toBe(0);
  });

  it("C: an unknown video_id, or another key's, is an error envelope", async () => {
    await start({ additionalAccounts: [{ apiKey: "other-key" }] });
    expect((await result("123")).ErrCode).toBe(400013);
    const videoId = (await submit()).Resp.video_id!;
    expect((await result(videoId, { "api-key": "other-key" })).ErrCode).toBe(400013);
  });
});

describe("C: outcomes and credits", () => {
  it("C: moderation failure (7) refunds the credits", async () => {
    await start({ balanceCredits: 1_000 });
    emulator.injectOutcome(7);
    const videoId = (await submit()).Resp.video_id!;
    // Sandbox price: 40 credits for 5 s at 720p, charged at submit.
    expect(emulator.balance()).toBe(960);
    advance(60_000);
    expect(await result(videoId)).toMatchObject({ ErrCode: 0, Resp: { status: 7 } });
    expect((await result(videoId)).Resp.url).toBeUndefined();
    expect(emulator.balance()).toBe(1_000);
    expect(emulator.task(videoId)?.refunded).toBe(true);
  });

  it("C: generation failure (8) ends the task without a url and without a refund", async () => {
    await start({ balanceCredits: 1_000 });
    emulator.injectOutcome(8);
    const videoId = (await submit()).Resp.video_id!;
    advance(60_000);
    expect((await result(videoId)).Resp).toEqual({ video_id: videoId, status: 8 });
    expect(emulator.balance()).toBe(960);
  });

  it("C: a submit the balance cannot pay answers 500090 and takes no slot", async () => {
    await start({ balanceCredits: 50 });
    expect((await submit()).ErrCode).toBe(0);
    expect(await submit()).toMatchObject({ ErrCode: 500090, Resp: {} });
    expect(emulator.slotsInUse()).toBe(1);
    emulator.setBalance(100);
    expect((await submit()).ErrCode).toBe(0);
    expect(emulator.balance()).toBe(60);
  });

  it("C: an injected 500069 takes no slot and costs nothing", async () => {
    await start({ balanceCredits: 1_000 });
    emulator.injectRetryLater(1);
    expect(await submit()).toMatchObject({ ErrCode: 500069, Resp: {} });
    expect(emulator.slotsInUse()).toBe(0);
    expect(emulator.balance()).toBe(1_000);
    expect((await submit()).ErrCode).toBe(0);
  });

  it("C: status 6 (deleted) is reached only by the control knob, and frees the slot", async () => {
    await start();
    const videoId = (await submit()).Resp.video_id!;
    expect(emulator.slotsInUse()).toBe(1);
    expect(emulator.deleteTask(videoId)).toBe(true);
    expect((await result(videoId)).Resp).toEqual({ video_id: videoId, status: 6 });
    expect(emulator.slotsInUse()).toBe(0);
    advance(60_000);
    expect((await result(videoId)).Resp.status).toBe(6);
  });

  it("C: a deleted video's link stops working", async () => {
    await start();
    const videoId = (await submit()).Resp.video_id!;
    advance(60_000);
    const url = (await result(videoId)).Resp.url!;
    expect((await fetch(url)).status).toBe(200);
    emulator.deleteTask(videoId);
    expect((await fetch(url)).status).toBe(404);
  });

  it("C: the inspection API counts submits and answers per ErrCode", async () => {
    await start();
    await submit();
    await submit({ model: "v6" });
    await submit(SEEN_BODY, { "api-key": "nope" });
    const stats = emulator.stats();
    expect(stats.submits).toBe(3);
    expect(stats.errCodes).toEqual({ 0: 1, 400012: 1, 400010: 1 });
  });
});

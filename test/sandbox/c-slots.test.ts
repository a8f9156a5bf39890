import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { C_TIER_SLOTS, createCEmulator, type CEmulator, type CEmulatorOptions, type CTier } from "../../src/sandbox/c/index.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

const KEY = "sandbox-c-key";
const MINUTE = 60_000;

let sandbox: Sandbox | undefined;
let emulator: CEmulator;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

async function start(options: CEmulatorOptions = {}): Promise<void> {
  emulator = createCEmulator({ renderMs: 2 * MINUTE, ...options });
  sandbox = await startSandbox({ providers: ["c"], emulators: { c: emulator } });
}

const advance = (ms: number) => sandbox!.clock.advance(ms);

async function submit(apiKey = KEY): Promise<{ ErrCode: number; Resp: { video_id?: string } }> {
  const response = await fetch(`${sandbox!.url}/c/openapi/v2/video/text/generate`, {
    method: "POST",
    headers: { "api-key": apiKey, "ai-trace-id": randomUUID(), "content-type": "application/json" },
    body: JSON.stringify({ prompt: "waves", model: "v6", aspect_ratio: "16:9", duration: 5, quality: "720p" }),
  });
  return (await response.json()) as { ErrCode: number; Resp: { video_id?: string } };
}

async function status(videoId: string): Promise<number | undefined> {
  const response = await fetch(`${sandbox!.url}/c/openapi/v2/video/result/${videoId}`, {
    headers: { "api-key": KEY, "ai-trace-id": randomUUID() },
  });
  return ((await response.json()) as { Resp: { status?: number } }).Resp.status;
}

async function submitMany(count: number, apiKey = KEY): Promise<number[]> {
  const codes: number[] = [];
  for (let i = 0; i < count; i++) codes.push((await submit(apiKey)).ErrCode);
  return codes;
}

describe("C: tier slots", () => {
  it("C: a submit beyond the free tier's 3 slots answers 500044 and takes no slot", async () => {
    await start({ tier: "free", balanceCredits: 1_000 });
    expect(await submitMany(3)).toEqual([0, 0, 0]);
    const refused = await submit();
    expect(refused).toMatchObject({ ErrCode: 500044, Resp: {} });
    expect(emulator.slotsInUse()).toBe(3);
    expect(emulator.tasks()).toHaveLength(3);
    // No slot taken and nothing charged: 3 × 40 credits.
    expect(emulator.balance()).toBe(880);
  });

  it("C: a rejected submit frees no slot either", async () => {
    await start({ tier: "free" });
    await submitMany(3);
    await submitMany(5);
    advance(2 * MINUTE - 5_000);
    expect(emulator.slotsInUse()).toBe(3);
    expect((await submit()).ErrCode).toBe(500044);
  });

  it("C: a slot returns when its task leaves the generating state", async () => {
    await start({ tier: "free" });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await submit()).Resp.video_id!);
    advance(2 * MINUTE);
    expect(await status(ids[0]!)).toBe(1);
    expect(emulator.slotsInUse()).toBe(0);
    expect(await submitMany(3)).toEqual([0, 0, 0]);
  });

  it("C: the tiers cap generating tasks at 3 / 15 / 20 / 25", async () => {
    const tiers: CTier[] = ["free", "essential", "scale", "business"];
    await start({
      tier: "free",
      additionalAccounts: tiers.map((tier) => ({ apiKey: `key-${tier}`, tier })),
    });
    expect(C_TIER_SLOTS).toEqual({ free: 3, essential: 15, scale: 20, business: 25 });
    for (const tier of tiers) {
      const codes = await submitMany(C_TIER_SLOTS[tier] + 1, `key-${tier}`);
      expect(codes.filter((code) => code === 0)).toHaveLength(C_TIER_SLOTS[tier]);
      expect(codes.at(-1)).toBe(500044);
    }
  });

  it("C: buying credits does not change the cap; changing the tier does", async () => {
    await start({ tier: "free" });
    await submitMany(3);
    emulator.setBalance(1_000_000);
    expect((await submit()).ErrCode).toBe(500044);
    emulator.setTier("essential");
    expect((await submit()).ErrCode).toBe(0);
  });

  it("C: a task generating for ten minutes releases its slot", async () => {
    await start({ tier: "free", renderMs: 25 * MINUTE });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await submit()).Resp.video_id!);
    // Margins of seconds: real milliseconds pass between the submits (time scale 1).
    advance(10 * MINUTE - 5_000);
    expect((await submit()).ErrCode).toBe(500044);
    advance(10_000);
    expect(emulator.slotsInUse()).toBe(0);
    expect(await submitMany(3)).toEqual([0, 0, 0]);
    // Released, yet still generating (status 5), and it finishes later.
    expect(await status(ids[0]!)).toBe(5);
    expect(emulator.task(ids[0]!)).toMatchObject({ status: 5, holdsSlot: false });
    advance(15 * MINUTE);
    expect(await status(ids[0]!)).toBe(1);
  });

  it("C: the sandbox records the 500044 count and the peak concurrency", async () => {
    await start({ tier: "free", additionalAccounts: [{ apiKey: "essential-key", tier: "essential" }] });
    await submitMany(5);
    await submitMany(7, "essential-key");
    advance(2 * MINUTE);
    await submitMany(1);
    const stats = emulator.stats();
    expect(stats.concurrentLimitRejections).toBe(2);
    expect(stats.errCodes[500044]).toBe(2);
    expect(stats.peakConcurrency).toEqual({ [KEY]: 3, "essential-key": 7 });
  });

  it("C: the inspection API lists tasks with virtual createdAt and finishedAt", async () => {
    await start({ tier: "free" });
    const startedAt = sandbox!.clock.now();
    const videoId = (await submit()).Resp.video_id!;
    const generating = emulator.task(videoId)!;
    expect(generating.createdAt).toBeGreaterThanOrEqual(startedAt);
    expect(generating.finishedAt).toBeUndefined();
    expect(generating).toMatchObject({ status: 5, holdsSlot: true, costCredits: 40, slotReleaseAt: generating.createdAt + 10 * MINUTE });
    advance(2 * MINUTE);
    expect(emulator.task(videoId)).toMatchObject({ status: 1, finishedAt: generating.createdAt + 2 * MINUTE, holdsSlot: false });
  });

  it("C: a high time scale moves tasks with no clock.advance()", async () => {
    emulator = createCEmulator({ renderMs: 2 * MINUTE });
    sandbox = await startSandbox({ providers: ["c"], emulators: { c: emulator }, timeScale: 2_000 });
    const videoId = (await submit()).Resp.video_id!;
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await status(videoId)).toBe(1);
  });
});

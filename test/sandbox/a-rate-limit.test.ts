import { afterEach, describe, expect, it } from "vitest";
import { createAEmulator, type AEmulator } from "../../src/sandbox/a/index.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

const STANDARD_KEY = "sandbox-a-key";
const ENTERPRISE_KEY = "sandbox-a-enterprise-key";
const TASKS = "/a/api/v3/contents/generations/tasks";
const PLAN_TASKS = "/a/api/plan/v3/contents/generations/tasks";

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

/** A poll (of an id that does not exist: it still counts, like every request). */
async function poll(key = STANDARD_KEY, tasksPath = TASKS): Promise<Response> {
  const response = await fetch(`${sandbox!.url}${tasksPath}/cgt-none`, { headers: { authorization: `Bearer ${key}` } });
  await response.arrayBuffer();
  return response;
}

async function submit(): Promise<Response> {
  const response = await fetch(`${sandbox!.url}${TASKS}`, {
    method: "POST",
    headers: { authorization: `Bearer ${STANDARD_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "vidgen-2-0-250601", content: [{ type: "text", text: "x" }] }),
  });
  await response.arrayBuffer();
  return response;
}

async function burst(count: number, request: () => Promise<Response>): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await request()).status);
  return statuses;
}

describe("A: rate limit", () => {
  it("A: the 181st request within a minute gets 429, polls and submits alike", async () => {
    await start();
    const submits = await burst(30, submit);
    const polls = await burst(150, () => poll());
    expect(submits.every((status) => status === 200)).toBe(true);
    expect(polls.every((status) => status === 404)).toBe(true);
    const refused = await poll();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect((await submit()).status).toBe(429);
  });

  it("A: the window slides: requests pass again once the oldest are a minute old", async () => {
    await start();
    await burst(180, () => poll());
    expect((await poll()).status).toBe(429);
    sandbox!.clock.advance(60_000);
    expect((await poll()).status).toBe(404);
  });

  it("A: a request answered 429 does not count against the window", async () => {
    await start();
    await burst(180, () => poll());
    sandbox!.clock.advance(30_000);
    expect(await burst(5, () => poll())).toEqual([429, 429, 429, 429, 429]);
    sandbox!.clock.advance(30_000);
    // Had the five 429s counted, they would still be in the window and only 175 would pass.
    expect(await burst(180, () => poll())).not.toContain(429);
  });

  it("A: an enterprise key may make 600 requests per minute", async () => {
    await start();
    const statuses = await burst(600, () => poll(ENTERPRISE_KEY, PLAN_TASKS));
    expect(statuses).not.toContain(429);
    expect((await poll(ENTERPRISE_KEY, PLAN_TASKS)).status).toBe(429);
  });

  it("A: keys are limited separately, and the sandbox records 429s and per-window maxima", async () => {
    await start();
    await burst(182, () => poll());
    await burst(3, () => poll(ENTERPRISE_KEY, PLAN_TASKS));
    const report = emulator.rateLimits();
    expect(report.rejected).toBe(2);
    expect(report.perKey[STANDARD_KEY]).toEqual({ admitted: 180, rejected: 2, maxInWindow: 180, plan: "standard" });
    expect(report.perKey[ENTERPRISE_KEY]).toEqual({ admitted: 3, rejected: 0, maxInWindow: 3, plan: "enterprise" });
  });

  it("A: requests with an unknown key are not counted against any key", async () => {
    await start();
    await burst(5, () => poll("wrong-key"));
    expect(emulator.rateLimits().rejected).toBe(0);
    expect(Object.keys(emulator.rateLimits().perKey)).toEqual([]);
  });
});

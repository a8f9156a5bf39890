import { afterEach, describe, expect, it } from "vitest";
import { MICRO_USD_PER_CREDIT } from "../../src/sandbox/d/index.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import { PROMPT, startD, submit, submitOk, type DSandbox } from "./d-http.js";

let world: DSandbox | undefined;
afterEach(async () => {
  await world?.sandbox.stop();
  world = undefined;
});

async function started(options: Parameters<typeof startD>[0] = {}): Promise<DSandbox> {
  world = await startD({ renderTimeMs: 10_000, ...options });
  return world;
}

const SMALL = { ...PROMPT, width: 256, height: 256 };

async function submitMany(d: DSandbox, endpoint: string, count: number, key?: string): Promise<void> {
  for (let index = 0; index < count; index++) {
    const { status, body } = await submit(d, endpoint, SMALL, key ? { "x-key": key } : undefined);
    if (status !== 200) throw new Error(`submit ${index + 1} answered ${status}: ${JSON.stringify(body)}`);
  }
}

describe("D concurrency", () => {
  it("D: a 25th concurrent task gets 429", async () => {
    const d = await started();
    await submitMany(d, "gen-2-pro", 24);
    const balance = d.d.balanceMicroUsd;

    const refused = await submit(d, "gen-2-pro", SMALL);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("too_many_active_tasks");
    // Nothing created or charged.
    expect(d.d.jobs).toHaveLength(24);
    expect(d.d.balanceMicroUsd).toBe(balance);
    expect(d.d.rejected429Count).toBe(1);
    expect(d.d.peakActive).toBe(24);
    expect(d.d.submitCount).toBe(25);

    // Once tasks finish, their places free up.
    d.sandbox.clock.advance(10_001);
    expect(d.d.activeCount()).toBe(0);
    expect((await submit(d, "gen-2-pro", SMALL)).status).toBe(200);
  });

  it("D: gen-ctx-max allows 6 concurrent tasks", async () => {
    const d = await started();
    await submitMany(d, "gen-ctx-max", 6);
    const refused = await submit(d, "gen-ctx-max", SMALL);
    expect(refused.status).toBe(429);
    expect(d.d.rejected429Count).toBe(1);
    // Other endpoints still have room.
    expect((await submit(d, "gen-2-max", SMALL)).status).toBe(200);
  });

  it("D: gen-ctx-max tasks count in the 24 as well", async () => {
    const d = await started();
    await submitMany(d, "gen-ctx-max", 6);
    await submitMany(d, "gen-2-pro", 18);
    expect(d.d.activeCount()).toBe(24);
    expect((await submit(d, "gen-2-pro", SMALL)).status).toBe(429);

    await d.sandbox.stop();
    const other = await started();
    await submitMany(other, "gen-2-pro", 20);
    await submitMany(other, "gen-ctx-max", 4);
    // Below its own 6, but the key is full.
    expect((await submit(other, "gen-ctx-max", SMALL)).status).toBe(429);
  });

  it("D: Error and Failed tasks stop counting as active when they end", async () => {
    const d = await started();
    d.d.failNextJobs("Error", 12);
    d.d.failNextJobs("Failed", 12);
    await submitMany(d, "gen-2-pro", 24);
    expect((await submit(d, "gen-2-pro", SMALL)).status).toBe(429);
    d.sandbox.clock.advance(10_001);
    expect((await submit(d, "gen-2-pro", SMALL)).status).toBe(200);
  });

  it("D: concurrency is counted per key", async () => {
    const d = await started({ apiKeys: ["key-one", "key-two"] });
    await submitMany(d, "gen-2-pro", 24, "key-one");
    expect((await submit(d, "gen-2-pro", SMALL, { "x-key": "key-one" })).status).toBe(429);
    await submitMany(d, "gen-2-pro", 24, "key-two");
    expect(d.d.activeCount("key-one")).toBe(24);
    expect(d.d.activeCount("key-two")).toBe(24);
    expect(d.d.peakActive).toBe(24);
  });
});

describe("D credits", () => {
  it("D: 402 when credits do not cover the job, nothing charged", async () => {
    // gen-2-pro at 1 MP costs 0.03 USD = 3 credits = 30,000 micro-USD.
    const d = await started({ balanceMicroUsd: 40_000 });
    const paid = await submitOk(d, "gen-2-pro", SMALL);
    expect(d.d.balanceMicroUsd).toBe(10_000);

    const refused = await submit(d, "gen-2-pro", SMALL);
    expect(refused.status).toBe(402);
    expect(refused.body.code).toBe("insufficient_credits");
    expect(d.d.balanceMicroUsd).toBe(10_000);
    expect(d.d.jobs.map((job) => job.id)).toEqual([paid.id]);
    expect(d.d.rejected402Count).toBe(1);

    // compact 4B at 1 MP costs 14,000: the 10,000 left do not cover it; a balance that does is used to the last micro-USD.
    expect((await submit(d, "gen-2-compact-4b", SMALL)).status).toBe(402);
    d.d.balanceMicroUsd = 14_000;
    expect((await submit(d, "gen-2-compact-4b", SMALL)).status).toBe(200);
    expect(d.d.balanceMicroUsd).toBe(0);
  });

  it("D: a batch hitting 402 midway leaves the earlier jobs paid and the later ones unrun", async () => {
    const d = await started({ balanceMicroUsd: 100_000 });
    const statuses: number[] = [];
    for (let index = 0; index < 5; index++) statuses.push((await submit(d, "gen-2-pro", SMALL)).status);
    expect(statuses).toEqual([200, 200, 200, 402, 402]);
    expect(d.d.balanceMicroUsd).toBe(10_000);
    expect(Object.values(d.d.chargesMicroUsd)).toEqual([30_000, 30_000, 30_000]);
  });

  it("D: 429 is answered before 402 (a job that cannot run is not a billing question)", async () => {
    const d = await started();
    await submitMany(d, "gen-2-pro", 24);
    d.d.balanceMicroUsd = 0;
    expect((await submit(d, "gen-2-pro", SMALL)).status).toBe(429);
  });

  it("D: one credit is 0.01 USD", () => {
    expect(MICRO_USD_PER_CREDIT).toBe(10_000);
  });
});

function base64Png(width: number, height: number): string {
  return renderPng(width, height, "reference", 1).toString("base64");
}

const URL_REFERENCE = "https://images.example/reference.png";

/** spec D cost rules and the pricing page's rates; every amount is integer micro-USD. */
const PRICING_EXAMPLES: { rule: string; endpoint: string; body: Record<string, unknown>; chargeMicroUsd: number }[] = [
  { rule: "gen-2-max 1 MP is the first-MP rate, 0.07", endpoint: "gen-2-max", body: { width: 1024, height: 1024 }, chargeMicroUsd: 70_000 },
  { rule: "gen-2-max 2 MP is 0.07 + 0.03", endpoint: "gen-2-max", body: { width: 2048, height: 1024 }, chargeMicroUsd: 100_000 },
  {
    rule: "a part megapixel is rounded up: 1024x1040 on gen-2-max bills 2 MP",
    endpoint: "gen-2-max",
    body: { width: 1024, height: 1040 },
    chargeMicroUsd: 100_000,
  },
  { rule: "64x64 on gen-2-pro bills one whole MP, 0.03", endpoint: "gen-2-pro", body: { width: 64, height: 64 }, chargeMicroUsd: 30_000 },
  {
    rule: "output is capped at 4 MP before billing: 4096x4096 on gen-2-pro is 0.03 + 3 x 0.015",
    endpoint: "gen-2-pro",
    body: { width: 4096, height: 4096 },
    chargeMicroUsd: 75_000,
  },
  { rule: "gen-2-flex 4 MP is 4 x 0.05", endpoint: "gen-2-flex", body: { width: 2048, height: 2048 }, chargeMicroUsd: 200_000 },
  { rule: "gen-2-compact-4b 1 MP is 0.014", endpoint: "gen-2-compact-4b", body: { width: 1024, height: 1024 }, chargeMicroUsd: 14_000 },
  { rule: "gen-2-compact-4b 3 MP is 0.014 + 2 x 0.001", endpoint: "gen-2-compact-4b", body: { width: 2048, height: 1536 }, chargeMicroUsd: 16_000 },
  { rule: "gen-2-compact-9b 1 MP is 0.015", endpoint: "gen-2-compact-9b", body: { width: 1024, height: 1024 }, chargeMicroUsd: 15_000 },
  {
    rule: "the fine-tuned endpoint bills at its base endpoint's rate (compact 9B)",
    endpoint: "gen-2-compact-9b-kv-finetuned",
    body: { width: 2048, height: 1024 },
    chargeMicroUsd: 17_000,
  },
  {
    rule: "gen-2-pro-preview bills at gen-2-pro's rate (sandbox choice)",
    endpoint: "gen-2-pro-preview",
    body: { width: 2048, height: 1024 },
    chargeMicroUsd: 45_000,
  },
  {
    rule: "gen-2-compact-9b-preview bills at gen-2-compact-9b's rate (sandbox choice)",
    endpoint: "gen-2-compact-9b-preview",
    body: { width: 1024, height: 1024 },
    chargeMicroUsd: 15_000,
  },
  { rule: "gen-ctx-max bills at gen-2-max's rate (sandbox choice)", endpoint: "gen-ctx-max", body: { width: 1024, height: 1024 }, chargeMicroUsd: 70_000 },
  {
    rule: "several references bill 1 MP each: gen-2-pro 1 MP with 3 references is 0.03 + 3 x 0.015",
    endpoint: "gen-2-pro",
    body: { width: 1024, height: 1024, input_image: URL_REFERENCE, input_image_2: URL_REFERENCE, input_image_3: URL_REFERENCE },
    chargeMicroUsd: 75_000,
  },
  {
    rule: "several references bill 1 MP each regardless of their size or the output's",
    endpoint: "gen-2-max",
    body: { width: 2048, height: 2048, input_image: base64Png(2048, 1024), input_image_2: base64Png(2048, 1024) },
    chargeMicroUsd: 70_000 + 3 * 30_000 + 2 * 30_000,
  },
  {
    rule: "a single reference of unknown size (a URL) bills 1 MP",
    endpoint: "gen-2-pro",
    body: { width: 1024, height: 1024, input_image: URL_REFERENCE },
    chargeMicroUsd: 45_000,
  },
  {
    rule: "a single reference keeps its resolution and is rounded up on its own: a 2 MP base64 PNG bills 2 MP",
    endpoint: "gen-2-max",
    body: { width: 1024, height: 1024, input_image: `data:image/png;base64,${base64Png(2048, 1024)}` },
    chargeMicroUsd: 70_000 + 2 * 30_000,
  },
];

describe("D pricing worked examples", () => {
  it.each(PRICING_EXAMPLES)("D: pricing — $rule", async ({ endpoint, body, chargeMicroUsd }) => {
    const d = await started({ balanceMicroUsd: 1_000_000 });
    const { id } = await submitOk(d, endpoint, { ...PROMPT, ...body });
    expect(d.d.job(id)?.chargeMicroUsd).toBe(chargeMicroUsd);
    expect(d.d.chargesMicroUsd[id]).toBe(chargeMicroUsd);
    expect(d.d.balanceMicroUsd).toBe(1_000_000 - chargeMicroUsd);
  });
});

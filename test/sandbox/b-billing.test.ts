import { afterEach, describe, expect, it } from "vitest";
import { B_KEY, call, IMAGE_TO_VIDEO, readJob, startB, submit, VALID_IMAGE_TO_VIDEO, type BSandbox } from "./b-http.js";

let world: BSandbox | undefined;
afterEach(async () => {
  await world?.sandbox.stop();
  world = undefined;
});

function today(world: BSandbox): string {
  return new Date(world.sandbox.clock.now()).toISOString().slice(0, 10);
}

describe("B billing", () => {
  it("B: billing passes through pending before settled", async () => {
    world = await startB({ settlementDelayMs: 3_000 });
    const { body } = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    expect((await readJob(world, body.id)).body.billing).toBeNull();
    world.advance(11_000);
    const pending = await readJob(world, body.id);
    expect(pending.body.status).toBe("completed");
    expect(pending.body.billing).toEqual({ state: "pending", charge_micro_usd: 0 });
    world.advance(3_000);
    expect((await readJob(world, body.id)).body.billing).toEqual({ state: "settled", charge_micro_usd: 200_000 });
  });

  it("B: billing can read unavailable between pending and settled (knob)", async () => {
    world = await startB({ settlementDelayMs: 1_000, billingUnavailableMs: 30_000 });
    const { body } = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    world.advance(11_000);
    expect((await readJob(world, body.id)).body.billing.state).toBe("pending");
    world.advance(1_000);
    expect((await readJob(world, body.id)).body.billing.state).toBe("unavailable");
    world.advance(30_000);
    expect((await readJob(world, body.id)).body.billing).toEqual({ state: "settled", charge_micro_usd: 200_000 });
  });

  it("B: failed jobs are settled at 0", async () => {
    world = await startB();
    const before = world.b.balanceMicroUsd;
    world.b.failNextJobs(1);
    const failed = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    const rejected = await submit(world, IMAGE_TO_VIDEO, { resolution: "720p" });
    world.advance(20_000);
    expect((await readJob(world, failed.body.id)).body.billing).toEqual({ state: "settled", charge_micro_usd: 0 });
    expect((await readJob(world, rejected.body.id)).body.billing).toEqual({ state: "settled", charge_micro_usd: 0 });
    expect(world.b.balanceMicroUsd).toBe(before);
  });

  it("B: settled charges are taken from the balance, and only once settled", async () => {
    world = await startB({ balanceMicroUsd: 1_000_000, settlementDelayMs: 3_000 });
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, resolution: "1080p" });
    world.advance(11_000);
    expect((await call(world, "GET", "/billing/balance")).body).toEqual({ balance_micro_usd: 1_000_000, unit: "micro_usd" });
    world.advance(3_000);
    expect((await call(world, "GET", "/billing/balance")).body).toEqual({ balance_micro_usd: 550_000, unit: "micro_usd" });
    expect(world.b.settledChargesByKey).toEqual({ [B_KEY]: 450_000 });
  });

  it("B: insufficient balance on submit fails the job with insufficient_balance", async () => {
    world = await startB({ balanceMicroUsd: 500_000 });
    const first = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, duration_s: 10 });
    expect(first.body.status).toBe("queued");
    // 400,000 is reserved by the first job: 100,000 is left for the second.
    const second = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    expect(second.body).toMatchObject({ status: "failed", error: { code: "insufficient_balance" }, billing: null });
    world.advance(20_000);
    expect((await readJob(world, second.body.id)).body.billing).toEqual({ state: "settled", charge_micro_usd: 0 });
    expect(world.b.balanceMicroUsd).toBe(100_000);
  });

  it("B: the daily spend read lists settled charges per key and per model", async () => {
    world = await startB({ apiKeys: [B_KEY, "second-key"] });
    await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    await submit(world, "vendorx/video-2.5/text-to-video", { prompt: "waves", resolution: "720p", duration_s: 10 });
    await call(world, "POST", "/v1/media/vendorx/sfx/text-to-audio", { body: { prompt: "rain", duration_s: 10 }, key: "second-key" });
    world.advance(20_000);
    const date = today(world);
    const { status, body } = await call(world, "GET", `/billing/spend/daily?start_date=${date}&end_date=${date}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ start_date: date, end_date: date, unit: "micro_usd", total_micro_usd: 602_000 });
    expect(body.days).toHaveLength(1);
    expect(body.days[0].items).toEqual(
      expect.arrayContaining([
        { key_id: world.b.keyId(B_KEY), model: "vendorx/video-2.5", charge_micro_usd: 600_000, jobs: 2 },
        { key_id: world.b.keyId("second-key"), model: "vendorx/sfx", charge_micro_usd: 2_000, jobs: 1 },
      ]),
    );
    expect(JSON.stringify(body)).not.toContain(B_KEY);
  });

  it("B: the spend read refuses spans over 366 days", async () => {
    world = await startB();
    const ok = await call(world, "GET", "/billing/spend/daily?start_date=2024-01-01&end_date=2025-01-01");
    expect(ok.status).toBe(200);
    expect(ok.body.days).toHaveLength(367);
    const tooLong = await call(world, "GET", "/billing/spend/daily?start_date=2024-01-01&end_date=2025-01-02");
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.code).toBe("invalid_date_range");
  });

  it("B: the spend read needs both dates, in order", async () => {
    world = await startB();
    expect((await call(world, "GET", "/billing/spend/daily?start_date=2025-01-01")).status).toBe(400);
    expect((await call(world, "GET", "/billing/spend/daily?end_date=2025-01-01")).status).toBe(400);
    expect((await call(world, "GET", "/billing/spend/daily?start_date=2025-02-01&end_date=2025-01-01")).status).toBe(400);
    expect((await call(world, "GET", "/billing/spend/daily?start_date=2025-02-30&end_date=2025-03-01")).status).toBe(400);
    expect((await call(world, "GET", "/billing/spend/daily?start_date=2025-01-01&end_date=2025-01-01", { key: null })).status).toBe(401);
  });
});

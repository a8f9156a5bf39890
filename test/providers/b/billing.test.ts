import { describe, expect, it } from "vitest";
import type { ProviderStatus } from "../../../src/providers/adapter.js";
import { InputError } from "../../../src/core/errors.js";
import { providerError } from "../../helpers/errors.js";
import { IMAGE_TO_VIDEO, imageToVideo, KEY, QUEUE_MS, RENDER_MS, startB, type BBed } from "./bed.js";

const SECOND = 1_000;
/** 1080p for exactly 5 s: 0.09 USD a second, 0.45 USD (B's published rate). */
const CLIP_MICRO_USD = 450_000;
const finishRendering = (bed: BBed) => bed.advance(QUEUE_MS + RENDER_MS + 1);
const today = (bed: BBed) => new Date(bed.sandbox.clock.now()).toISOString().slice(0, 10);
const jobReads = (bed: BBed) => bed.requests().filter((entry) => entry.method === "GET" && /^\/b\/v1\/media\/jobs\/[^/]+$/.test(entry.url));

async function finishedJob(bed: BBed) {
  const { submitted, context } = await bed.submitted();
  finishRendering(bed);
  const outcome: ProviderStatus = await bed.adapter.poll(submitted, context);
  return { submitted, context, outcome };
}

describe("B quote", () => {
  it("B: a quote prices the body to submit without running it", async () => {
    const bed = await startB();
    const validated = await bed.validated(imageToVideo());
    const estimate = await bed.adapter.estimate(validated, bed.context);
    expect(estimate.microUsd).toBe(CLIP_MICRO_USD);
    expect(estimate.source).toContain(`B quote of ${IMAGE_TO_VIDEO}`);
    const [quote] = bed.requests().filter((entry) => entry.method === "POST");
    expect(quote).toMatchObject({ url: `/b/catalog/apis/${IMAGE_TO_VIDEO}/quote`, statusCode: 200 });
    expect(bed.emulator.jobs).toHaveLength(0);
    expect(bed.emulator.balanceMicroUsd).toBe(100_000_000);
  });

  it("B: a quote is an amount only: it prices a body even when the balance could not pay it (a ceiling, not a promise)", async () => {
    const bed = await startB({ balanceMicroUsd: 0 });
    const validated = await bed.validated(imageToVideo());
    expect((await bed.adapter.estimate(validated, bed.context)).microUsd).toBe(CLIP_MICRO_USD);
    const refused = await providerError(() => bed.adapter.submit(validated, bed.jobContext()));
    expect(refused.code).toBe("insufficient_balance");
  });

  it("B: without a connection the estimate is unpriced and says why", async () => {
    const bed = await startB();
    const validated = await bed.validated(imageToVideo());
    const estimate = await bed.adapter.estimate(validated);
    expect(estimate.microUsd).toBeNull();
    expect(estimate.source).toMatch(/^unpriced: .*quote/);
    expect(bed.requests().filter((entry) => entry.method === "POST")).toHaveLength(0);
  });

  it("B: a quote whose amount cannot be read is unpriced, with the answer quoted", async () => {
    const bed = await startB();
    const validated = await bed.validated(imageToVideo());
    bed.sandbox.injectFault({ provider: "b", method: "POST", fault: { kind: "status", status: 200, body: { price: "0.45 USD" } }, times: 1 });
    const estimate = await bed.adapter.estimate(validated, bed.context);
    expect(estimate.microUsd).toBeNull();
    expect(estimate.source).toContain("0.45 USD");
  });
});

describe("B billing states", () => {
  it("B: pending billing is read again after 1 s, 2 s, then every 5 s", async () => {
    const bed = await startB({ settlementDelayMs: 60 * SECOND });
    const { submitted, context, outcome } = await finishedJob(bed);
    const waits: number[] = [];
    for (let read = 0; read < 5; read++) {
      const settlement = await bed.adapter.settle!(submitted, outcome, context);
      if (settlement.kind !== "pending") throw new Error(`expected pending, got ${settlement.kind}`);
      waits.push(settlement.retryAfterMs);
      bed.advance(settlement.retryAfterMs);
    }
    expect(waits).toEqual([1_000, 2_000, 5_000, 5_000, 5_000]);
  });

  it("B: the charge B shows while pending is not recorded", async () => {
    const bed = await startB({ settlementDelayMs: 60 * SECOND });
    const { submitted, context, outcome } = await finishedJob(bed);
    const settlement = await bed.adapter.settle!(submitted, outcome, context);
    expect(settlement.kind).toBe("pending");
    expect(settlement.raw).toMatchObject({ billing: { state: "pending", charge_micro_usd: 0 } });
  });

  it("B: unavailable billing is read again no sooner than 30 s", async () => {
    const bed = await startB({ settlementDelayMs: 0, billingUnavailableMs: 90 * SECOND });
    const { submitted, context, outcome } = await finishedJob(bed);
    const settlement = await bed.adapter.settle!(submitted, outcome, context);
    expect(settlement.kind).toBe("unavailable");
    if (settlement.kind === "unavailable") expect(settlement.retryAfterMs).toBeGreaterThanOrEqual(30 * SECOND);
  });

  it("B: settled records charge_micro_usd, only in that state", async () => {
    const bed = await startB({ settlementDelayMs: 2 * SECOND, billingUnavailableMs: 40 * SECOND });
    const { submitted, context, outcome } = await finishedJob(bed);
    const kinds: string[] = [];
    for (;;) {
      const settlement = await bed.adapter.settle!(submitted, outcome, context);
      kinds.push(settlement.kind);
      if (settlement.kind === "settled") {
        expect(settlement.microUsd).toBe(CLIP_MICRO_USD);
        expect(settlement.microUsd).toBe(bed.emulator.job(submitted.providerJobId)!.chargeMicroUsd);
        break;
      }
      bed.advance(settlement.retryAfterMs);
    }
    expect(kinds).toEqual(["pending", "pending", "unavailable", "unavailable", "settled"]);
  });

  it("B: a null billing is not a charge", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    // Not finished: its billing is null.
    const early = await bed.adapter.settle!(submitted, { kind: "pending", providerStatus: "queued", raw: null }, context);
    expect(early).toMatchObject({ kind: "pending", raw: { billing: null } });
    const raw = { id: submitted.providerJobId, status: "completed", output: null, billing: null };
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 200, body: raw }, times: 1 });
    expect(await bed.adapter.settle!(submitted, { kind: "pending", providerStatus: "completed", raw }, context)).toMatchObject({ kind: "pending", raw });
  });

  it("B: a billing state the spec does not list is treated as unavailable, raw kept", async () => {
    const bed = await startB();
    const { submitted, context, outcome } = await finishedJob(bed);
    const raw = { id: submitted.providerJobId, status: "completed", billing: { state: "reconciling", charge_micro_usd: 0 } };
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 200, body: raw }, times: 1 });
    expect(await bed.adapter.settle!(submitted, outcome, context)).toEqual({ kind: "unavailable", retryAfterMs: 30 * SECOND, raw });
  });

  it("B: settled without an integer charge is an invalid answer, never a guessed amount", async () => {
    const bed = await startB();
    const { submitted, context, outcome } = await finishedJob(bed);
    const raw = { id: submitted.providerJobId, status: "completed", billing: { state: "settled", charge_micro_usd: "450000" } };
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 200, body: raw }, times: 1 });
    expect((await providerError(() => bed.adapter.settle!(submitted, outcome, context))).code).toBe("invalid_response");
  });

  it("B: a failed job settles at 0", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    bed.emulator.failNextJobs(1);
    const { submitted, context, outcome } = await finishedJob(bed);
    expect(outcome.kind).toBe("failed");
    expect(await bed.adapter.settle!(submitted, outcome, context)).toMatchObject({ kind: "settled", microUsd: 0 });
  });

  it("B: settle reads the job's own billing each time", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const { submitted, context, outcome } = await finishedJob(bed);
    const before = jobReads(bed).length;
    await bed.adapter.settle!(submitted, outcome, context);
    expect(jobReads(bed)).toHaveLength(before + 1);
    expect(jobReads(bed).at(-1)!.headers["x-api-key"]).toBe(KEY);
  });

  it("B: charge() defers to settle: B's charge is known only once settled", async () => {
    const bed = await startB();
    const { outcome } = await finishedJob(bed);
    const validated = await bed.validated(imageToVideo());
    expect(bed.adapter.charge(validated, outcome)).toMatchObject({ microUsd: null, source: expect.stringContaining("settle") });
  });
});

describe("B account", () => {
  it("B: balance reads balance_micro_usd in micro_usd; settled charges leave it", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const account = bed.adapter.account(bed.http);
    expect(await account.balance()).toMatchObject({ balanceMicroUsd: 100_000_000, unit: "micro_usd" });
    const { submitted, context, outcome } = await finishedJob(bed);
    await bed.adapter.settle!(submitted, outcome, context);
    expect((await account.balance()).balanceMicroUsd).toBe(100_000_000 - CLIP_MICRO_USD);
    const read = bed.requests().find((entry) => entry.url === "/b/billing/balance")!;
    expect(read.headers["x-api-key"]).toBe(KEY);
  });

  it("B: a balance in another unit is refused rather than misread", async () => {
    const bed = await startB();
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 200, body: { balance_micro_usd: 5, unit: "usd" } }, times: 1 });
    expect((await providerError(() => bed.adapter.account(bed.http).balance())).code).toBe("invalid_response");
  });

  it("B: daily spend lists the settled charges per key and per model", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const first = await finishedJob(bed);
    await bed.adapter.settle!(first.submitted, first.outcome, first.context);
    const date = today(bed);
    const report = await bed.adapter.account(bed.http).spend({ from: date, to: date });
    const read = bed.requests().at(-1)!;
    expect(read.url).toBe(`/b/billing/spend/daily?start_date=${date}&end_date=${date}`);
    expect(read.headers["x-api-key"]).toBe(KEY);
    expect(report.rows).toEqual([{ date, keyId: bed.emulator.keyId(KEY), model: "vendorx/video-2.5", chargeMicroUsd: CLIP_MICRO_USD, jobs: 1 }]);
    expect(report.byKey).toEqual([{ keyId: bed.emulator.keyId(KEY), chargeMicroUsd: CLIP_MICRO_USD }]);
    expect(report.byModel).toEqual([{ model: "vendorx/video-2.5", chargeMicroUsd: CLIP_MICRO_USD }]);
    expect(report).toMatchObject({ totalMicroUsd: CLIP_MICRO_USD, providerTotalMicroUsd: CLIP_MICRO_USD });
  });

  it("B: catalog reads, quotes, balance and spend reads are never charged", async () => {
    const bed = await startB();
    const account = bed.adapter.account(bed.http);
    const validated = await bed.validated(imageToVideo());
    await account.listCatalog();
    await bed.adapter.estimate(validated, bed.context);
    const before = await account.balance();
    await account.spend({ from: today(bed), to: today(bed) });
    expect(await account.balance()).toMatchObject({ balanceMicroUsd: before.balanceMicroUsd });
    expect(before.balanceMicroUsd).toBe(100_000_000);
    expect(bed.emulator.jobs).toHaveLength(0);
  });

  it("B: a spend range over 366 days is refused before any request; 366 is allowed", async () => {
    const bed = await startB();
    const account = bed.adapter.account(bed.http);
    const refused = await account.spend({ from: "2024-01-01", to: "2025-01-02" }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(InputError);
    expect(refused).toMatchObject({ code: "invalid_input", field: "to" });
    expect(bed.sandbox.requests()).toHaveLength(0);
    await account.spend({ from: "2024-01-01", to: "2025-01-01" });
    expect(bed.sandbox.requests()).toHaveLength(1);
  });

  it("B: spend needs both dates, real and in order", async () => {
    const bed = await startB();
    const account = bed.adapter.account(bed.http);
    for (const [range, field] of [
      [{ from: "", to: "2025-01-01" }, "from"],
      [{ from: "2025-01-01", to: "2025-02-30" }, "to"],
      [{ from: "2025-03-01", to: "2025-02-01" }, "to"],
      [{ from: "01/02/2025", to: "2025-02-01" }, "from"],
    ] as const) {
      await expect(account.spend(range)).rejects.toMatchObject({ code: "invalid_input", field });
    }
    expect(bed.sandbox.requests()).toHaveLength(0);
  });

  it("B: delete erases a job's stored media and prompts (DELETE /v1/media/jobs/{id} → 204)", async () => {
    const bed = await startB();
    const { submitted } = await finishedJob(bed);
    await bed.adapter.account(bed.http).deleteJob(submitted.providerJobId);
    const request = bed.requests().at(-1)!;
    expect(request).toMatchObject({ method: "DELETE", url: `/b/v1/media/jobs/${submitted.providerJobId}`, statusCode: 204 });
    expect(request.headers["x-api-key"]).toBe(KEY);
    expect(bed.emulator.job(submitted.providerJobId)!.deletedAt).not.toBeNull();
  });

  it("B: the catalog list is read without a key and searched locally", async () => {
    const bed = await startB();
    const account = bed.adapter.account(bed.http);
    const all = await account.listCatalog();
    expect(all.recognized).toBe(true);
    expect(all.entries.map((entry) => entry.apiId)).toContain("kestrel/motion/v3/video-to-video");
    const found = await account.listCatalog({ search: "KEYFRAMES" });
    expect(found.entries.map((entry) => entry.apiId).sort()).toEqual(["kestrel/clip-1080p/keyframes-to-video", "vendorx/video-2.5/keyframes-to-video"]);
    for (const entry of bed.requests()) expect(entry.headers["x-api-key"]).toBeUndefined();
    expect(await account.catalogRecord("vendorx/no-such/operation")).toBeNull();
  });
});

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Clock, systemClock } from "../../src/core/clock.js";
import { loadConfig } from "../../src/core/config.js";
import type { Job } from "../../src/core/job.js";
import type { EngineContext } from "../../src/engine/context.js";
import { silentLogger } from "../../src/engine/logger.js";
import { PollScheduler } from "../../src/engine/polling.js";
import { settleJob } from "../../src/engine/settle.js";
import { localFolderOutputs } from "../../src/outputs/local-folder.js";
import { ProviderHttp } from "../../src/providers/http.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import type { Store } from "../../src/store/store.js";
import { type BBed, imageToVideo, QUEUE_MS, RENDER_MS, startB } from "../providers/b/bed.js";
import { sqliteFactory } from "../helpers/stores.js";

const SECOND = 1_000;
const DAY = 24 * 3_600 * SECOND;
/** 1080p for 5 s at B's published 0.09 USD a second. */
const CLIP_MICRO_USD = 450_000;

let store: Store;
/** The engine's time, held still while a test runs: the job ended (or was last read) at this instant. */
let now: number;
const engineClock: Clock = { now: () => now, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
let cleanup: () => Promise<void>;
let folder: string;
beforeEach(async () => {
  ({ store, cleanup } = await sqliteFactory.open());
  folder = mkdtempSync(join(tmpdir(), "mediagate-settle-"));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
  rmSync(folder, { recursive: true, force: true });
});

/** The engine's context for settlement: the real store, B's adapter over the sandbox, one HTTP attempt per read. */
function contextFor(bed: BBed, signal = new AbortController().signal) {
  const emitted: Job[] = [];
  const d = createProviderRegistry(loadConfig({ env: {}, cwd: folder })).get("d")!.adapter!;
  const clock = engineClock;
  const context: EngineContext = {
    store,
    clock,
    owner: "mg:test:1:abcdef",
    leaseMs: 30_000,
    fallbackAfterMs: 60_000,
    log: silentLogger,
    polls: new PollScheduler(store),
    outputs: localFolderOutputs,
    adapter: (provider) => (provider === "b" ? bed.adapter : d),
    callContext: async (job) => ({
      http: new ProviderHttp({ provider: job.provider, clock, secrets: () => [], urlPolicy: { allowHttp: true, allowPrivate: true }, maxAttempts: 1 }),
      clock,
      signal,
      job: { id: job.id, idempotencyKey: job.idempotencyKey, callbackUrl: null },
    }),
    counters: () => ({ requests: 0, status429: 0, backpressure: 0, submits: 0, polls: 0, downloads: 0, claims: 0, claimsLost: 0 }),
    timed: (_provider, _step, call) => call(),
    emit: (job) => emitted.push(job),
    wake: () => {},
    haltsChanged: () => undefined,
    takeKnownStatus: () => undefined,
    signal,
    stopWaiting: signal,
    givenUp: () => false,
  };
  return { context, emitted };
}

/** A job B ran to the end, stored as the engine leaves it: succeeded, charge pending. */
async function finishedAtB(bed: BBed, options: { finishedAgoMs?: number; pollFailures?: number; providerJobId?: boolean; provider?: "b" | "d" } = {}): Promise<Job> {
  const { validated, submitted } = await bed.submitted(imageToVideo());
  bed.advance(QUEUE_MS + RENDER_MS + 1);
  now = bed.sandbox.clock.now();
  const provider = options.provider ?? "b";
  const [inserted] = await store.insertJobs(
    [{ id: `job_${provider}_1`, ref: `${provider}-1`, batchId: null, provider, model: validated.model, operation: validated.operation, body: validated.body, facts: validated.facts, warnings: [], estimateMicroUsd: CLIP_MICRO_USD, estimateSource: "B quote", outDir: folder }],
    now,
  );
  const id = inserted!.job.id;
  await store.transition(id, { state: "queued" }, "submitting", {}, "claimed", now);
  await store.transition(id, { state: "submitting" }, "running", options.providerJobId === false ? {} : { providerJobId: submitted.providerJobId, handles: submitted.handles }, "accepted", now);
  await store.transition(id, { state: "running" }, "capturing", {}, "done at B", now);
  const patch = { finishedAt: now - (options.finishedAgoMs ?? 0), chargeState: "pending" as const, pollFailures: options.pollFailures ?? 0, nextAttemptAt: now };
  return (await store.transition(id, { state: "capturing" }, "succeeded", patch, "saved", now))!;
}

describe("settlement of a charge B bills after the job ends (real B sandbox and SQLite)", () => {
  it("a settled charge is written with its ledger entry, named for B, and listeners hear of it", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed);
    const { context, emitted } = contextFor(bed);
    await settleJob(context, job);
    const after = (await store.getJob(job.id))!;
    expect([after.chargeState, after.chargeMicroUsd, after.chargeSource]).toEqual(["settled", CLIP_MICRO_USD, "settled by B"]);
    expect(await store.ledgerTotal({ provider: "b" })).toBe(CLIP_MICRO_USD);
    expect(emitted.map((entry) => [entry.id, entry.chargeState])).toEqual([[job.id, "settled"]]);
  });

  it("a charge already settled (by another engine's read) is not written or announced twice", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed);
    const { context, emitted } = contextFor(bed);
    await settleJob(context, job);
    await settleJob(context, job);
    expect(await store.ledgerTotal({ provider: "b" })).toBe(CLIP_MICRO_USD);
    expect(emitted).toHaveLength(1);
  });

  it("pending billing is read again when B says, and the read counts as a success (failures reset)", async () => {
    const bed = await startB({ settlementDelayMs: 60 * SECOND });
    const job = await finishedAtB(bed, { pollFailures: 2 });
    const { context, emitted } = contextFor(bed);
    await settleJob(context, job);
    const after = (await store.getJob(job.id))!;
    expect([after.chargeState, after.chargeMicroUsd, after.pollFailures, after.state]).toEqual(["pending", null, 0, "succeeded"]);
    // spec B: pending billing is read again after 1 s first.
    expect(after.nextAttemptAt).toBe(now + 1_000);
    expect(await store.ledgerTotal({ provider: "b" })).toBe(0);
    expect(emitted).toEqual([]);
  });

  it("unavailable billing is recorded as such and read again later", async () => {
    const bed = await startB({ settlementDelayMs: 0, billingUnavailableMs: 60 * SECOND });
    const job = await finishedAtB(bed);
    const { context } = contextFor(bed);
    await settleJob(context, job);
    const after = (await store.getJob(job.id))!;
    expect(after.chargeState).toBe("unavailable");
    expect(after.nextAttemptAt).toBeGreaterThan(now);
  });

  it("a failed read is retried after a full-jitter backoff from 5 s, counted as a failure, with the reason kept", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed, { pollFailures: 3 });
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 503, body: "busy" }, times: 1 });
    const { context } = contextFor(bed);
    // The largest draw: the fourth failure waits just under 5 s × 2^4.
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    await settleJob(context, job);
    const after = (await store.getJob(job.id))!;
    expect(after.pollFailures).toBe(4);
    expect(after.nextAttemptAt).toBe(now + Math.floor(0.999 * 80_000));
    expect(after.reason).toMatch(/^settlement read failed: .*503/);
    expect(after.chargeState).toBe("pending");
  });

  it("the settlement backoff stops growing at five minutes", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed, { pollFailures: 12 });
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 503, body: "busy" }, times: 1 });
    const { context } = contextFor(bed);
    vi.spyOn(Math, "random").mockReturnValue(0.5);
    await settleJob(context, job);
    expect((await store.getJob(job.id))!.nextAttemptAt).toBe(now + 150_000);
  });

  it("a read cut short by the engine stopping records nothing", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed, { pollFailures: 1 });
    const controller = new AbortController();
    controller.abort(new Error("engine stopping"));
    const { context } = contextFor(bed, controller.signal);
    await settleJob(context, job);
    const after = (await store.getJob(job.id))!;
    expect([after.chargeState, after.pollFailures, after.reason, after.nextAttemptAt]).toEqual(["pending", 1, job.reason, job.nextAttemptAt]);
  });

  it("seven days after the job ended the reads stop: the charge stays unknown, said so", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed, { finishedAgoMs: 7 * DAY + 1 });
    const reads = bed.requests().length;
    const { context, emitted } = contextFor(bed);
    await settleJob(context, job);
    const after = (await store.getJob(job.id))!;
    expect([after.chargeState, after.chargeSource, after.chargeMicroUsd]).toEqual(["none", "the provider never settled this charge", null]);
    expect(bed.requests()).toHaveLength(reads);
    expect(emitted).toEqual([]);
  });

  it("exactly seven days after the job ended, it is still read", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed, { finishedAgoMs: 7 * DAY });
    const { context } = contextFor(bed);
    await settleJob(context, job);
    expect((await store.getJob(job.id))!.chargeState).toBe("settled");
  });

  it("a job B never acknowledged (no provider job id) has nothing to read: its charge is recorded as never settled", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed, { providerJobId: false });
    const reads = bed.requests().length;
    await settleJob(contextFor(bed).context, job);
    expect((await store.getJob(job.id))!.chargeState).toBe("none");
    expect(bed.requests()).toHaveLength(reads);
  });

  it("a provider that does not settle after the end is never read for a settlement", async () => {
    const bed = await startB({ settlementDelayMs: 0 });
    const job = await finishedAtB(bed, { provider: "d" });
    const reads = bed.requests().length;
    await settleJob(contextFor(bed).context, job);
    expect((await store.getJob(job.id))!.chargeSource).toBe("the provider never settled this charge");
    expect(bed.requests()).toHaveLength(reads);
  });
});

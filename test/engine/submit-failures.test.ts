import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Clock, systemClock } from "../../src/core/clock.js";
import { loadConfig } from "../../src/core/config.js";
import { InputError, OutcomeUnknownError, ProviderError, type ProviderErrorDetail } from "../../src/core/errors.js";
import type { Job } from "../../src/core/job.js";
import type { EngineContext, ProviderCounters } from "../../src/engine/context.js";
import { createLogger } from "../../src/engine/logger.js";
import { PollScheduler } from "../../src/engine/polling.js";
import { handleSubmitFailure, recoverInterruptedSubmit, submitJob } from "../../src/engine/submit.js";
import { localFolderOutputs } from "../../src/outputs/local-folder.js";
import type { ProviderAdapter } from "../../src/providers/adapter.js";
import { RequestNotSentError, TransportError } from "../../src/providers/http.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import type { Store } from "../../src/store/store.js";
import { failingStore, sqliteFactory } from "../helpers/stores.js";
import { type BBed, imageToVideo, startB } from "../providers/b/bed.js";

// What a failed submit does to its job, one class of failure at a time: back to the queue (when, why, with which
// idempotency key), failed, or unknown_submission; what is said to listeners, to the log and to the store (slots,
// halts). The step is called in-process on a real SQLite store with a job claimed as the engine claims it; the
// engine's clock stands still, so every due time is exact.

const OWNER = "mg:test:1:abcdef";
const NOW = 1_800_000_000_000;
const MAX_SUBMIT_ATTEMPTS = 8;

let store: Store;
let cleanup: () => Promise<void>;
let folder: string;
let d: ProviderAdapter;
beforeEach(async () => {
  ({ store, cleanup } = await sqliteFactory.open());
  folder = mkdtempSync(join(tmpdir(), "mediagate-submit-"));
  d = createProviderRegistry(loadConfig({ env: { MEDIAGATE_D_BASE_URL: "http://127.0.0.1:8/d", MEDIAGATE_D_API_KEY: "k" }, cwd: folder })).get("d")!.adapter!;
});
afterEach(async () => {
  await cleanup();
  rmSync(folder, { recursive: true, force: true });
});

interface Bed {
  context: EngineContext;
  emitted: Job[];
  logLines: Array<{ level: number; msg: string } & Record<string, unknown>>;
  counters: ProviderCounters;
  wakes: number;
  haltsChanged: number;
  stopWaiting: AbortController;
}

/** The real store, whose next `failures` calls of `method` fail as while a database restarts (then it answers again). */
function restartingStore(failures: number, method: keyof Store = "transition"): { store: Store; failed: () => number } {
  return failingStore(store, failures, { fails: (name) => name === method, message: "Connection terminated unexpectedly" });
}

function bed(options: { store?: Store; signal?: AbortSignal; adapter?: ProviderAdapter; callContext?: EngineContext["callContext"] } = {}): Bed {
  const clock: Clock = { now: () => NOW, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
  const logLines: Bed["logLines"] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const counters: ProviderCounters = { requests: 0, status429: 0, backpressure: 0, submits: 0, polls: 0, downloads: 0, claims: 0, claimsLost: 0 };
  const stopWaiting = new AbortController();
  const result: Bed = { context: undefined as unknown as EngineContext, emitted: [], logLines, counters, wakes: 0, haltsChanged: 0, stopWaiting };
  result.context = {
    store: options.store ?? store,
    clock,
    owner: OWNER,
    leaseMs: 30_000,
    fallbackAfterMs: 60_000,
    log: createLogger({ level: "info", secrets: () => [], destination }),
    polls: new PollScheduler(store),
    outputs: localFolderOutputs,
    adapter: () => options.adapter ?? d,
    callContext:
      options.callContext ??
      (async () => {
        throw new Error("no request is made when a submit's failure is handled");
      }),
    counters: () => counters,
    timed: (_provider, _step, call) => call(),
    emit: (job) => result.emitted.push(job),
    wake: () => {
      result.wakes++;
    },
    haltsChanged: () => {
      result.haltsChanged++;
    },
    takeKnownStatus: () => undefined,
    signal: options.signal ?? new AbortController().signal,
    stopWaiting: stopWaiting.signal,
    givenUp: () => false,
  };
  return result;
}

/** A D job claimed for its submit as the engine claims it: `submitting`, leased to OWNER, its slot held, `attempts` tries so far. */
async function claimed(options: { attempts?: number; idempotencyKey?: string; submitSentAt?: number } = {}): Promise<Job> {
  const validated = d.validate({ provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 256, height: 256 } });
  const [inserted] = await store.insertJobs(
    [{ id: "job_1", ref: "lighthouse", batchId: null, provider: "d", model: validated.model, operation: validated.operation, body: validated.body, facts: validated.facts, warnings: [], estimateMicroUsd: 30_000, estimateSource: "D price", outDir: folder }],
    NOW - 5_000,
  );
  const claim = await store.claimForSubmit(inserted!.job.id, OWNER, d.limits(validated).slotPools, NOW - 1_000, 30_000);
  if (claim.kind !== "claimed") throw new Error(`not claimed: ${claim.kind}`);
  const patch = {
    ...(options.attempts !== undefined ? { attempts: options.attempts } : {}),
    ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
    ...(options.submitSentAt !== undefined ? { submitSentAt: options.submitSentAt } : {}),
  };
  if (Object.keys(patch).length === 0) return claim.job;
  return (await store.updateJob(claim.job.id, { state: "submitting" }, patch, NOW - 1_000))!;
}

const providerError = (code: string, detail: Partial<ProviderErrorDetail>) =>
  new ProviderError(code, `D said ${code}`, { provider: "d", retryable: false, ...detail });

/** The job after the step, its last event, and whether its slot is free again. */
async function outcome(job: Job) {
  const after = (await store.getJob(job.id))!;
  const last = (await store.events(job.id)).at(-1)!;
  const held = (await store.poolStatus()).reduce((sum, pool) => sum + pool.held, 0);
  return { after, last, held };
}

/** Checks a job went back to the queue, unleased, its slot free, at `at` (or within [from, to]), said to listeners and the loop woken. */
async function expectRequeued(b: Bed, job: Job, reason: string | RegExp, at: number | [number, number]) {
  const { after, last, held } = await outcome(job);
  expect(after.state).toBe("queued");
  if (typeof reason === "string") expect(after.reason).toBe(reason);
  else expect(after.reason).toMatch(reason);
  expect(last).toMatchObject({ fromState: "submitting", toState: "queued", reason: after.reason });
  if (typeof at === "number") expect(after.nextAttemptAt).toBe(at);
  else {
    expect(after.nextAttemptAt).toBeGreaterThanOrEqual(at[0]);
    expect(after.nextAttemptAt).toBeLessThanOrEqual(at[1]);
  }
  expect(after.leaseOwner).toBeNull();
  expect(after.leaseExpiresAt).toBeNull();
  expect(after.submitSentAt).toBeNull();
  expect(after.error).toBeNull();
  expect(held).toBe(0);
  expect(b.emitted.map((update) => [update.id, update.state])).toEqual([[job.id, "queued"]]);
  expect(b.wakes).toBe(1);
  return after;
}

async function expectEnded(b: Bed, job: Job, state: "failed" | "unknown_submission", code: string, message: string | RegExp) {
  const { after, last, held } = await outcome(job);
  expect(after.state).toBe(state);
  expect(after.error!.code).toBe(code);
  if (typeof message === "string") expect(after.error!.message).toBe(message);
  else expect(after.error!.message).toMatch(message);
  expect(after.reason).toBe(after.error!.message);
  expect(last).toMatchObject({ fromState: "submitting", toState: state, reason: after.error!.message });
  expect(after.leaseOwner).toBeNull();
  expect(after.leaseExpiresAt).toBeNull();
  expect(held).toBe(0);
  expect(b.emitted.map((update) => [update.id, update.state])).toEqual([[job.id, state]]);
  expect(b.wakes).toBe(1);
  return after;
}

/** 1 s doubling per attempt, capped at 60 s, full jitter: the window a backoff after `attempts` tries falls in. */
const backoffWindow = (attempts: number): [number, number] => [NOW, NOW + Math.min(60_000, 1_000 * 2 ** attempts)];

describe("a submit that failed, by what failed (SQLite, the engine's clock standing still)", () => {
  it("an input the provider refuses as invalid (InputError) fails the job with that field kept; nothing is retried", async () => {
    const b = bed();
    const job = await claimed();
    await handleSubmitFailure(b.context, job, new InputError("input.width", "must be a multiple of 16", "16 to 2048"), false);
    const after = await expectEnded(b, job, "failed", "invalid_input", "input.width: must be a multiple of 16 (allowed: 16 to 2048)");
    expect(after.error!.detail).toEqual({ field: "input.width" });
  });

  it("a request fetch refuses for good (a blocked port) fails the job as not sent and not charged", async () => {
    const b = bed();
    const job = await claimed();
    await handleSubmitFailure(b.context, job, new RequestNotSentError("d", "port 1 is blocked by fetch", { code: "blocked_port", permanent: true }), false);
    await expectEnded(b, job, "failed", "blocked_port", "not sent, not charged: port 1 is blocked by fetch");
  });

  it("a request that never left (its rate-token wait failed) goes back to the queue after a backoff; while the engine stops, at once", async () => {
    const b = bed();
    const job = await claimed({ attempts: 3 });
    await handleSubmitFailure(b.context, job, new RequestNotSentError("d", "the store did not answer"), false);
    await expectRequeued(b, job, "not sent: the store did not answer", backoffWindow(3));

    const stopping = bed();
    await store.transition(job.id, { state: "queued" }, "submitting", { leaseOwner: OWNER, attempts: 3 }, "claimed again", NOW);
    stopping.stopWaiting.abort();
    await handleSubmitFailure(stopping.context, (await store.getJob(job.id))!, new RequestNotSentError("d", "the engine is stopping"), false);
    expect((await store.getJob(job.id))!).toMatchObject({ state: "queued", nextAttemptAt: NOW, reason: "not sent: the engine is stopping" });
  });

  it("a provider that cannot be reached (nothing sent) is tried again after a backoff, the try and the next one said in the reason and logged; after 8 tries the job fails provider_unreachable", async () => {
    const b = bed();
    const job = await claimed({ attempts: 2 });
    await handleSubmitFailure(b.context, job, new TransportError("d", false, "connect ECONNREFUSED 127.0.0.1:9"), false);
    const after = await expectRequeued(b, job, /^D unreachable \(connect ECONNREFUSED 127\.0\.0\.1:9\); try 2 of 8 failed, next try in \d+ s, at \d\d:\d\d:\d\d UTC$/, backoffWindow(2));
    const seconds = Number(/next try in (\d+) s/.exec(after.reason!)![1]);
    expect(seconds).toBe(Math.max(1, Math.round((after.nextAttemptAt - NOW) / 1000)));
    expect(after.reason).toContain(`at ${new Date(after.nextAttemptAt).toISOString().slice(11, 19)} UTC`);
    const warned = b.logLines.filter((line) => line.level === 40);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ msg: after.reason, jobId: job.id, provider: "d", attempt: 2, nextTryAt: new Date(after.nextAttemptAt).toISOString() });

    const last = bed();
    await store.transition(job.id, { state: "queued" }, "submitting", { leaseOwner: OWNER, attempts: MAX_SUBMIT_ATTEMPTS }, "claimed again", NOW);
    await handleSubmitFailure(last.context, (await store.getJob(job.id))!, new TransportError("d", false, "connect ECONNREFUSED 127.0.0.1:9"), false);
    expect((await store.getJob(job.id))!.error).toEqual({
      code: "provider_unreachable",
      message: "not sent, not charged: D could not be reached in 8 tries (last: connect ECONNREFUSED 127.0.0.1:9)",
    });
  });

  for (const [name, error] of [
    ["a connection lost after the request was sent", new TransportError("d", true, "socket hang up")],
    ["an answer that says nothing of the outcome", new OutcomeUnknownError("d", "D answered 200 without a job id")],
  ] as const) {
    it(`${name}: without idempotency the job ends unknown_submission, never resent, with the command that resends it; with it, it is resent under the same key (up to 16 tries)`, async () => {
      const b = bed();
      const job = await claimed();
      await handleSubmitFailure(b.context, job, error, false);
      await expectEnded(
        b,
        job,
        "unknown_submission",
        "submit_outcome_unknown",
        `the submit was sent but its answer was lost (${error.message}); it is not resubmitted automatically because that could charge twice: check the provider, then \`mediagate resubmit ${job.id}\``,
      );
      await store.transition(job.id, { state: "unknown_submission" }, "queued", { error: null }, "resubmitted", NOW);
      await store.transition(job.id, { state: "queued" }, "submitting", { leaseOwner: OWNER, attempts: 2 * MAX_SUBMIT_ATTEMPTS - 1, idempotencyKey: "key-1" }, "claimed again", NOW);
      const keyed = bed();
      await handleSubmitFailure(keyed.context, (await store.getJob(job.id))!, error, true);
      const requeued = await expectRequeued(keyed, job, `submit outcome unknown; will resend with the same idempotency key: ${error.message}`, backoffWindow(2 * MAX_SUBMIT_ATTEMPTS - 1));
      expect(requeued.idempotencyKey).toBe("key-1");

      await store.transition(job.id, { state: "queued" }, "submitting", { leaseOwner: OWNER, attempts: 2 * MAX_SUBMIT_ATTEMPTS }, "claimed again", NOW);
      const spent = bed();
      await handleSubmitFailure(spent.context, (await store.getJob(job.id))!, error, true);
      expect((await store.getJob(job.id))!.state).toBe("unknown_submission");
    });
  }

  it("a provider pushing back on its slots: back to the queue until Retry-After, the pool believed full (no slot handed out before then), counted; a 4xx under an idempotency key gets a new key", async () => {
    const b = bed();
    const job = await claimed({ idempotencyKey: "key-1" });
    const error = providerError("concurrency_limit", { httpStatus: 429, providerCode: "TooManyTasks", retryable: true, backpressure: true, retryAfterMs: 7_000, rawBody: '{"error":"too many"}' });
    await handleSubmitFailure(b.context, job, error, true);
    const after = await expectRequeued(b, job, "provider at capacity (concurrency_limit); waiting for a slot", NOW + 7_000);
    expect(after.idempotencyKey).toBeNull();
    expect(b.counters.backpressure).toBe(1);
    const [pool] = await store.poolStatus();
    expect(pool!.blockedUntil).toBe(NOW + 7_000);
    expect(pool!.learnedCapacity).toBe(1);
    expect((await store.events(job.id)).at(-1)!.detail).toEqual({ httpStatus: 429, providerCode: "TooManyTasks", body: '{"error":"too many"}' });
  });

  it("pushed back without a Retry-After: the wait grows with the tries (2 s doubling, capped at 60 s, plus 1 s); a 5xx keeps the idempotency key", async () => {
    const b = bed();
    const job = await claimed({ attempts: 3, idempotencyKey: "key-1" });
    await handleSubmitFailure(b.context, job, providerError("busy", { httpStatus: 503, retryable: true, backpressure: true }), true);
    const after = await expectRequeued(b, job, "provider at capacity (busy); waiting for a slot", [NOW + 1_000, NOW + 1_000 + 16_000]);
    expect(after.idempotencyKey).toBe("key-1");
    expect((await store.poolStatus())[0]!.blockedUntil).toBe(after.nextAttemptAt);

    // At the first try the wait is 1 s plus at most 2 s: never sooner than a second.
    await store.transition(job.id, { state: "queued" }, "submitting", { leaseOwner: OWNER, attempts: 0 }, "claimed again", NOW);
    const first = bed();
    await handleSubmitFailure(first.context, (await store.getJob(job.id))!, providerError("busy", { httpStatus: 503, retryable: true, backpressure: true }), true);
    const waited = (await store.getJob(job.id))!.nextAttemptAt - NOW;
    expect(waited).toBeGreaterThanOrEqual(1_000);
    expect(waited).toBeLessThan(3_000);
  });

  it("a refusal that halts the provider (out of credits) fails the job, writes the halt with the job and the provider's words, and tells the loop at once", async () => {
    const b = bed();
    const job = await claimed();
    await handleSubmitFailure(b.context, job, providerError("insufficient_credits", { httpStatus: 402, haltsProvider: true }), false);
    await expectEnded(b, job, "failed", "insufficient_credits", "D said insufficient_credits");
    expect(await store.halts()).toEqual([{ provider: "d", code: "insufficient_credits", message: "D said insufficient_credits", jobId: job.id, at: NOW }]);
    expect(b.haltsChanged).toBe(1);
  });

  it("a retryable refusal goes back to the queue at its Retry-After (or after a backoff) until the 8th try, then fails; a 429 under an idempotency key gets a new key", async () => {
    const b = bed();
    const job = await claimed({ attempts: 7, idempotencyKey: "key-1" });
    await handleSubmitFailure(b.context, job, providerError("rate_limited", { httpStatus: 429, retryable: true, retryAfterMs: 4_000 }), true);
    const after = await expectRequeued(b, job, "provider error rate_limited, retrying later", NOW + 4_000);
    expect(after.idempotencyKey).toBeNull();

    await store.transition(job.id, { state: "queued" }, "submitting", { leaseOwner: OWNER, attempts: 2, idempotencyKey: "key-2" }, "claimed again", NOW);
    const unspecified = bed();
    await handleSubmitFailure(unspecified.context, (await store.getJob(job.id))!, providerError("server_error", { httpStatus: 500, retryable: true }), true);
    const backedOff = (await store.getJob(job.id))!;
    expect(backedOff.state).toBe("queued");
    expect(backedOff.nextAttemptAt).toBeGreaterThanOrEqual(NOW);
    expect(backedOff.nextAttemptAt).toBeLessThanOrEqual(NOW + 4_000);
    expect(backedOff.idempotencyKey).toBe("key-2");

    await store.transition(job.id, { state: "queued" }, "submitting", { leaseOwner: OWNER, attempts: MAX_SUBMIT_ATTEMPTS }, "claimed again", NOW);
    const spent = bed();
    await handleSubmitFailure(spent.context, (await store.getJob(job.id))!, providerError("server_error", { httpStatus: 500, retryable: true, rawBody: "oops" }), false);
    const failed = (await store.getJob(job.id))!;
    expect(failed.state).toBe("failed");
    expect(failed.error).toEqual({ code: "server_error", message: "D said server_error", detail: { httpStatus: 500, body: "oops" } });
  });

  it("a refusal that is not retryable fails the job at once with the provider's code, words and answer", async () => {
    const b = bed();
    const job = await claimed();
    await handleSubmitFailure(b.context, job, providerError("content_policy", { httpStatus: 400, providerCode: "Moderated", rawBody: '{"detail":"no"}' }), false);
    const after = await expectEnded(b, job, "failed", "content_policy", "D said content_policy");
    expect(after.error!.detail).toEqual({ httpStatus: 400, providerCode: "Moderated", body: '{"detail":"no"}' });
  });

  it("an unexpected error (a bug, not the provider): resent under the same key when there is one (up to 16 tries); otherwise unknown_submission, logged", async () => {
    const b = bed();
    const job = await claimed({ idempotencyKey: "key-1", attempts: 15 });
    await handleSubmitFailure(b.context, job, new TypeError("cannot read properties of undefined"), true);
    const after = await expectRequeued(b, job, "unexpected error during submit; will resend with the same idempotency key: cannot read properties of undefined", backoffWindow(15));
    expect(after.idempotencyKey).toBe("key-1");

    await store.transition(job.id, { state: "queued" }, "submitting", { leaseOwner: OWNER, attempts: 1 }, "claimed again", NOW);
    const plain = bed();
    await handleSubmitFailure(plain.context, (await store.getJob(job.id))!, new TypeError("cannot read properties of undefined"), false);
    expect((await store.getJob(job.id))!.error).toEqual({
      code: "submit_outcome_unknown",
      message: "unexpected error during submit (cannot read properties of undefined); not resubmitted automatically",
    });
    expect(plain.logLines.filter((line) => line.level === 50).map((line) => [line.msg, line.jobId, line.err])).toEqual([["unexpected error during submit", job.id, "cannot read properties of undefined"]]);
  });

  it("a failure handled after another engine took the job over changes nothing", async () => {
    const b = bed();
    const job = await claimed();
    await store.updateJob(job.id, { state: "submitting" }, { leaseOwner: "mg:other:2:fedcba" }, NOW);
    await handleSubmitFailure(b.context, job, providerError("content_policy", { httpStatus: 400 }), false);
    expect((await store.getJob(job.id))!).toMatchObject({ state: "submitting", leaseOwner: "mg:other:2:fedcba", error: null });
    expect(b.emitted).toEqual([]);
  });
});

describe("recording what became of a submit while the store fails", () => {
  it("the outcome is written once the store answers again: the first failure logged as an error naming what is being recorded, the next ones as warnings", async () => {
    const restarting = restartingStore(2);
    const b = bed({ store: restarting.store });
    const job = await claimed();
    await handleSubmitFailure(b.context, job, providerError("content_policy", { httpStatus: 400 }), false);
    expect(restarting.failed()).toBe(2);
    expect((await store.getJob(job.id))!).toMatchObject({ state: "failed", error: { code: "content_policy" } });
    const [first, second] = b.logLines.filter((line) => line.level >= 40);
    expect(first).toMatchObject({ level: 50, msg: "the store failed while recording that it ended failed (content_policy: D said content_policy); retrying until it answers", jobId: job.id, failures: 1, err: "Connection terminated unexpectedly" });
    expect(second).toMatchObject({ level: 40, msg: "still recording that it ended failed (content_policy: D said content_policy)", failures: 2 });
    expect(b.emitted.map((update) => update.state)).toEqual(["failed"]);
  });

  it("an engine that stops while the store is away leaves the job submitting for the next engine, saying what it could not record", async () => {
    const stopping = new AbortController();
    const restarting = restartingStore(1_000);
    const b = bed({ store: restarting.store, signal: stopping.signal });
    const job = await claimed();
    setTimeout(() => stopping.abort(), 300);
    await handleSubmitFailure(b.context, job, providerError("content_policy", { httpStatus: 400 }), false);
    expect((await store.getJob(job.id))!).toMatchObject({ state: "submitting", leaseOwner: OWNER });
    expect(b.logLines.at(-1)).toMatchObject({ level: 50, msg: "the engine stopped before the store recorded that it ended failed (content_policy: D said content_policy)", jobId: job.id });
    expect(b.emitted).toEqual([]);
  });
});

/** A B job claimed for its submit as the engine claims it, with `patch` (its key, its sent time) written after the claim. */
async function claimedAtB(b: BBed, patch: { idempotencyKey?: string; submitSentAt?: number } = {}): Promise<Job> {
  const validated = await b.validated(imageToVideo());
  const [inserted] = await store.insertJobs(
    [{ id: "job_b1", ref: "clip", batchId: null, provider: "b", model: validated.model, operation: validated.operation, body: validated.body, facts: validated.facts, warnings: [], estimateMicroUsd: 450_000, estimateSource: "B quote", outDir: folder }],
    NOW - 5_000,
  );
  const claim = await store.claimForSubmit(inserted!.job.id, OWNER, b.adapter.limits(validated).slotPools, NOW - 1_000, 30_000);
  if (claim.kind !== "claimed") throw new Error(`not claimed: ${claim.kind}`);
  if (Object.keys(patch).length === 0) return claim.job;
  return (await store.updateJob(claim.job.id, { state: "submitting" }, patch, NOW - 1_000))!;
}

describe("the idempotency key of a submit (B: idempotent submits)", () => {
  const submits = (b: BBed) => b.requests().filter((request) => request.method === "POST").length;

  it("a store that fails before the key is saved: nothing is sent, and the job goes back to the queue at once with the reason", async () => {
    const b = await startB();
    const job = await claimedAtB(b);
    const restarting = restartingStore(1, "updateJob");
    const stepBed = bed({ store: restarting.store, adapter: b.adapter });
    await submitJob(stepBed.context, job);
    expect(submits(b)).toBe(0);
    expect((await store.getJob(job.id))!).toMatchObject({
      state: "queued",
      idempotencyKey: null,
      nextAttemptAt: NOW,
      reason: "not sent: the store failed before the idempotency key was saved (Connection terminated unexpectedly)",
    });
  });

  it("a job another engine took before its key was saved is left to it: nothing sent, nothing changed", async () => {
    const b = await startB();
    const job = await claimedAtB(b);
    await store.updateJob(job.id, { state: "submitting" }, { leaseOwner: "mg:other:2:fedcba" }, NOW);
    const stepBed = bed({ adapter: b.adapter });
    await submitJob(stepBed.context, job);
    expect(submits(b)).toBe(0);
    expect((await store.getJob(job.id))!).toMatchObject({ state: "submitting", leaseOwner: "mg:other:2:fedcba", idempotencyKey: null });
    expect(stepBed.emitted).toEqual([]);
  });
});

describe("a submit its engine died during (D: no idempotency)", () => {
  it("never sent (no submit_sent_at): queued again at once, nothing can have reached D", async () => {
    const b = bed();
    const job = await claimed();
    await recoverInterruptedSubmit(b.context, job);
    await expectRequeued(b, job, "engine stopped before its submit was sent; queued again", NOW);
  });

  it("sent: unknown_submission, never resent, with the command that resends it", async () => {
    const b = bed();
    const job = await claimed({ submitSentAt: NOW - 900 });
    await recoverInterruptedSubmit(b.context, job);
    await expectEnded(
      b,
      job,
      "unknown_submission",
      "submit_outcome_unknown",
      `the engine stopped while this job's submit was in flight; D has no idempotency, so it is not resubmitted automatically (it may or may not have been accepted): check the provider, then \`mediagate resubmit ${job.id}\``,
    );
  });
});

describe("a submit its engine died during (B: idempotent submits)", () => {
  const submits = (b: BBed) => b.requests().filter((request) => request.method === "POST");

  it("with its key stored, after B accepted it: resent under the same key, B hands back the same task, and the job runs it (one task at B)", async () => {
    const b = await startB();
    const job = await claimedAtB(b, { idempotencyKey: "key-crash", submitSentAt: NOW - 900 });
    // The request that left before the engine died: B accepted it under the key.
    const before = await b.submitted(imageToVideo(), { id: job.id, idempotencyKey: "key-crash" });
    const stepBed = bed({ adapter: b.adapter, callContext: async (current) => b.jobContext({ id: current.id, idempotencyKey: current.idempotencyKey }) });
    await recoverInterruptedSubmit(stepBed.context, (await store.getJob(job.id))!);
    expect((await store.getJob(job.id))!).toMatchObject({ state: "running", providerJobId: before.submitted.providerJobId, idempotencyKey: "key-crash" });
    expect(submits(b).map((request) => request.headers["idempotency-key"])).toEqual(["key-crash", "key-crash"]);
    expect(b.emulator.jobs).toHaveLength(1);
    expect(stepBed.emitted.map((update) => update.state)).toEqual(["running"]);
  });

  it("a job without a key: the key is stored before the request and sent under it; the accepted job is recorded running with B's task, its first read due after the first poll delay, its tracking deadline, one submit counted", async () => {
    const b = await startB();
    const job = await claimedAtB(b);
    const stepBed = bed({ adapter: b.adapter, callContext: async (current) => b.jobContext({ id: current.id, idempotencyKey: current.idempotencyKey }) });
    await submitJob(stepBed.context, job);
    const after = (await store.getJob(job.id))!;
    const limits = b.adapter.limits(await b.validated(imageToVideo()));
    const firstPoll = await new PollScheduler(store).firstDelay(after, limits);
    expect(firstPoll).toBeGreaterThan(0);
    expect(after).toMatchObject({ state: "running", providerJobId: b.emulator.jobs[0]!.id, providerStatus: "submitted", submittedAt: NOW, nextAttemptAt: NOW + firstPoll, trackingDeadlineAt: NOW + limits.trackingDeadlineMs, reason: null, leaseOwner: OWNER });
    expect(after.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(submits(b).map((request) => request.headers["idempotency-key"])).toEqual([after.idempotencyKey]);
    expect(stepBed.counters.submits).toBe(1);
    expect(stepBed.emitted.map((update) => update.state)).toEqual(["running"]);
  });

  it("accepted after another engine took the job (its lease lapsed mid-request): nothing is overwritten, and the error log names B's task to check", async () => {
    const b = await startB();
    const job = await claimedAtB(b);
    const stepBed = bed({
      adapter: b.adapter,
      callContext: async (current) => {
        await store.updateJob(current.id, { state: "submitting" }, { leaseOwner: "mg:other:2:fedcba" }, NOW);
        return b.jobContext({ id: current.id, idempotencyKey: current.idempotencyKey });
      },
    });
    await submitJob(stepBed.context, job);
    const taskId = b.emulator.jobs[0]!.id;
    expect((await store.getJob(job.id))!).toMatchObject({ state: "submitting", leaseOwner: "mg:other:2:fedcba", providerJobId: null });
    expect(stepBed.emitted).toEqual([]);
    expect(stepBed.logLines.filter((line) => line.level === 50).map((line) => [line.msg, line.jobId, line.providerJobId])).toEqual([
      [`B accepted the job as ${taskId}, but it was no longer this engine's to record: check it at the provider`, job.id, taskId],
    ]);
  });

  it("without a key stored: nothing can have left (the key is saved before any request), so it is queued again at once", async () => {
    const b = await startB();
    const job = await claimedAtB(b);
    const stepBed = bed({ adapter: b.adapter });
    await recoverInterruptedSubmit(stepBed.context, job);
    expect(submits(b)).toEqual([]);
    await expectRequeued(stepBed, job, "engine stopped before sending; queued again", NOW);
  });
});

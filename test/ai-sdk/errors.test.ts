import { AISDKError } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { describeJob, MediagateJobError, MediagateWaitAbortedError } from "../../src/ai-sdk/errors.js";
import type { Job } from "../../src/core/job.js";

/** A job as the store holds it: one image on D, queued, no error; `fields` set what a test is about. */
function jobWith(fields: Partial<Job>): Job {
  return {
    id: "job_1",
    ref: "fox",
    batchId: null,
    provider: "d",
    model: "gen-2-pro",
    operation: null,
    body: {},
    facts: {},
    warnings: [],
    state: "queued",
    reason: null,
    attempts: 0,
    idempotencyKey: null,
    providerJobId: null,
    handles: null,
    providerStatus: null,
    estimateMicroUsd: null,
    estimateSource: "price",
    chargeMicroUsd: null,
    chargeSource: null,
    chargeState: "none",
    error: null,
    outDir: "/tmp/out",
    leaseOwner: null,
    leaseExpiresAt: null,
    nextAttemptAt: 0,
    createdAt: 0,
    updatedAt: 0,
    submittedAt: null,
    submitSentAt: null,
    providerDoneAt: null,
    finishedAt: null,
    trackingDeadlineAt: null,
    slotsHeld: [],
    lastPendingElapsedMs: null,
    pollFailures: 0,
    budgetId: null,
    budgetHeldMicroUsd: 0,
    blockedCode: null,
    route: null,
    tokenId: null,
    tenant: "local",
    notifyUrl: null,
    deadlineAt: null,
    queueRank: null,
    trace: null,
    ...fields,
  };
}

const succeeded = (id: string) => jobWith({ id, ref: `fox-${id}`, state: "succeeded" });

describe("AI SDK provider: the errors a call rejects with", () => {
  it("AI SDK error: a job is named by its id, its ref and its target: provider/model, or the route's current target", () => {
    expect(describeJob(jobWith({}))).toBe("mediagate job job_1 (ref fox, d/gen-2-pro)");
    const routed = jobWith({ provider: "f", model: "img-v2", route: { current: "f/img-v2", next: [], tried: [], fallbackOnFailure: false, failingSince: null } });
    expect(describeJob(routed)).toBe("mediagate job job_1 (ref fox, f/img-v2)");
    const operation = jobWith({ provider: "b", model: "acme/pix", route: { current: "b/acme/pix/generate", next: [], tried: [], fallbackOnFailure: false, failingSince: null } });
    expect(describeJob(operation)).toBe("mediagate job job_1 (ref fox, b/acme/pix/generate)");
  });

  it("AI SDK error: a job that ended failed says so with its error's code and message; never retryable, carrying the job and the call's jobs", () => {
    const failed = jobWith({ state: "failed", error: { code: "provider_failed", message: "D said Error" }, reason: "not this" });
    const error = new MediagateJobError(failed, [failed]);
    expect(error.message).toBe("mediagate job job_1 (ref fox, d/gen-2-pro) ended failed: provider_failed: D said Error");
    expect(error).toMatchObject({ name: "AI_MediagateJobError", code: "provider_failed", isRetryable: false });
    expect(error.job).toBe(failed);
    expect(error.jobs).toEqual([failed]);
    expect(error).toBeInstanceOf(AISDKError);
  });

  it("AI SDK error: a job that ended without an error recorded (cancelled, expired) takes its state as code and its reason as why, or says no reason was recorded", () => {
    const cancelled = jobWith({ state: "cancelled", reason: "cancelled by mediagate cancel" });
    expect(new MediagateJobError(cancelled, [cancelled])).toMatchObject({ code: "cancelled", message: "mediagate job job_1 (ref fox, d/gen-2-pro) ended cancelled: cancelled: cancelled by mediagate cancel" });
    const expired = jobWith({ state: "expired" });
    expect(new MediagateJobError(expired, [expired])).toMatchObject({ code: "expired", message: "mediagate job job_1 (ref fox, d/gen-2-pro) ended expired: expired: no reason recorded" });
  });

  it("AI SDK error: a job blocked (over budget) is queued and cannot move on by itself: its blocked code, its reason, and that it goes on once that changes", () => {
    const blocked = jobWith({ state: "queued", blockedCode: "over_budget", reason: "sending it would pass budget nightly's ceiling" });
    const error = new MediagateJobError(blocked, [blocked]);
    expect(error.code).toBe("over_budget");
    expect(error.message).toBe(
      "mediagate job job_1 (ref fox, d/gen-2-pro) is queued and cannot move on by itself: over_budget: sending it would pass budget nightly's ceiling; it stays in the store and goes on once that changes",
    );
  });

  it("AI SDK error: a job not finished and not blocked waits on a halted provider (provider_halted); an unwritable output folder keeps it capturing", () => {
    const halted = jobWith({ state: "queued", reason: "D is halted: insufficient_credits" });
    expect(new MediagateJobError(halted, [halted])).toMatchObject({
      code: "provider_halted",
      message: "mediagate job job_1 (ref fox, d/gen-2-pro) is queued and cannot move on by itself: provider_halted: D is halted: insufficient_credits; it stays in the store and goes on once that changes",
    });
    const unwritable = jobWith({ state: "capturing", blockedCode: "output_unwritable" });
    expect(new MediagateJobError(unwritable, [unwritable]).message).toBe(
      "mediagate job job_1 (ref fox, d/gen-2-pro) is capturing and cannot move on by itself: output_unwritable: no reason recorded; it stays in the store and goes on once that changes",
    );
  });

  it("AI SDK error: a problem with a job that succeeded (its file changed) is named over the job's own state and error", () => {
    const done = jobWith({ state: "succeeded", error: { code: "ignored", message: "ignored" }, reason: "saved" });
    const error = new MediagateJobError(done, [done], { code: "output_changed", reason: "its file /tmp/out/fox.png no longer has its sha256" });
    expect(error.code).toBe("output_changed");
    expect(error.message).toBe("mediagate job job_1 (ref fox, d/gen-2-pro) succeeded, but output_changed: its file /tmp/out/fox.png no longer has its sha256");
  });

  it("AI SDK error: the other jobs of the call that succeeded are counted (their files are saved); the failed job itself and jobs not succeeded are not", () => {
    const failed = jobWith({ state: "failed", error: { code: "provider_failed", message: "no" } });
    const running = jobWith({ id: "job_9", state: "running" });
    const prefix = "mediagate job job_1 (ref fox, d/gen-2-pro) ended failed: provider_failed: no";
    expect(new MediagateJobError(failed, [failed, running]).message).toBe(prefix);
    expect(new MediagateJobError(failed, [succeeded("job_2"), failed, running]).message).toBe(`${prefix} (1 other job of this call succeeded; their files are saved)`);
    expect(new MediagateJobError(failed, [succeeded("job_2"), failed, succeeded("job_3")]).message).toBe(`${prefix} (2 other jobs of this call succeeded; their files are saved)`);
    // A problem found on a job that succeeded does not count that job among the others.
    const done = succeeded("job_2");
    expect(new MediagateJobError(done, [done, succeeded("job_3")], { code: "no_output", reason: "it saved no image file" }).message).toBe(
      "mediagate job job_2 (ref fox-job_2, d/gen-2-pro) succeeded, but no_output: it saved no image file (1 other job of this call succeeded; their files are saved)",
    );
  });

  it("AI SDK error: MediagateJobError.isInstance knows its own errors only, across copies of the class (by marker)", () => {
    const failed = jobWith({ state: "failed" });
    expect(MediagateJobError.isInstance(new MediagateJobError(failed, [failed]))).toBe(true);
    expect(MediagateJobError.isInstance(new AISDKError({ name: "AI_Other", message: "other" }))).toBe(false);
    expect(MediagateJobError.isInstance(new Error("plain"))).toBe(false);
    expect(MediagateJobError.isInstance({ [Symbol.for("mediagate.ai-sdk.error.MediagateJobError")]: true })).toBe(true);
  });

  it("AI SDK error: an abort names the jobs that go on (nothing was cancelled), as an AbortError whose cause is the signal's reason", () => {
    const reason = new Error("user left");
    const one = new MediagateWaitAbortedError([jobWith({})], reason);
    expect(one.name).toBe("AbortError");
    expect(one.cause).toBe(reason);
    expect(one.message).toBe("aborted while waiting for mediagate job job_1 (ref fox, d/gen-2-pro); nothing was cancelled: the job stays in the store and goes on");
    const two = new MediagateWaitAbortedError([jobWith({}), jobWith({ id: "job_2", ref: "fox#2" })], reason);
    expect(two.message).toBe(
      "aborted while waiting for mediagate job job_1 (ref fox, d/gen-2-pro), mediagate job job_2 (ref fox#2, d/gen-2-pro); nothing was cancelled: the jobs stay in the store and go on",
    );
    expect(two.jobs.map((job) => job.id)).toEqual(["job_1", "job_2"]);
    expect(two).toBeInstanceOf(Error);
  });
});

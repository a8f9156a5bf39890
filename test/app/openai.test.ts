import { describe, expect, it } from "vitest";
import { NO_TIMING } from "../../src/app/eta.js";
import { videoAskedOf, videoProgress, videoStatusOf } from "../../src/app/openai.js";
import type { JobState } from "../../src/core/job.js";

/** How a job reads as OpenAI's video object (issue 38): its status, its progress from the expected finish, what was asked. */

const SUBMITTED = 1_000_000;
const running = { state: "running" as JobState, submittedAt: SUBMITTED };
const finishingAt = (ms: number) => ({ ...NO_TIMING, expectedFinishAt: ms });

describe("a job as OpenAI's video", () => {
  it("status: queued; in_progress while submitting, running or saving; completed; failed for every other end", () => {
    const statuses = (["queued", "submitting", "running", "capturing", "succeeded", "failed", "cancelled", "expired", "unknown_submission"] as JobState[]).map((state) => videoStatusOf({ state }));
    expect(statuses).toEqual(["queued", "in_progress", "in_progress", "in_progress", "completed", "failed", "failed", "failed", "failed"]);
  });

  it("progress: 0 queued, 1 sent, then the share of the expected time from submit that has passed, at most 99; 99 saving; 100 completed", () => {
    expect(videoProgress({ state: "queued", submittedAt: null }, finishingAt(SUBMITTED + 10_000), SUBMITTED)).toBe(0);
    expect(videoProgress({ state: "submitting", submittedAt: null }, NO_TIMING, SUBMITTED)).toBe(1);
    expect(videoProgress(running, finishingAt(SUBMITTED + 10_000), SUBMITTED)).toBe(1);
    expect(videoProgress(running, finishingAt(SUBMITTED + 10_000), SUBMITTED + 2_500)).toBe(25);
    expect(videoProgress(running, finishingAt(SUBMITTED + 10_000), SUBMITTED + 9_999)).toBe(99);
    // Running past its expected finish: not done until it is saved.
    expect(videoProgress(running, finishingAt(SUBMITTED + 10_000), SUBMITTED + 60_000)).toBe(99);
    expect(videoProgress({ state: "capturing", submittedAt: SUBMITTED }, NO_TIMING, SUBMITTED)).toBe(99);
    expect(videoProgress({ state: "succeeded", submittedAt: SUBMITTED }, NO_TIMING, SUBMITTED)).toBe(100);
    expect(videoProgress({ state: "failed", submittedAt: SUBMITTED }, NO_TIMING, SUBMITTED)).toBe(0);
  });

  it("progress with no pace learned yet (the model's first job): 1 while it runs, never a guess", () => {
    expect(videoProgress(running, NO_TIMING, SUBMITTED + 60_000)).toBe(1);
  });

  it("progress never falls as time passes under one expected finish", () => {
    let last = 0;
    for (let at = SUBMITTED; at <= SUBMITTED + 20_000; at += 137) {
      const progress = videoProgress(running, finishingAt(SUBMITTED + 10_000), at);
      expect(progress).toBeGreaterThanOrEqual(last);
      last = progress;
    }
  });

  it("seconds and size as asked are read back from the video's ref; null where not asked", () => {
    expect(videoAskedOf({ ref: "openai-video-5s-1280x720-AbC_dEf" })).toEqual({ seconds: "5", size: "1280x720" });
    expect(videoAskedOf({ ref: "openai-video-s--AbC_dEf" })).toEqual({ seconds: null, size: null });
    expect(videoAskedOf({ ref: "some-other-job" })).toEqual({ seconds: null, size: null });
  });
});

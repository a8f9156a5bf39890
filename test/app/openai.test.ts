import { describe, expect, it } from "vitest";
import { shareDoneAt } from "../../src/app/eta.js";
import { videoAskedOf, videoProgress, videoStatusOf } from "../../src/app/openai.js";
import type { JobState } from "../../src/core/job.js";

/** How a job reads as OpenAI's video object (issue 38): its status, its progress along its model's learned times, what was asked. */

const running = { state: "running" as JobState };

describe("a job as OpenAI's video", () => {
  it("status: queued; in_progress while submitting, running or saving; completed; failed for every other end", () => {
    const statuses = (["queued", "submitting", "running", "capturing", "succeeded", "failed", "cancelled", "expired", "unknown_submission"] as JobState[]).map((state) => videoStatusOf({ state }));
    expect(statuses).toEqual(["queued", "in_progress", "in_progress", "in_progress", "completed", "failed", "failed", "failed", "failed"]);
  });

  it("progress: 0 queued, 1 sent, then as far along as the learned times say, at most 99; 99 saving; 100 completed; 0 for an end that is not a success", () => {
    expect(videoProgress({ state: "queued" }, 0.5)).toBe(0);
    expect(videoProgress({ state: "submitting" }, null)).toBe(1);
    expect(videoProgress(running, 0)).toBe(1);
    expect(videoProgress(running, 0.25)).toBe(24);
    expect(videoProgress(running, 1)).toBe(99);
    expect(videoProgress({ state: "capturing" }, 0.5)).toBe(99);
    expect(videoProgress({ state: "succeeded" }, null)).toBe(100);
    expect(videoProgress({ state: "failed" }, 0.5)).toBe(0);
  });

  it("progress with no pace learned yet (the model's first job): 1 while it runs, never a guess", () => {
    expect(videoProgress(running, null)).toBe(1);
  });

  it("how far along: the share of the learned totals no longer than the job's age, drawn linearly between them", () => {
    const totals = [1_000, 2_000, 4_000, 8_000];
    expect(shareDoneAt(totals, 0)).toBe(0);
    expect(shareDoneAt(totals, 500)).toBe(0.125);
    expect(shareDoneAt(totals, 1_000)).toBe(0.25);
    expect(shareDoneAt(totals, 3_000)).toBe(0.625);
    expect(shareDoneAt(totals, 8_000)).toBe(1);
    expect(shareDoneAt(totals, 60_000)).toBe(1);
    expect(shareDoneAt([], 60_000)).toBe(0);
  });

  it("how far along never falls as the job ages, also where it outlives a learned total (the expected finish then moves later)", () => {
    const totals = [900, 1_000, 1_100, 5_000];
    let last = 0;
    for (let age = 0; age <= 10_000; age += 37) {
      const progress = videoProgress(running, shareDoneAt(totals, age));
      expect(progress).toBeGreaterThanOrEqual(last);
      last = progress;
    }
    expect(last).toBe(99);
  });

  it("seconds and size as asked are read back from the video's ref; null where not asked", () => {
    expect(videoAskedOf({ ref: "openai-video-5s-1280x720-AbC_dEf" })).toEqual({ seconds: "5", size: "1280x720" });
    expect(videoAskedOf({ ref: "openai-video-s--AbC_dEf" })).toEqual({ seconds: null, size: null });
    expect(videoAskedOf({ ref: "some-other-job" })).toEqual({ seconds: null, size: null });
  });
});

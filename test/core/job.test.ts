import { describe, expect, it } from "vitest";
import { canTransition, isTerminal, JOB_STATES, type JobState, TERMINAL_STATES } from "../../src/core/job.js";

/**
 * DESIGN.md's diagram, plus submitting → queued (pushed back, nothing created; or a routed job refused before accepting,
 * moving to its next target), unknown_submission → queued (`mediagate resubmit`) and running → queued (a routed job with
 * fallback_on_failure whose generation failed at no cost).
 */
const ALLOWED: Record<JobState, JobState[]> = {
  queued: ["submitting", "cancelled", "failed"],
  // Its deadline passed between its claim and its send: cancelled, nothing sent (issue 37, part 2).
  submitting: ["running", "failed", "unknown_submission", "queued", "cancelled"],
  running: ["capturing", "failed", "cancelled", "expired", "queued"],
  capturing: ["succeeded", "failed"],
  succeeded: [],
  failed: [],
  cancelled: [],
  expired: [],
  unknown_submission: ["queued"],
};

describe("job states", () => {
  it("there are nine states, in the order a job moves through them", () => {
    expect(JOB_STATES).toEqual(["queued", "submitting", "running", "capturing", "succeeded", "failed", "cancelled", "expired", "unknown_submission"]);
  });

  it("succeeded, failed, cancelled, expired and unknown_submission are terminal; the others are not", () => {
    expect([...TERMINAL_STATES].sort()).toEqual(["cancelled", "expired", "failed", "succeeded", "unknown_submission"]);
    expect(JOB_STATES.filter(isTerminal)).toEqual(["succeeded", "failed", "cancelled", "expired", "unknown_submission"]);
  });

  it("every allowed transition is allowed, and no other", () => {
    for (const from of JOB_STATES) {
      for (const to of JOB_STATES) expect(canTransition(from, to), `${from} → ${to}`).toBe(ALLOWED[from].includes(to));
    }
  });

  it("a transition out of succeeded, failed, cancelled or expired is refused", () => {
    for (const from of ["succeeded", "failed", "cancelled", "expired"] as const) {
      for (const to of JOB_STATES) expect(canTransition(from, to)).toBe(false);
    }
  });

  it("an unknown submission leaves only by going back to the queue (resubmit)", () => {
    expect(JOB_STATES.filter((to) => canTransition("unknown_submission", to))).toEqual(["queued"]);
  });

  it("a job pushed back while submitting returns to the queue; a running one only to move to its route's next target after a failed generation (fallback_on_failure); a capturing one never (it was rendered and charged)", () => {
    expect(canTransition("submitting", "queued")).toBe(true);
    expect(canTransition("running", "queued")).toBe(true);
    expect(canTransition("capturing", "queued")).toBe(false);
  });
});

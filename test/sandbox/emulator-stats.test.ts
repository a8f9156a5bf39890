import { describe, expect, it } from "vitest";
import { countBy, peakConcurrency } from "../../src/sandbox/emulator-stats.js";

describe("emulator stats", () => {
  it("peak concurrency: spans that overlap count together; one that ends as the next starts does not overlap it", () => {
    expect(peakConcurrency([])).toBe(0);
    expect(peakConcurrency([{ start: 0, end: 10 }, { start: 10, end: 20 }])).toBe(1);
    expect(peakConcurrency([{ start: 0, end: 10 }, { start: 9, end: 20 }, { start: 5, end: 6 }, { start: 9, end: 12 }])).toBe(3);
    expect(peakConcurrency([{ start: 0, end: Infinity }, { start: 100, end: 200 }])).toBe(2);
  });

  it("peak concurrency: a task with no render time still counts as one task in flight", () => {
    expect(peakConcurrency([{ start: 5, end: 5 }])).toBe(1);
    expect(peakConcurrency([{ start: 5, end: 5 }, { start: 0, end: 10 }])).toBe(2);
  });

  it("tasks by state counts each value", () => {
    expect(countBy(["Ready", "Pending", "Ready"], (status) => status)).toEqual({ Ready: 2, Pending: 1 });
  });
});

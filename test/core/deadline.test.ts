import { describe, expect, it } from "vitest";
import { CANCEL_AFTER_ALLOWED, CANCEL_AFTER_HEADER_ALLOWED, deadlineOf, MAX_CANCEL_AFTER_S, readCancelAfterHeader, readCancelAfterS } from "../../src/core/deadline.js";

describe("cancel_after_s and Cancel-After (issue 37, part 2)", () => {
  it("cancel_after_s: absent is none; a whole number of seconds from 1 to 30 days; anything else refused naming the field", () => {
    expect(readCancelAfterS(undefined, "cancel_after_s")).toBeNull();
    expect(readCancelAfterS(null, "cancel_after_s")).toBeNull();
    expect(readCancelAfterS(1, "cancel_after_s")).toBe(1);
    expect(readCancelAfterS(MAX_CANCEL_AFTER_S, "cancel_after_s")).toBe(2_592_000);
    for (const value of [0, -5, 1.5, MAX_CANCEL_AFTER_S + 1, "60", true, [], {}]) {
      expect(() => readCancelAfterS(value, "--cancel-after")).toThrow(expect.objectContaining({ field: "--cancel-after", allowed: CANCEL_AFTER_ALLOWED }));
    }
    expect(() => readCancelAfterS("soon", "cancel_after_s")).toThrow('cancel_after_s: "soon" is not a number of seconds it takes');
  });

  it("Cancel-After: seconds alone, or a number with s, m or h (either case, spaces around), up to 30 days; anything else refused naming the header", () => {
    expect(readCancelAfterHeader("90")).toBe(90);
    expect(readCancelAfterHeader("90s")).toBe(90);
    expect(readCancelAfterHeader(" 5m ")).toBe(300);
    expect(readCancelAfterHeader("1H")).toBe(3_600);
    expect(readCancelAfterHeader("720h")).toBe(2_592_000);
    for (const text of ["", "0", "0s", "721h", "1d", "1.5m", "-5s", "5 minutes", "1234567890"]) {
      expect(() => readCancelAfterHeader(text)).toThrow(expect.objectContaining({ field: "Cancel-After", allowed: CANCEL_AFTER_HEADER_ALLOWED }));
    }
  });

  it("the deadline is the admission's time plus the seconds; none without them", () => {
    expect(deadlineOf(1_000, 90)).toBe(91_000);
    expect(deadlineOf(1_000, null)).toBeNull();
    expect(deadlineOf(1_000, undefined)).toBeNull();
  });
});

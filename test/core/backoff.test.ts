import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fullJitterBackoffMs, retryAfterMs } from "../../src/core/backoff.js";

const NOW = Date.parse("2026-11-25T12:00:00Z");

describe("full-jitter exponential backoff", () => {
  it("the wait is a uniform draw below 500 ms × 2^attempt by default", () => {
    const half = () => 0.5;
    expect(fullJitterBackoffMs(0, { random: half })).toBe(250);
    expect(fullJitterBackoffMs(1, { random: half })).toBe(500);
    expect(fullJitterBackoffMs(3, { random: half })).toBe(2_000);
    expect(fullJitterBackoffMs(3, { random: () => 0 })).toBe(0);
  });

  it("the wait is whole milliseconds, rounded down", () => {
    expect(fullJitterBackoffMs(0, { random: () => 0.3333 })).toBe(166);
    expect(fullJitterBackoffMs(0, { random: () => 0.9999 })).toBe(499);
  });

  it("the ceiling stops growing at the cap, one minute by default", () => {
    expect(fullJitterBackoffMs(7, { random: () => 0.5 })).toBe(30_000);
    expect(fullJitterBackoffMs(40, { random: () => 0.5 })).toBe(30_000);
    expect(fullJitterBackoffMs(10, { baseMs: 5_000, capMs: 300_000, random: () => 0.5 })).toBe(150_000);
    expect(fullJitterBackoffMs(2, { baseMs: 5_000, capMs: 300_000, random: () => 0.5 })).toBe(10_000);
  });

  it("a negative attempt counts as the first", () => {
    expect(fullJitterBackoffMs(-3, { random: () => 0.5 })).toBe(250);
  });

  it("without an injected random source the wait is still within its bounds", () => {
    for (let index = 0; index < 50; index++) {
      const wait = fullJitterBackoffMs(2);
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThan(2_000);
    }
  });

  it("property: the wait is an integer in [0, min(cap, base × 2^attempt))", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, baseMs, capMs, draw) => {
          const wait = fullJitterBackoffMs(attempt, { baseMs, capMs, random: () => draw });
          expect(Number.isInteger(wait)).toBe(true);
          expect(wait).toBeGreaterThanOrEqual(0);
          expect(wait).toBeLessThan(Math.min(capMs, baseMs * 2 ** attempt));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("the server's requested wait (retry-after-ms, then Retry-After)", () => {
  it("retry-after-ms is read first, in milliseconds, rounded up", () => {
    expect(retryAfterMs({ "retry-after-ms": "1500", "retry-after": "9" }, NOW)).toBe(1_500);
    expect(retryAfterMs({ "retry-after-ms": "12.3" }, NOW)).toBe(13);
    expect(retryAfterMs({ "retry-after-ms": "12.34" }, NOW)).toBe(13);
    expect(retryAfterMs({ "retry-after-ms": " 20 " }, NOW)).toBe(20);
  });

  it("an unreadable retry-after-ms falls back to Retry-After", () => {
    expect(retryAfterMs({ "retry-after-ms": "soon", "retry-after": "2" }, NOW)).toBe(2_000);
    expect(retryAfterMs({ "retry-after-ms": "-5", "retry-after": "2" }, NOW)).toBe(2_000);
    expect(retryAfterMs({ "retry-after-ms": "5ms", "retry-after": "2" }, NOW)).toBe(2_000);
    expect(retryAfterMs({ "retry-after-ms": "-5" }, NOW)).toBeNull();
  });

  it("Retry-After in seconds, fractions rounded up to the millisecond", () => {
    expect(retryAfterMs({ "retry-after": "30" }, NOW)).toBe(30_000);
    expect(retryAfterMs({ "retry-after": "1.5" }, NOW)).toBe(1_500);
    expect(retryAfterMs({ "retry-after": "0.0001" }, NOW)).toBe(1);
    expect(retryAfterMs({ "retry-after": " 3 " }, NOW)).toBe(3_000);
    expect(retryAfterMs({ "retry-after": "0" }, NOW)).toBe(0);
  });

  it("Retry-After as an HTTP date is the time left until then, never negative", () => {
    expect(retryAfterMs({ "retry-after": "Wed, 25 Nov 2026 12:00:45 GMT" }, NOW)).toBe(45_000);
    expect(retryAfterMs({ "retry-after": "Wed, 25 Nov 2026 11:59:00 GMT" }, NOW)).toBe(0);
  });

  it("Retry-After in RFC 9110's obsolete date forms (RFC 850, asctime) is read too", () => {
    expect(retryAfterMs({ "retry-after": "Wednesday, 25-Nov-26 12:00:45 GMT" }, NOW)).toBe(45_000);
    // asctime has no zone: it is GMT, whatever this machine's time zone.
    expect(retryAfterMs({ "retry-after": "Wed Nov 25 12:00:45 2026" }, NOW)).toBe(45_000);
  });

  it("a Retry-After that is neither seconds nor an HTTP date is unreadable (no wait suggested), not a date Date.parse guesses", () => {
    // Date.parse reads "-5" as a day in 2001, which made it "retry at once".
    for (const value of ["-5", "-1.5", "abc 5", "2026-11-25", "25 Nov 2026"]) expect(retryAfterMs({ "retry-after": value }, NOW)).toBeNull();
  });

  it("header names are matched without regard to case, in a plain record and in Headers", () => {
    expect(retryAfterMs({ "Retry-After": "4" }, NOW)).toBe(4_000);
    expect(retryAfterMs({ "Retry-After-Ms": "40" }, NOW)).toBe(40);
    expect(retryAfterMs(new Headers({ "Retry-After": "5" }), NOW)).toBe(5_000);
    expect(retryAfterMs(new Headers({ "retry-after-ms": "50", "retry-after": "5" }), NOW)).toBe(50);
  });

  it("no wait is suggested when the headers are absent, empty or unreadable", () => {
    expect(retryAfterMs({}, NOW)).toBeNull();
    expect(retryAfterMs(new Headers(), NOW)).toBeNull();
    expect(retryAfterMs({ "retry-after": undefined }, NOW)).toBeNull();
    expect(retryAfterMs({ "retry-after": "later" }, NOW)).toBeNull();
    expect(retryAfterMs({ "retry-after": "x5" }, NOW)).toBeNull();
    expect(retryAfterMs({ "retry-after": "5 seconds" }, NOW)).toBeNull();
    expect(retryAfterMs({ "content-type": "application/json" }, NOW)).toBeNull();
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { newId } from "../../src/core/ids.js";

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

function timeOf(id: string): number {
  const time = id.slice(id.indexOf("_") + 1, id.indexOf("_") + 11);
  return [...time].reduce((value, character) => value * 32 + CROCKFORD.indexOf(character), 0);
}

describe("ids", () => {
  it("an id is the prefix, an underscore, then 26 lower-case Crockford characters", () => {
    expect(newId("job", 0)).toMatch(/^job_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(newId("batch")).toMatch(/^batch_[0-9a-hjkmnp-tv-z]{26}$/);
  });

  it("the first ten characters are the time in milliseconds, base 32", () => {
    expect(newId("job", 0).slice(4, 14)).toBe("0000000000");
    expect(newId("job", 31).slice(4, 14)).toBe("000000000z");
    expect(newId("job", 32).slice(4, 14)).toBe("0000000010");
    expect(timeOf(newId("job", Date.parse("2026-11-25T12:00:00Z")))).toBe(Date.parse("2026-11-25T12:00:00Z"));
  });

  it("by default the time is now", () => {
    const before = Date.now();
    const id = newId("job");
    expect(timeOf(id)).toBeGreaterThanOrEqual(before);
    expect(timeOf(id)).toBeLessThanOrEqual(Date.now());
  });

  it("ids made in the same millisecond differ", () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => newId("job", 1_700_000_000_000)));
    expect(ids.size).toBe(1_000);
  });

  it("ids made one after another in the same millisecond are in the order made, the random part one more each time (a batch's rows are appended to the indexes ending in the id)", () => {
    const ids = Array.from({ length: 2_000 }, () => newId("job", 1_700_000_000_123));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(2_000);
    const tailOf = (id: string) => [...id.slice(-16)].reduce((value, character) => value * 32n + BigInt(CROCKFORD.indexOf(character)), 0n);
    for (let index = 1; index < ids.length; index++) expect(tailOf(ids[index]!) - tailOf(ids[index - 1]!)).toBe(1n);
    // A new millisecond starts from a fresh random part.
    const next = newId("job", 1_700_000_000_124);
    expect(timeOf(next)).toBe(1_700_000_000_124);
  });

  it("an earlier time than the last id's is written as given (a test's clock set back), not replaced by the last one", () => {
    newId("job", 1_700_000_000_500);
    expect(timeOf(newId("job", 1_700_000_000_000))).toBe(1_700_000_000_000);
  });

  it("property: ids sort in the order of their times", () => {
    fc.assert(
      fc.property(fc.nat({ max: 2 ** 48 - 2 }), fc.integer({ min: 1, max: 2 ** 40 }), (earlier, gap) => {
        const later = Math.min(earlier + gap, 2 ** 48 - 1);
        expect(newId("job", earlier) < newId("job", later)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

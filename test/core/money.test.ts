import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatMicroUsd, MAX_MICRO_USD, MICRO_PER_USD, microUsdProblem, parseUsd, readUsd, usdToMicroUsd } from "../../src/core/money.js";

describe("money is integer micro-USD", () => {
  it("one USD is a million micro-USD", () => {
    expect(MICRO_PER_USD).toBe(1_000_000);
  });

  it("a price-table amount becomes exact micro-USD, rounding away binary fractions", () => {
    expect(usdToMicroUsd(0.03)).toBe(30_000);
    expect(usdToMicroUsd(0.1 + 0.2)).toBe(300_000);
    expect(usdToMicroUsd(1.2345675)).toBe(1_234_568);
    expect(usdToMicroUsd(12)).toBe(12_000_000);
  });

  it("parseUsd reads whole dollars, decimals and a leading $, ignoring surrounding spaces", () => {
    expect(parseUsd("2")).toBe(2_000_000);
    expect(parseUsd("0.50")).toBe(500_000);
    expect(parseUsd("$3.1")).toBe(3_100_000);
    expect(parseUsd("  $0.000001 ")).toBe(1);
    expect(parseUsd("0")).toBe(0);
    expect(parseUsd("1234.567891")).toBe(1_234_567_891);
  });

  it("parseUsd refuses more than six decimals", () => {
    expect(parseUsd("1.1234567")).toBeNull();
    expect(parseUsd("0.0000001")).toBeNull();
  });

  it("parseUsd refuses negative amounts, a $ anywhere but first, and anything that is not a plain decimal", () => {
    for (const text of ["-1", "1$", "$$1", "1.", ".5", "", " ", "$", "1e3", "0x10", "1,000", "2.5.1", "abc", "NaN", "Infinity", "+1"]) {
      expect(parseUsd(text), JSON.stringify(text)).toBeNull();
    }
  });

  it("every amount typed is integer micro-USD from 0 to $1,000,000,000 (1e15 micro-USD, inside Number.MAX_SAFE_INTEGER and bigint); past it the reason names the ceiling", () => {
    expect(MAX_MICRO_USD).toBe(1e15);
    expect(MAX_MICRO_USD).toBeLessThan(Number.MAX_SAFE_INTEGER);
    expect(readUsd("1000000000")).toEqual({ microUsd: 1e15 });
    expect(readUsd("$999999999.999999")).toEqual({ microUsd: 1e15 - 1 });
    for (const text of ["1000000000.000001", "9300000000000", "99999999999999999", "123456789012345678901234567890"]) {
      expect(readUsd(text), text).toEqual({ reason: `${text} is more than $1000000000` });
      expect(parseUsd(text)).toBeNull();
    }
    expect(readUsd("abc")).toEqual({ reason: '"abc" is not an amount of US dollars' });
  });

  it("a count of micro-USD given as a number is a whole number from 0 to 1e15", () => {
    expect(microUsdProblem(0)).toBeNull();
    expect(microUsdProblem(1e15)).toBeNull();
    expect(microUsdProblem(1e15 + 1)).toBe("1000000000000001 is more than 1000000000000000 ($1000000000)");
    expect(microUsdProblem(1e23)).toBe("1e+23 is not a whole number of micro-USD");
    expect(microUsdProblem(2.5)).toBe("2.5 is not a whole number of micro-USD");
    expect(microUsdProblem(-1)).toBe("-1 is negative");
    expect(microUsdProblem("5")).toBe("5 is not a whole number of micro-USD");
  });

  it("formatMicroUsd shows four decimals, more only when needed to stay exact", () => {
    expect(formatMicroUsd(30_000)).toBe("$0.0300");
    expect(formatMicroUsd(0)).toBe("$0.0000");
    expect(formatMicroUsd(2_500_000)).toBe("$2.5000");
    expect(formatMicroUsd(100_000)).toBe("$0.1000");
    expect(formatMicroUsd(123_450)).toBe("$0.12345");
    expect(formatMicroUsd(1)).toBe("$0.000001");
    expect(formatMicroUsd(12_345_678_901)).toBe("$12345.678901");
  });

  it("formatMicroUsd puts the sign of a negative amount (a refund) before the $", () => {
    expect(formatMicroUsd(-1_500_000)).toBe("-$1.5000");
    expect(formatMicroUsd(-1)).toBe("-$0.000001");
  });

  it("property: any amount formatted and parsed back is the same number of micro-USD", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MICRO_USD }), (microUsd) => {
        expect(parseUsd(formatMicroUsd(microUsd))).toBe(microUsd);
      }),
      { numRuns: 300 },
    );
  });

  it("property: a typed amount with up to six decimals is read exactly", () => {
    fc.assert(
      fc.property(fc.nat({ max: 10_000_000 }), fc.nat({ max: 999_999 }), fc.integer({ min: 1, max: 6 }), (whole, fractionDigits, width) => {
        const fraction = String(fractionDigits).padStart(6, "0").slice(0, width);
        expect(parseUsd(`${whole}.${fraction}`)).toBe(whole * MICRO_PER_USD + Number(fraction.padEnd(6, "0")));
      }),
      { numRuns: 300 },
    );
  });
});

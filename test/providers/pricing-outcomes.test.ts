/**
 * What each provider's pricing says of a finished job, for every outcome
 * (written from mutation testing: these branches were reached by no test).
 * A charge is a number only where the spec gives one; everywhere else it is
 * null with a source saying why, never a guess.
 */
import { describe, expect, it } from "vitest";
import type { ProviderStatus } from "../../src/providers/adapter.js";
import { chargeA } from "../../src/providers/a/pricing.js";
import { quoteAmountOf } from "../../src/providers/b/quote.js";
import { chargeC } from "../../src/providers/c/pricing.js";
import { chargeF, estimateF, F_PRICE_SOURCE } from "../../src/providers/f/pricing.js";

const image = { url: "http://127.0.0.1:1/x.png", kind: "image" } as never;
const succeeded = (usage?: unknown, outputs = [image]): ProviderStatus => ({ kind: "succeeded", providerStatus: "succeeded", outputs, usage, raw: {} });
const failed = (code: string): ProviderStatus => ({ kind: "failed", providerStatus: "failed", code, message: "no", raw: {} });

describe("A: a charge is tokens × the configured rate, and only for a succeeded task", () => {
  it("a failed, cancelled or expired task is not priced, and the source names A's status", () => {
    for (const outcome of [failed("x"), { kind: "cancelled", providerStatus: "cancelled", raw: {} } as ProviderStatus, { kind: "expired", providerStatus: "expired", raw: {} } as ProviderStatus]) {
      // With tokens reported and a rate set, a status other than succeeded still bills nothing we can know.
      const charge = chargeA({ ...outcome, usage: { tokens: 1_000 } } as ProviderStatus, 2);
      expect(charge).toEqual({ microUsd: null, source: `A reported ${outcome.providerStatus} and no usage; whether it bills such a task is not shown` });
    }
  });

  it("a succeeded task: tokens × rate, rounded to the micro-dollar", () => {
    expect(chargeA(succeeded({ tokens: 1_001 }), 2.5)).toEqual({ microUsd: 2_503, source: "1001 tokens × 2.5 micro-USD per token (configured rate)" });
  });

  it("without a rate: unpriced, naming the tokens used when A reported them, and nothing more when it did not", () => {
    expect(chargeA(succeeded({ tokens: 42 }), null).source).toBe("unpriced: A bills in tokens; set a per-token rate (42 tokens used)");
    expect(chargeA(succeeded({ tokens: null }), null).source).toBe("unpriced: A bills in tokens; set a per-token rate");
    expect(chargeA(succeeded(undefined), null)).toEqual({ microUsd: null, source: "unpriced: A bills in tokens; set a per-token rate" });
  });

  it("with a rate but no token count: unpriced, saying A reported none", () => {
    expect(chargeA(succeeded({ tokens: null }), 2)).toEqual({ microUsd: null, source: "A reported no token count for this task" });
  });
});

describe("B: the amount of a quote answer is its one non-negative integer `…_micro_usd` field", () => {
  it("reads the one such field, whatever its name before the suffix", () => {
    expect(quoteAmountOf({ price_micro_usd: 30_000, currency: "USD" })).toEqual({ field: "price_micro_usd", microUsd: 30_000 });
    expect(quoteAmountOf({ quote_micro_usd: 0 })).toEqual({ field: "quote_micro_usd", microUsd: 0 });
  });

  it("an answer that is not an object has no amount", () => {
    for (const body of [null, undefined, 30_000, "30000", [{ price_micro_usd: 30_000 }], true]) expect(quoteAmountOf(body)).toBeNull();
  });

  it("a field counts only if it is named …_micro_usd and holds a safe, non-negative integer", () => {
    expect(quoteAmountOf({ price: 30_000 })).toBeNull();
    expect(quoteAmountOf({ price_micro_usd: "30000" })).toBeNull();
    expect(quoteAmountOf({ price_micro_usd: 0.5 })).toBeNull();
    expect(quoteAmountOf({ price_micro_usd: -1 })).toBeNull();
    expect(quoteAmountOf({ price_micro_usd: 2 ** 53 })).toBeNull();
    // A field that does not count leaves the one that does as the amount.
    expect(quoteAmountOf({ price_micro_usd: 30_000, note_micro_usd: "n/a", amount: 7 })).toEqual({ field: "price_micro_usd", microUsd: 30_000 });
  });

  it("two amounts are ambiguous: none is read", () => {
    expect(quoteAmountOf({ price_micro_usd: 30_000, balance_micro_usd: 5_000_000 })).toBeNull();
  });
});

describe("C: only a moderation failure has a known charge (refunded: zero)", () => {
  it("moderation_failed is charged 0 with the refund rule as its source", () => {
    expect(chargeC(failed("moderation_failed"))).toEqual({ microUsd: 0, source: "C refunds the credits of a moderation failure (status 7)" });
  });

  it("any other failure, and a success, are unpriced (C's prices are not in the spec)", () => {
    for (const outcome of [failed("generation_failed"), succeeded(), { kind: "cancelled", providerStatus: "cancelled", raw: {} } as ProviderStatus]) {
      expect(chargeC(outcome)).toEqual({ microUsd: null, source: "unpriced: C's prices are not in the spec" });
    }
    // The code alone is not enough: a job that did not fail is never "refunded".
    expect(chargeC({ kind: "expired", providerStatus: "expired", code: "moderation_failed", raw: {} } as unknown as ProviderStatus).microUsd).toBeNull();
  });
});

describe("F: billed per image, but no price is published: never a number", () => {
  it("the estimate and every charge are null; the source says why and, for a success, how many images", () => {
    expect(F_PRICE_SOURCE).toBe("unpriced: F bills per image but publishes no price");
    expect(estimateF()).toEqual({ microUsd: null, source: F_PRICE_SOURCE });
    expect(chargeF(succeeded(undefined, [image]))).toEqual({ microUsd: null, source: `${F_PRICE_SOURCE}; 1 image generated` });
    expect(chargeF(succeeded(undefined, [image, image, image]))).toEqual({ microUsd: null, source: `${F_PRICE_SOURCE}; 3 images generated` });
    expect(chargeF(failed("content_filtered"))).toEqual({ microUsd: null, source: `${F_PRICE_SOURCE}; whether unfinished generations are billed is not shown` });
  });
});

import type { Estimate } from "../adapter.js";

/**
 * Without a connection there is no price: B prices a body by its quote call.
 * The catalog record's pricing metadata is not read because its field names
 * are not shown, and the conditions between published rates (1080p versus
 * 1080p with 5 s) are not shown either.
 */
export const UNPRICED_WITHOUT_QUOTE: Estimate = {
  microUsd: null,
  source: "unpriced: B prices a request only through its quote call (POST /catalog/apis/{api_id}/quote), which needs a connection",
};

/**
 * The amount of a quote answer. spec B rule 4: "the response shape of … the
 * quote: not shown", only that it returns an amount. B names money fields
 * `…_micro_usd` (charge_micro_usd, balance_micro_usd), so the amount is the
 * one top-level field so named holding a non-negative integer; none or
 * several means the amount cannot be read.
 */
export function quoteAmountOf(body: unknown): { field: string; microUsd: number } | null {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const amounts = Object.entries(body).filter(
    ([name, value]) => name.endsWith("_micro_usd") && typeof value === "number" && Number.isSafeInteger(value) && value >= 0,
  );
  if (amounts.length !== 1) return null;
  const [field, microUsd] = amounts[0]!;
  return { field, microUsd: microUsd as number };
}

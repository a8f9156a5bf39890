/** Money is integer micro-USD everywhere: 1 USD = 1,000,000 micro-USD. */
export const MICRO_PER_USD = 1_000_000;

/** Converts a decimal USD amount (as written in a price table) to integer micro-USD. */
export function usdToMicroUsd(usd: number): number {
  return Math.round(usd * MICRO_PER_USD);
}

/**
 * The most any amount of money given to mediagate may be (a budget, a price,
 * a sandbox's balance): $1,000,000,000, far past any budget and far inside
 * what both a JavaScript number counts exactly (9.0e15) and a PostgreSQL
 * bigint holds (9.2e18) as micro-USD. Past them a budget was stored as a
 * float (SQLite) or refused by the database (PostgreSQL, exit 1).
 */
export const MAX_MICRO_USD = 1_000_000_000 * MICRO_PER_USD;

export const USD_ALLOWED = `an amount of US dollars from 0 to ${MAX_MICRO_USD / MICRO_PER_USD} with at most 6 decimals, like 25 or 2.50`;
export const MICRO_USD_ALLOWED = `a whole number of micro-USD from 0 to ${MAX_MICRO_USD}`;

/** A user-typed USD amount ("2", "0.50", "$3.1") as integer micro-USD, or why it is not one (a reason for an error naming its flag or variable). */
export function readUsd(text: string): { microUsd: number } | { reason: string } {
  const cleaned = text.trim().replace(/^\$/, "");
  if (!/^\d+(\.\d{1,6})?$/.test(cleaned)) return { reason: `"${text.slice(0, 40)}" is not an amount of US dollars` };
  const [whole = "0", fraction = ""] = cleaned.split(".");
  // Counted exactly, however many digits were typed, before it is compared.
  const microUsd = BigInt(whole) * BigInt(MICRO_PER_USD) + BigInt(fraction.padEnd(6, "0"));
  if (microUsd > BigInt(MAX_MICRO_USD)) return { reason: `${text.trim().slice(0, 40)} is more than $${MAX_MICRO_USD / MICRO_PER_USD}` };
  return { microUsd: Number(microUsd) };
}

/** Parses a user-typed USD amount into micro-USD; null when it is not an amount or is more than MAX_MICRO_USD. */
export function parseUsd(text: string): number | null {
  const reading = readUsd(text);
  return "microUsd" in reading ? reading.microUsd : null;
}

/** A count of micro-USD given as a number (a config value, a library option), or why it is not one. */
export function microUsdProblem(value: unknown): string | null {
  if (typeof value !== "number" || !Number.isSafeInteger(value)) return `${String(value).slice(0, 40)} is not a whole number of micro-USD`;
  if (value < 0) return `${value} is negative`;
  if (value > MAX_MICRO_USD) return `${value} is more than ${MAX_MICRO_USD} ($${MAX_MICRO_USD / MICRO_PER_USD})`;
  return null;
}

/** Formats micro-USD as "$0.0300" (four decimals, more when needed to stay exact). */
export function formatMicroUsd(microUsd: number): string {
  const sign = microUsd < 0 ? "-" : "";
  const abs = Math.abs(microUsd);
  const whole = Math.floor(abs / MICRO_PER_USD);
  let fraction = String(abs % MICRO_PER_USD).padStart(6, "0");
  while (fraction.length > 4 && fraction.endsWith("0")) fraction = fraction.slice(0, -1);
  return `${sign}$${whole}.${fraction}`;
}

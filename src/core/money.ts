/** Money is integer micro-USD everywhere: 1 USD = 1,000,000 micro-USD. */
export const MICRO_PER_USD = 1_000_000;

/** Converts a decimal USD amount (as written in a price table) to integer micro-USD. */
export function usdToMicroUsd(usd: number): number {
  return Math.round(usd * MICRO_PER_USD);
}

/** Parses a user-typed USD amount ("2", "0.50", "$3.1") into micro-USD; returns null when it is not a number. */
export function parseUsd(text: string): number | null {
  const cleaned = text.trim().replace(/^\$/, "");
  if (!/^\d+(\.\d{1,6})?$/.test(cleaned)) return null;
  const [whole = "0", fraction = ""] = cleaned.split(".");
  return Number(whole) * MICRO_PER_USD + Number(fraction.padEnd(6, "0"));
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

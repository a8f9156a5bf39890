import { InputError } from "./errors.js";

/**
 * `cancel_after_s` (issue 37, part 2): how long a job stays wanted after its
 * admission. Not sent by then, it is cancelled (reason `deadline`).
 */
export const MAX_CANCEL_AFTER_S = 30 * 86_400;
export const CANCEL_AFTER_ALLOWED = `a whole number of seconds from 1 to ${MAX_CANCEL_AFTER_S} (30 days)`;
export const CANCEL_AFTER_HEADER_ALLOWED = `a duration such as 90s, 5m or 1h (a whole number with s, m or h, or of seconds alone), at most 30 days`;

/** `cancel_after_s` as given (absent: null), or an InputError naming `field`. */
export function readCancelAfterS(value: unknown, field: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > MAX_CANCEL_AFTER_S) {
    throw new InputError(field, `${JSON.stringify(value)?.slice(0, 40) ?? String(value)} is not a number of seconds it takes`, CANCEL_AFTER_ALLOWED);
  }
  return value;
}

const UNIT_S: Record<string, number> = { "": 1, s: 1, m: 60, h: 3_600 };

/** The `Cancel-After` header (`90s`, `5m`, `1h`, or seconds alone) in seconds, or an InputError naming it. */
export function readCancelAfterHeader(text: string): number {
  const match = /^\s*(\d{1,9})\s*([smh]?)\s*$/i.exec(text);
  const seconds = match ? Number(match[1]) * UNIT_S[match[2]!.toLowerCase()]! : Number.NaN;
  if (!(seconds >= 1 && seconds <= MAX_CANCEL_AFTER_S)) throw new InputError("Cancel-After", `"${text.slice(0, 40)}" is not a duration it takes`, CANCEL_AFTER_HEADER_ALLOWED);
  return seconds;
}

/** When a job admitted at `now` stops being wanted. */
export function deadlineOf(now: number, cancelAfterS: number | null | undefined): number | null {
  return cancelAfterS === null || cancelAfterS === undefined ? null : now + cancelAfterS * 1_000;
}

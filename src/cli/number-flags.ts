import { InputError } from "../core/errors.js";

/**
 * Numbers given as flags, read strictly: decimal digits only, so `1e3`,
 * `0x10`, ` 5` or `Infinity` (which `Number()` would quietly read as some
 * number) are refused, and every range is closed: a count of 0, a negative
 * limit, or a number past what a store or a timer can hold is refused before
 * anything runs, naming the flag and what it takes.
 */
export interface WholeRange {
  min: number;
  max: number;
}

/** A TCP port; 0 asks the system for a free one. */
export const PORTS: WholeRange = { min: 0, max: 65_535 };

const WHOLE = /^-?\d+$/;
const DECIMAL = /^\d+(\.\d+)?$/;

/** A whole-number flag within `range` (both ends included). */
export function wholeNumberFlag(flag: string, text: string, range: WholeRange): number {
  const allowed = `a whole number from ${range.min} to ${range.max}`;
  if (!WHOLE.test(text)) throw new InputError(flag, `"${text}" is not a whole number`, allowed);
  const value = Number(text);
  if (value < range.min) throw new InputError(flag, `${text} is below ${range.min}`, allowed);
  if (value > range.max) throw new InputError(flag, `${text} is above ${range.max}`, allowed);
  // "-0" is 0.
  return value === 0 ? 0 : value;
}

export interface DecimalRange {
  /** The least value taken (included); above 0 when left out. */
  min?: number;
  /** The greatest value taken (included); none when left out. */
  max?: number;
  /** What the number counts, for messages: "seconds". */
  unit?: string;
  example: string;
}

/** A positive decimal flag (`7.5`), within `range`. */
export function decimalFlag(flag: string, text: string, range: DecimalRange): number {
  const what = range.unit ? `a number of ${range.unit}` : "a number";
  const bounds = [range.min === undefined ? "above 0" : `from ${range.min}`, ...(range.max === undefined ? [] : [`to ${range.max}`])].join(" ");
  const allowed = `${what} ${bounds}, e.g. ${range.example}`;
  if (!DECIMAL.test(text)) throw new InputError(flag, `"${text}" is not a positive decimal number`, allowed);
  const value = Number(text);
  if (range.min === undefined ? value <= 0 : value < range.min) throw new InputError(flag, `${text} is ${range.min === undefined ? "not above 0" : `below ${range.min}`}`, allowed);
  if (range.max !== undefined && value > range.max) throw new InputError(flag, `${text} is above ${range.max}`, allowed);
  return value;
}

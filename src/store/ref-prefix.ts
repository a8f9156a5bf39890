/**
 * The refs starting with a prefix, as a range of one index: `from <= ref <
 * below`. Both stores compare refs by code point here (SQLite's BINARY
 * collation over UTF-8, PostgreSQL's "C" collation, migration 12), so every
 * string starting with `prefix` sorts from `prefix` itself up to, and not
 * including, `prefix` with its last code point raised by one; and nothing
 * else does. A LIKE pattern would do the same only where the collation
 * allows (SQLite's LIKE ignores ASCII case and so leaves the index unused;
 * PostgreSQL's needs a "C" or pattern-ops index) and would need `%` and `_`
 * escaped; a range needs neither.
 */
export interface RefRange {
  from: string;
  /** Null when nothing sorts after every string with the prefix (it ends in U+10FFFF only). */
  below: string | null;
}

/** The highest code point, and the surrogates that no well-formed string holds (so they are stepped over). */
const MAX_CODE_POINT = 0x10ffff;
const SURROGATES_FIRST = 0xd800;
const SURROGATES_LAST = 0xdfff;

export function refRange(prefix: string): RefRange {
  const codePoints = [...prefix].map((character) => character.codePointAt(0)!);
  // A last code point that cannot be raised is dropped, and the one before it raised instead.
  while (codePoints.length > 0 && codePoints.at(-1) === MAX_CODE_POINT) codePoints.pop();
  if (codePoints.length === 0) return { from: prefix, below: null };
  let last = codePoints.pop()! + 1;
  if (last >= SURROGATES_FIRST && last <= SURROGATES_LAST) last = SURROGATES_LAST + 1;
  return { from: prefix, below: String.fromCodePoint(...codePoints, last) };
}

import { randomFillSync } from "node:crypto";

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";
const TAIL_LENGTH = 16;

/** Random bytes drawn a few thousand at a time: one call to the system's generator per id cost more than the rest of it. */
const pool = Buffer.alloc(TAIL_LENGTH * 256);
let poolAt = pool.length;

/** The last id's time and random digits (0–31 each), so that the next one in the same millisecond follows it. */
let lastTime = -1;
const lastTail = new Uint8Array(TAIL_LENGTH);

/**
 * A sortable unique id: 10 characters of millisecond time then 16 random
 * characters (ULID layout, lower-case), with a prefix naming what it is.
 *
 * Ids made in one millisecond follow each other, as the ULID
 * specification's monotonic factory makes them: an id of the same
 * millisecond as the one made before it adds one to that id's random part.
 * (A time given that is earlier than the last one, a test's clock say,
 * starts afresh from random: the time written is always the time given.)
 *
 * A batch's jobs share one time, and with random tails each index ending
 * in the id (the queue, creation order) took its rows at random places:
 * every page of rows stored touched nearly every page of those indexes, so
 * storing a page cost more the bigger the table (20,000 lines: 3 ms a
 * commit at the start, 47 ms at the end). In order, a page is appended.
 */
export function newId(prefix: string, nowMs: number = Date.now()): string {
  if (nowMs !== lastTime) {
    lastTime = nowMs;
    if (poolAt + TAIL_LENGTH > pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    for (let index = 0; index < TAIL_LENGTH; index++) lastTail[index] = pool[poolAt + index]! % 32;
    poolAt += TAIL_LENGTH;
  } else if (!increment(lastTail)) {
    // 2^80 ids in one millisecond: the next millisecond's first.
    lastTime++;
  }
  let time = "";
  let value = lastTime;
  for (let index = 0; index < 10; index++) {
    time = CROCKFORD[value % 32] + time;
    value = Math.floor(value / 32);
  }
  let tail = "";
  for (const digit of lastTail) tail += CROCKFORD[digit];
  return `${prefix}_${time}${tail}`;
}

/** Adds one to base-32 digits in place; false when they wrapped around to zero. */
function increment(digits: Uint8Array): boolean {
  for (let index = digits.length - 1; index >= 0; index--) {
    if (digits[index]! < 31) {
      digits[index]!++;
      return true;
    }
    digits[index] = 0;
  }
  return false;
}

import { randomBytes } from "node:crypto";

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

/**
 * A sortable unique id: 10 characters of millisecond time then 16 random
 * characters (ULID layout, lower-case), with a prefix naming what it is.
 */
export function newId(prefix: string, nowMs: number = Date.now()): string {
  let time = "";
  let value = nowMs;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[value % 32] + time;
    value = Math.floor(value / 32);
  }
  const random = randomBytes(16);
  let tail = "";
  for (const byte of random) tail += CROCKFORD[byte % 32];
  return `${prefix}_${time}${tail}`;
}

import { InputError } from "./errors.js";

/**
 * JSON text from outside (an API body, a batch line, `--input`, a config
 * file) is bounded before it is parsed. V8 parses any depth, but writes JSON
 * recursively: a request nested a few thousand levels deep was parsed, then
 * overflowed the stack when it was stored (a 500), or was stored and sent at
 * depths just under that. No provider's fields nest more than a few levels.
 */
export const MAX_JSON_DEPTH = 64;

/** One request (or config file) as JSON text: the API's body limit, for every face. */
export const MAX_JSON_BYTES = 1024 * 1024;

export const JSON_DEPTH_ALLOWED = `at most ${MAX_JSON_DEPTH} levels of objects and arrays, counted from the outermost`;
export const JSON_SIZE_ALLOWED = `at most ${MAX_JSON_BYTES} bytes (1 MiB) of JSON`;

export interface JsonNesting {
  /** The most objects and arrays open at once. */
  depth: number;
  /** Where the nesting first went past the limit: member names and element indexes from the outside in (empty: at the top); null when it did not. */
  pastLimit: Array<string | number> | null;
  /** For a top-level array: where each element's text starts and ends. */
  elements: Array<{ start: number; end: number }>;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/**
 * How deep JSON text nests, read by counting brackets outside strings: no
 * recursion and nothing built, so any depth costs one pass. Text that is not
 * JSON gives some answer; parsing it refuses it afterwards.
 */
export function jsonNesting(text: string, limit = MAX_JSON_DEPTH): JsonNesting {
  // Per open container: whether it is an array, and the member or element being read in it.
  const arrays: boolean[] = [];
  const members: Array<string | number> = [];
  let depth = 0;
  let deepest = 0;
  let pastLimit: Array<string | number> | null = null;
  let lastString = { start: 0, end: 0 };
  const elements: Array<{ start: number; end: number }> = [];
  let elementStart = -1;
  const topArray = text.trimStart().startsWith("[");
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    // An element of a top-level array starts at its first character that is not space.
    if (topArray && depth === 1 && elementStart < 0 && code > 0x20 && code !== COMMA && code !== CLOSE_ARRAY) elementStart = index;
    if (code === QUOTE) {
      const start = index + 1;
      index++;
      while (index < text.length && text.charCodeAt(index) !== QUOTE) index += text.charCodeAt(index) === BACKSLASH ? 2 : 1;
      lastString = { start, end: Math.min(index, text.length) };
      continue;
    }
    if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      // A value opened in an object is its last key's; a key is the string just before its value.
      if (depth > 0 && !arrays[depth - 1]) members[depth - 1] = text.slice(lastString.start, Math.min(lastString.end, lastString.start + 60));
      arrays[depth] = code === OPEN_ARRAY;
      members[depth] = code === OPEN_ARRAY ? 0 : "";
      depth++;
      if (depth > deepest) deepest = depth;
      if (depth > limit && pastLimit === null) pastLimit = members.slice(0, depth - 1);
      continue;
    }
    if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      if (topArray && depth === 1 && elementStart >= 0) {
        elements.push({ start: elementStart, end: index });
        elementStart = -1;
      }
      depth = Math.max(0, depth - 1);
      continue;
    }
    if (code === COMMA && depth > 0 && arrays[depth - 1]) {
      members[depth - 1] = (members[depth - 1] as number) + 1;
      if (topArray && depth === 1) {
        if (elementStart >= 0) elements.push({ start: elementStart, end: index });
        elementStart = -1;
      }
    }
  }
  return { depth: deepest, pastLimit, elements };
}

/** `input.deep[3]…` from `["input", "deep", 3, …]`: the first few steps, enough to find the place. */
export function memberPath(path: ReadonlyArray<string | number>): string {
  const shown = path.slice(0, 4).map((part, index) => (typeof part === "number" ? `[${part}]` : index === 0 ? part : `.${part}`));
  return `${shown.join("")}${path.length > 4 ? "…" : ""}`;
}

/**
 * Refuses JSON text over the size or depth bounds before it is parsed: an
 * InputError naming `field`, or with `namesMember` (the text is a request
 * whose members are fields: an API body, a batch line) the member the
 * nesting is in.
 */
export function checkJsonText(text: string, field: string, options: { namesMember?: boolean; maxBytes?: number } = {}): void {
  const maxBytes = options.maxBytes ?? MAX_JSON_BYTES;
  // Each UTF-16 unit is at most 3 bytes of UTF-8: short text is not measured.
  if (text.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > maxBytes) throw new InputError(field, `is ${bytes} bytes of JSON`, maxBytes === MAX_JSON_BYTES ? JSON_SIZE_ALLOWED : `at most ${maxBytes} bytes of JSON`);
  }
  const nesting = jsonNesting(text);
  if (nesting.pastLimit === null) return;
  const member = options.namesMember && typeof nesting.pastLimit[0] === "string" ? nesting.pastLimit[0] : null;
  if (member !== null) throw new InputError(member, `is nested ${nesting.depth} levels deep`, JSON_DEPTH_ALLOWED);
  const where = nesting.pastLimit.length > 0 ? ` (at ${memberPath(nesting.pastLimit)})` : "";
  throw new InputError(field, `is nested ${nesting.depth} levels deep${where}`, JSON_DEPTH_ALLOWED);
}

import { describe, expect, it } from "vitest";
import { escapeUnprintable, firstUnprintable } from "../../src/core/printable.js";

/** One of each kind a terminal or table acts on, at both ends of each range. */
const UNPRINTABLE = ["\u0000", "\u0009", "\u001f", "\u007f", "\u0080", "\u009f", "\u2028", "\u2029", "\u061c", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069"];
/** Next to those ranges, but shown as themselves (or joining emoji). */
const PRINTABLE = [" ", "~", "\u00a0", "é", "\u061b", "\u200d", "\u2027", "\u202f", "\u2070", "東", "😀", "👩‍👩‍👧"];

describe("unprintable characters", () => {
  it("C0 and C1 controls, DEL, line and paragraph separators and bidi formatting characters are found", () => {
    for (const character of UNPRINTABLE) expect(firstUnprintable(`ab${character}`), codePointOf(character)).toEqual({ codePoint: codePointOf(character), position: 3 });
  });

  it("printable characters next to those ranges, and zero-width joiners in emoji, are left alone", () => {
    for (const character of PRINTABLE) expect(firstUnprintable(`a${character}b`), character).toBeNull();
    expect(firstUnprintable("")).toBeNull();
  });

  it("the first one is reported, as an upper-case U+ code point and a 1-based position in characters", () => {
    expect(firstUnprintable("\u001b[31m\n")).toEqual({ codePoint: "U+001B", position: 1 });
    expect(firstUnprintable("😀😀\u202e")).toEqual({ codePoint: "U+202E", position: 3 });
    expect(firstUnprintable("x\u009b")).toEqual({ codePoint: "U+009B", position: 2 });
  });

  it("escaping writes each of them as a lower-case \\uXXXX and keeps everything else", () => {
    expect(escapeUnprintable("\u0000\u001b\u009b\u202e\u2066 ok 😀\r\n")).toBe("\\u0000\\u001b\\u009b\\u202e\\u2066 ok 😀\\u000d\\u000a");
    expect(escapeUnprintable("plain text")).toBe("plain text");
  });
});

function codePointOf(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

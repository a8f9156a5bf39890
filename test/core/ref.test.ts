import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InputError } from "../../src/core/errors.js";
import { escapeUnprintable, firstUnprintable } from "../../src/core/printable.js";
import { MAX_REF_LENGTH, validateRef, validateRefPrefix } from "../../src/core/ref.js";
import { inputError } from "../helpers/errors.js";

/** Characters a terminal acts on: C0 controls, DEL, C1 controls, line/paragraph separators, bidi formatting. */
const UNPRINTABLE_SAMPLES = ["\u001b", "\n", "\r", "\t", "\u0000", "\u0007", "\u007f", "\u009b", "\u2028", "\u2029", "\u202e", "\u2066", "\u200f", "\u061c"];

/** Any character a terminal shows as itself: a printable code point that is none of the above. */
const printableCharacter = fc
  .oneof(fc.constantFrom("a", "Z", "0", "-", "_", ".", " ", "é", "東", "😀"), fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }))
  .filter((character) => firstUnprintable(character) === null);

describe("refs", () => {
  it("a ref holding ESC, a newline, a tab, DEL, a C1 control, a line separator or a bidi override is refused naming the field", () => {
    for (const character of UNPRINTABLE_SAMPLES) {
      const error = inputError(() => validateRef(`job${character}1`, "--ref"));
      expect(error.field).toBe("--ref");
      expect(error.reason).toMatch(/holds the unprintable character U\+[0-9A-F]{4} at position 4/);
      expect(error.allowed).toMatch(/printable characters/);
      // The message quotes the ref escaped, so printing the refusal cannot act on the terminal either.
      expect(firstUnprintable(error.message)).toBeNull();
    }
  });

  it("a ref that retitles the terminal (OSC 0) is refused and quoted escaped", () => {
    const error = inputError(() => validateRef("\u001b]0;pwned\u0007", "ref"));
    expect(error.reason).toBe('"\\u001b]0;pwned\\u0007" holds the unprintable character U+001B at position 1');
  });

  it("a ref must not be blank and is at most 200 characters", () => {
    expect(inputError(() => validateRef("", "ref")).reason).toMatch(/empty or blank/);
    expect(inputError(() => validateRef("   ", "ref")).reason).toMatch(/empty or blank/);
    expect(validateRef("x".repeat(MAX_REF_LENGTH), "ref")).toHaveLength(MAX_REF_LENGTH);
    expect(inputError(() => validateRef("x".repeat(MAX_REF_LENGTH + 1), "ref")).reason).toMatch(/201 characters long, more than 200/);
    expect(inputError(() => validateRef(42, "ref")).reason).toMatch(/must be a string/);
  });

  it("ordinary refs are accepted unchanged: letters of any script, digits, punctuation, spaces, emoji", () => {
    for (const ref of ["job-1", "lighthouse at dawn", "café_2", "東京-夜", "rocket 🚀", "a/b:c#d"]) expect(validateRef(ref, "ref")).toBe(ref);
  });

  it("property: a ref of printable characters is accepted; the same ref with any unprintable character inserted is refused, its message printable", () => {
    fc.assert(
      fc.property(
        fc.array(printableCharacter, { minLength: 1, maxLength: 60 }).map((characters) => characters.join("")).filter((ref) => ref.trim().length > 0),
        fc.constantFrom(...UNPRINTABLE_SAMPLES, "\u0085", "\u001f", "\u0080", "\u009f"),
        fc.nat(),
        (ref, bad, at) => {
          expect(validateRef(ref, "ref")).toBe(ref);
          const characters = [...ref];
          characters.splice(at % (characters.length + 1), 0, bad);
          const error = inputError(() => validateRef(characters.join(""), "ref"));
          expect(error).toBeInstanceOf(InputError);
          expect(error.field).toBe("ref");
          expect(firstUnprintable(error.message)).toBeNull();
        },
      ),
      { numRuns: 200 },
    );
  });

  it("escapeUnprintable writes every unprintable character as \\uXXXX and leaves the rest", () => {
    expect(escapeUnprintable("a\u001b[2Jb\nc\u2028d é")).toBe("a\\u001b[2Jb\\u000ac\\u2028d é");
  });
});

describe("a ref prefix to search by (the API's ref_prefix, jobs --ref-prefix)", () => {
  it("is taken as given from 1 to 200 characters (counted by code point); empty or longer than any ref is refused naming the field", () => {
    expect(validateRefPrefix("batch-7", "ref_prefix")).toBe("batch-7");
    expect(validateRefPrefix("😀".repeat(MAX_REF_LENGTH), "--ref-prefix")).toBe("😀".repeat(MAX_REF_LENGTH));
    const refusal = (value: string, field: string) => {
      try {
        validateRefPrefix(value, field);
      } catch (error) {
        return [(error as InputError).field, (error as InputError).message, (error as InputError).allowed];
      }
      return null;
    };
    expect(refusal("", "--ref-prefix")).toEqual(["--ref-prefix", expect.stringMatching(/^--ref-prefix: must not be empty/), "the first characters of a ref"]);
    expect(refusal("x".repeat(MAX_REF_LENGTH + 1), "ref_prefix")).toEqual(["ref_prefix", expect.stringMatching(/is 201 characters long, longer than any ref \(200\)/), "1 to 200 characters"]);
  });
});

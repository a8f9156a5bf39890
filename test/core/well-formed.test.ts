import { describe, expect, it } from "vitest";
import { validateRef, validateRefPrefix } from "../../src/core/ref.js";
import { checkWellFormed, escapeLoneSurrogates, loneSurrogate } from "../../src/core/well-formed.js";
import { inputError } from "../helpers/errors.js";

describe("text is well-formed Unicode", () => {
  it("a lone high or low surrogate is found, as U+ code unit and 1-based position in code points; a pair (an emoji) is a character", () => {
    expect(loneSurrogate("a\ud800b")).toEqual({ codeUnit: "U+D800", position: 2 });
    expect(loneSurrogate("😀\udc00")).toEqual({ codeUnit: "U+DC00", position: 2 });
    expect(loneSurrogate("x\udbff")).toEqual({ codeUnit: "U+DBFF", position: 2 });
    // A low half before a high half is two lone halves, not a pair.
    expect(loneSurrogate("\udc00\ud800")).toEqual({ codeUnit: "U+DC00", position: 1 });
    for (const text of ["", "plain", "😀👩‍👩‍👧", "東京", "\ud83d\ude00"]) expect(loneSurrogate(text), text).toBeNull();
  });

  it("refused naming the field, what is wrong and what is allowed", () => {
    const error = inputError(() => checkWellFormed("a fox\ud800", "prompt"));
    expect(error.message).toBe("prompt: holds a lone surrogate U+D800 at position 6, which is not a character (allowed: well-formed Unicode text (a UTF-16 surrogate only as half of a pair))");
  });

  it("two refs that differ only in a lone surrogate are both refused (stored, each would become a\\ufffdb: one job for two refs); quoted escaped", () => {
    for (const ref of ["a\ud800b", "a\udc00b"]) {
      const error = inputError(() => validateRef(ref, "--ref"));
      expect(error.field).toBe("--ref");
      expect(error.reason).toBe(`"${escapeLoneSurrogates(ref)}" holds a lone surrogate U+${ref.charCodeAt(1).toString(16).toUpperCase()} at position 2, which is not a character`);
      expect(error.message.isWellFormed()).toBe(true);
    }
    expect(inputError(() => validateRefPrefix("batch\ud800", "ref_prefix")).field).toBe("ref_prefix");
    expect(validateRef("fox-😀", "ref")).toBe("fox-😀");
  });

  it("escaping writes each lone half as \\uXXXX and keeps pairs", () => {
    expect(escapeLoneSurrogates("a\ud800b😀\udc00")).toBe("a\\ud800b😀\\udc00");
  });
});

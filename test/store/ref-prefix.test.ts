import { describe, expect, it } from "vitest";
import { refRange } from "../../src/store/ref-prefix.js";

describe("refRange: the refs starting with a prefix as one index range", () => {
  it("the range runs from the prefix to the prefix with its last character raised by one code point", () => {
    expect(refRange("batch-7")).toEqual({ from: "batch-7", below: "batch-8" });
    expect(refRange("a%")).toEqual({ from: "a%", below: "a&" });
    expect(refRange("x😀")).toEqual({ from: "x😀", below: "x😁" });
  });

  it("a last character that cannot be raised is dropped and the one before it raised; surrogates are stepped over; only U+10FFFF left: no upper end", () => {
    expect(refRange("a\u{10ffff}")).toEqual({ from: "a\u{10ffff}", below: "b" });
    expect(refRange("a\u{10ffff}\u{10ffff}")).toEqual({ from: "a\u{10ffff}\u{10ffff}", below: "b" });
    expect(refRange("a\ud7ff")).toEqual({ from: "a\ud7ff", below: "a\ue000" });
    // A lone surrogate (no well-formed string holds one, but a JS string can): raised past the surrogates too.
    expect(refRange("a\udffe")).toEqual({ from: "a\udffe", below: "a\ue000" });
    expect(refRange("a\uffff")).toEqual({ from: "a\uffff", below: "a\u{10000}" });
    expect(refRange("\u{10ffff}")).toEqual({ from: "\u{10ffff}", below: null });
  });
});

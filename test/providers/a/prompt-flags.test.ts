import { describe, expect, it } from "vitest";
import { InputError } from "../../../src/core/errors.js";
import { parsePromptFlags } from "../../../src/providers/a/prompt-flags.js";

describe("A: prompt-suffix flags", () => {
  it("A: the six prompt flags are read as --flag value or --flag=value", () => {
    const flags = parsePromptFlags("a fox --rs 720p --rt=16:9 --dur 5 --seed -3 --cf true --wm=false");
    expect(flags).toEqual([
      { flag: "--rs", field: "resolution", value: "720p" },
      { flag: "--rt", field: "ratio", value: "16:9" },
      { flag: "--dur", field: "duration", value: 5 },
      { flag: "--seed", field: "seed", value: -3 },
      { flag: "--cf", field: "camera_fixed", value: true },
      { flag: "--wm", field: "watermark", value: false },
    ]);
  });

  it("A: other --words and flags inside words are plain text", () => {
    expect(parsePromptFlags("a--rs 720p, --rsx 1, --speed fast")).toEqual([]);
  });

  it("A: a malformed prompt flag value is an error", () => {
    expect(() => parsePromptFlags("x --rs 4k")).toThrow(InputError);
    expect(() => parsePromptFlags("x --dur soon")).toThrow(/not a valid duration/);
    expect(() => parsePromptFlags("x --cf maybe")).toThrow(/true, false/);
    expect(() => parsePromptFlags("x --rt")).toThrow(/has no value/);
    expect(() => parsePromptFlags("x --rs --rt 16:9")).toThrow(/has no value/);
  });

  it("A: a prompt flag given twice with different values is an error", () => {
    expect(() => parsePromptFlags("x --dur 5 --dur 6")).toThrow(/twice/);
    expect(parsePromptFlags("x --dur 5 --dur 5")).toHaveLength(1);
  });
});

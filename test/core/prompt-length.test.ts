import { describe, expect, it } from "vitest";
import { LONG_PROMPT_CHARACTERS, longPromptWarnings } from "../../src/core/prompt-length.js";

describe("long prompts are sent as given, with a warning", () => {
  it("up to 1,000 characters there is no warning", () => {
    expect(LONG_PROMPT_CHARACTERS).toBe(1_000);
    expect(longPromptWarnings("prompt", "", "D publishes no prompt length limit")).toEqual([]);
    expect(longPromptWarnings("prompt", "x".repeat(1_000), "D publishes no prompt length limit")).toEqual([]);
  });

  it("past 1,000 characters one warning names the field, its length and who publishes no limit", () => {
    expect(longPromptWarnings("prompt", "x".repeat(1_001), "D publishes no prompt length limit")).toEqual([
      "prompt is 1,001 characters long; D publishes no prompt length limit, so it is sent as given and may be refused or cut short (mediagate warns above 1,000)",
    ]);
    expect(longPromptWarnings("negative_prompt", "y".repeat(12_345), "E publishes no prompt length limit")).toEqual([
      "negative_prompt is 12,345 characters long; E publishes no prompt length limit, so it is sent as given and may be refused or cut short (mediagate warns above 1,000)",
    ]);
  });

  it("length is counted in characters, not UTF-16 units: 1,000 emoji are not too long", () => {
    expect(longPromptWarnings("prompt", "😀".repeat(1_000), "F publishes no prompt length limit")).toEqual([]);
    expect(longPromptWarnings("prompt", "😀".repeat(1_001), "F publishes no prompt length limit")[0]).toMatch(/^prompt is 1,001 characters long/);
  });
});

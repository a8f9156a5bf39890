import { describe, expect, it } from "vitest";
import { describeModel, parseGeneration, parseModelIdentity } from "../../../src/providers/a/models.js";
import { A_ITEM_LIMITS } from "../../../src/providers/a/item-limits.js";

const NEWEST = parseGeneration("2.0")!;

describe("A: model identifiers", () => {
  it("A: the generation and snapshot date are read from the model identifier", () => {
    expect(parseModelIdentity("vidgen-2-0-250601")).toEqual({ generation: { major: 2, minor: 0 }, snapshotDate: "2025-06-01" });
    expect(parseModelIdentity("maker-1-5-pro-250301")).toEqual({ generation: { major: 1, minor: 5 }, snapshotDate: "2025-03-01" });
    expect(parseModelIdentity("maker-1-0-lite-t2v-241115")).toEqual({ generation: { major: 1, minor: 0 }, snapshotDate: "2024-11-15" });
    expect(parseModelIdentity("studio-v2-20250601")).toEqual({ generation: { major: 2, minor: 0 }, snapshotDate: "2025-06-01" });
  });

  it("A: an identifier without a date, with no generation or with two is unreadable", () => {
    expect(parseModelIdentity("vidgen-2-0")).toBeNull();
    expect(parseModelIdentity("vidgen-250601")).toBeNull();
    expect(parseModelIdentity("vidgen-1-0-pro-2-0-250601")).toBeNull();
    expect(parseModelIdentity("vidgen-1-2-3-250601")).toBeNull();
    expect(parseModelIdentity("vidgen-2-0-251399")).toBeNull();
    expect(parseModelIdentity("best-model")).toBeNull();
  });

  it("A: only the configured newest generation gets the newest limits", () => {
    expect(describeModel("vidgen-2-0-250601", NEWEST).limitsClass).toBe("newest");
    expect(describeModel("vidgen-1-5-250301", NEWEST).limitsClass).toBe("older");
    expect(describeModel("vidgen-1-5-250301", parseGeneration("1.5")!).limitsClass).toBe("newest");
  });

  it("A: an unknown model gets the conservative older-series limits, with a warning", () => {
    const unreadable = describeModel("mystery", NEWEST);
    expect(unreadable.limitsClass).toBe("conservative");
    expect(unreadable.warning).toMatch(/older series' limits/);
    const future = describeModel("vidgen-3-0-270101", NEWEST);
    expect(future.limitsClass).toBe("conservative");
    expect(future.warning).toMatch(/newer than the newest/);
    expect(A_ITEM_LIMITS.conservative).toEqual(A_ITEM_LIMITS.older);
    expect(A_ITEM_LIMITS.conservative).toMatchObject({ media: 15, audioOnly: false });
  });
});

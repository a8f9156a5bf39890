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

describe("A: model identifier rule, edge cases", () => {
  it("A: the generation is a run of purely numeric tokens of one or two digits", () => {
    // A token that only starts or ends with digits is not a number token.
    expect(parseModelIdentity("vidgen-2-x0-250601")).toEqual({ generation: { major: 2, minor: 0 }, snapshotDate: "2025-06-01" });
    expect(parseModelIdentity("vidgen-2-0pro-250601")).toEqual({ generation: { major: 2, minor: 0 }, snapshotDate: "2025-06-01" });
    expect(parseModelIdentity("vidgen2-250601")).toBeNull();
    expect(parseModelIdentity("vidgen-2k-250601")).toBeNull();
    // Two digits are a number token, first or later in the run.
    expect(parseModelIdentity("vidgen-1-10-250601")).toEqual({ generation: { major: 1, minor: 10 }, snapshotDate: "2025-06-01" });
    expect(parseModelIdentity("vidgen-10-250601")).toEqual({ generation: { major: 10, minor: 0 }, snapshotDate: "2025-06-01" });
    expect(parseModelIdentity("vidgen-123-250601")).toBeNull();
  });

  it("A: a lone generation token before the date reads (v2-250601 is 2.0)", () => {
    expect(parseModelIdentity("v2-250601")).toEqual({ generation: { major: 2, minor: 0 }, snapshotDate: "2025-06-01" });
  });

  it("A: the snapshot date is yymmdd or yyyymmdd (20yy), nothing longer or shorter", () => {
    expect(parseModelIdentity("vidgen-2-0-20250601")?.snapshotDate).toBe("2025-06-01");
    for (const token of ["19250601", "202506011", "2025060120250601", "2506011", "25061"]) {
      expect(parseModelIdentity(`vidgen-2-0-${token}`)).toBeNull();
    }
  });

  it("A: the snapshot date must be a real calendar date", () => {
    // Month 13 and 14 with a valid day: the date would roll over into the next year.
    expect(parseModelIdentity("vidgen-2-0-251301")).toBeNull();
    expect(parseModelIdentity("vidgen-2-0-251401")).toBeNull();
    expect(parseModelIdentity("vidgen-2-0-250230")).toBeNull();
    expect(parseModelIdentity("vidgen-2-0-250100")).toBeNull();
    expect(parseModelIdentity("vidgen-2-0-240229")?.snapshotDate).toBe("2024-02-29");
    expect(parseModelIdentity("vidgen-2-0-250229")).toBeNull();
  });

  it("A: the configured newest generation reads major.minor (one or two digits each), or major alone", () => {
    expect(parseGeneration("2")).toEqual({ major: 2, minor: 0 });
    expect(parseGeneration("1.5")).toEqual({ major: 1, minor: 5 });
    expect(parseGeneration("10.12")).toEqual({ major: 10, minor: 12 });
    for (const text of ["v2.0", "x2", "2.0.1", "2.x", "2.0 ", "123", "2.123", ""]) expect(parseGeneration(text)).toBeNull();
  });

  it("A: the warning for a generation newer than configured names both generations", () => {
    const future = describeModel("vidgen-3-5-270101", NEWEST);
    expect(future.warning).toContain("generation 3.5");
    expect(future.warning).toContain("(2.0)");
    expect(future.identity).toEqual({ generation: { major: 3, minor: 5 }, snapshotDate: "2027-01-01" });
  });
});

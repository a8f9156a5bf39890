import { describe, expect, it } from "vitest";
import { InputError } from "../../src/core/errors.js";
import { checkInputValue } from "../../src/core/input-value.js";
import { checkJsonText, jsonNesting, MAX_JSON_BYTES, MAX_JSON_DEPTH } from "../../src/core/json-text.js";

/** `{"a": {"a": … 1 …}}`, `depth` objects deep. */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

function refusal(action: () => void): InputError {
  try {
    action();
  } catch (error) {
    if (error instanceof InputError) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe("JSON text from outside is bounded before it is parsed", () => {
  it("depth is the most objects and arrays open at once; brackets inside strings, escaped quotes included, do not count", () => {
    expect(jsonNesting("1").depth).toBe(0);
    expect(jsonNesting('{"a": [1, {"b": []}]}').depth).toBe(4);
    expect(jsonNesting('{"a": "[[[{{{\\"[[[", "b": ["]]]"]}').depth).toBe(2);
    expect(jsonNesting(nested(100_000)).depth).toBe(100_000);
  });

  it(`${MAX_JSON_DEPTH} levels are taken; one more is refused naming the request's member it is in and the limit`, () => {
    expect(() => checkJsonText(nested(MAX_JSON_DEPTH), "body", { namesMember: true })).not.toThrow();
    expect(refusal(() => checkJsonText(nested(MAX_JSON_DEPTH + 1), "body", { namesMember: true })).field).toBe("a");
    const deep = `{"ref": "x", "model": "m", "input": {"prompt": "p", "deep": ${nested(5_000)}}}`;
    const error = refusal(() => checkJsonText(deep, "body", { namesMember: true }));
    expect(error.field).toBe("input");
    expect(error.message).toBe("input: is nested 5002 levels deep (allowed: at most 64 levels of objects and arrays, counted from the outermost)");
  });

  it("without a member to name (--input, a config file) the field is named, with the first steps of the path", () => {
    const error = refusal(() => checkJsonText(`{"outer": [${nested(70)}]}`, "--input"));
    expect(error.field).toBe("--input");
    expect(error.reason).toBe("is nested 72 levels deep (at outer[0].a.a…)");
  });

  it("a top-level array's elements are found with their spans (for a batch's requests), strings and nesting inside them included", () => {
    const text = ' [ {"a": [1, 2]}, "x,]", 3 , {"b": {}} ] ';
    expect(jsonNesting(text).elements.map(({ start, end }) => text.slice(start, end).trim())).toEqual(['{"a": [1, 2]}', '"x,]"', "3", '{"b": {}}']);
  });

  it(`text over ${MAX_JSON_BYTES} bytes of UTF-8 is refused, measured in bytes, not characters`, () => {
    const error = refusal(() => checkJsonText(JSON.stringify({ prompt: "é".repeat(MAX_JSON_BYTES / 2) }), "--input"));
    expect(error.message).toMatch(/^--input: is 1048589 bytes of JSON \(allowed: at most 1048576 bytes \(1 MiB\) of JSON\)$/);
    expect(() => checkJsonText(JSON.stringify({ prompt: "é".repeat(MAX_JSON_BYTES / 2 - 20) }), "--input")).not.toThrow();
  });

  it("an object built in code (the library, the AI SDK) is held to the same depth, walked without recursion; a cyclic one is refused, not walked for ever", () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let level = 0; level < 5_000; level++) deep = { a: deep };
    expect(refusal(() => checkInputValue(deep, "input")).message).toBe("input: is nested more than 64 levels deep (allowed: at most 64 levels of objects and arrays, counted from the outermost)");
    const cyclic: Record<string, unknown> = { prompt: "x" };
    cyclic.self = cyclic;
    expect(refusal(() => checkInputValue(cyclic, "input")).field).toBe("input");
    // The request around `input` is the first level: 63 more fit.
    let fits: Record<string, unknown> = { leaf: 1 };
    for (let level = 1; level < MAX_JSON_DEPTH - 1; level++) fits = { a: fits };
    expect(() => checkInputValue(fits, "input")).not.toThrow();
    expect(() => checkInputValue({ a: fits }, "input")).toThrow(InputError);
    expect(() => checkInputValue({ image: { fileName: "a.png", bytes: Buffer.alloc(1_000_000) } }, "input")).not.toThrow();
  });
});

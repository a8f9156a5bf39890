import { describe, expect, it } from "vitest";
import { LineProblemsError } from "../../src/app/errors.js";
import { InputError } from "../../src/core/errors.js";
import { JSON_DEPTH_ALLOWED, JSON_SIZE_ALLOWED, MAX_JSON_BYTES, MAX_JSON_DEPTH } from "../../src/core/json-text.js";
import { apiLineRequest, batchLines } from "../../src/server/api/batches.js";
import { ApiError } from "../../src/server/api/errors.js";

/** How `POST /v1/batches` reads its body, before any line becomes a request: a JSON array or JSON lines, each line within one request's bounds. */

const line = (index: number) => ({ ref: `r-${index}`, provider: "d", model: "gen-2-pro", input: { prompt: `p ${index}` } });
/** An object nested `levels` deep under `field`. */
const nested = (levels: number, field = "input") => ({ [field]: JSON.parse(`${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}`) });

function refusal(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("not refused");
}

describe("a JSON array (Content-Type application/json)", () => {
  it("is read as the batch's requests, whatever the charset parameter", () => {
    const body = Buffer.from(JSON.stringify([line(0), line(1)]));
    expect(batchLines(body, "application/json")).toEqual([line(0), line(1)]);
    expect(batchLines(Buffer.from(`  \n${JSON.stringify([line(2)])}`), "application/json; charset=utf-8")).toEqual([line(2)]);
  });

  it("a body that is JSON but not an array is refused naming the body; one that is not JSON says how to send a batch", () => {
    expect(refusal(() => batchLines(Buffer.from(JSON.stringify(line(0))), "application/json"))).toMatchObject({ field: "body", reason: "must be a JSON array of requests (or JSON lines)" });
    for (const text of ["[1,", "{nope", "[{\"a\": }]"]) {
      const error = refusal(() => batchLines(Buffer.from(text), "application/json"));
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ code: "invalid_json", message: "the body is not JSON: send a JSON array of requests, or JSON lines with Content-Type application/x-ndjson" });
    }
  });

  it("a body that is not an array and nested too deep is refused for its depth, naming the body", () => {
    const error = refusal(() => batchLines(Buffer.from(JSON.stringify(nested(MAX_JSON_DEPTH + 5, "x"))), "application/json"));
    expect(error).toBeInstanceOf(InputError);
    expect(error).toMatchObject({ field: "body", allowed: JSON_DEPTH_ALLOWED });
  });

  it("each element may nest as deep as one request sent alone (the array is one more level); deeper is refused naming its line and member", () => {
    // The element itself is one level, its `input` array the next: MAX_JSON_DEPTH levels in all below the array.
    expect(batchLines(Buffer.from(JSON.stringify([line(0), nested(MAX_JSON_DEPTH - 1)])), "application/json")).toHaveLength(2);
    const error = refusal(() => batchLines(Buffer.from(JSON.stringify([line(0), line(1), nested(MAX_JSON_DEPTH + 3)])), "application/json"));
    expect(error).toBeInstanceOf(LineProblemsError);
    const problems = (error as LineProblemsError).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]!.origin).toBe("line 3");
    expect(problems[0]!.error).toMatchObject({ field: "input", allowed: JSON_DEPTH_ALLOWED });
    // Its depth counted below the array: the element, then 66 arrays.
    expect(problems[0]!.error.reason).toBe(`is nested ${MAX_JSON_DEPTH + 3} levels deep (below the array)`);
    // Nested arrays with no member: the line itself is named.
    const bare = refusal(() => batchLines(Buffer.from(`[${"[".repeat(MAX_JSON_DEPTH + 2)}${"]".repeat(MAX_JSON_DEPTH + 2)}]`), "application/json")) as LineProblemsError;
    expect(bare.problems[0]).toMatchObject({ origin: "line 1", error: { field: "line" } });
  });

  it("an element over 1 MiB is refused naming its line and its size in bytes, every such line at once, in order", () => {
    const big = { ...line(1), input: { prompt: "é".repeat(MAX_JSON_BYTES / 2) } };
    const error = refusal(() => batchLines(Buffer.from(JSON.stringify([big, line(0), big])), "application/json"));
    expect(error).toBeInstanceOf(LineProblemsError);
    const problems = (error as LineProblemsError).problems;
    expect(problems.map((problem) => problem.origin)).toEqual(["line 1", "line 3"]);
    const bytes = Buffer.byteLength(JSON.stringify(big), "utf8");
    expect(problems[0]!.error).toMatchObject({ field: "line", reason: `is ${bytes} bytes of JSON`, allowed: JSON_SIZE_ALLOWED });
    // Just under the bound in bytes, though long in characters: accepted.
    const fits = { input: { prompt: "é".repeat((MAX_JSON_BYTES - 40) / 2) } };
    expect(Buffer.byteLength(JSON.stringify(fits), "utf8")).toBeLessThanOrEqual(MAX_JSON_BYTES);
    expect(batchLines(Buffer.from(JSON.stringify([fits])), "application/json")).toHaveLength(1);
    // Exactly 1 MiB is within the bound.
    const exact = { p: "x".repeat(MAX_JSON_BYTES - 8) };
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(MAX_JSON_BYTES);
    expect(batchLines(Buffer.from(JSON.stringify([exact])), "application/json")).toHaveLength(1);
  });

  it("a too deep line before a too big one: both named, in the order of the lines", () => {
    const error = refusal(() => batchLines(Buffer.from(JSON.stringify([nested(MAX_JSON_DEPTH + 3), line(1), { pad: "x".repeat(MAX_JSON_BYTES) }])), "application/json")) as LineProblemsError;
    expect(error.problems.map((problem) => problem.origin)).toEqual(["line 1", "line 3"]);
  });

  it("a line both too big and too deep is named once", () => {
    const both = { ...nested(MAX_JSON_DEPTH + 3), pad: "x".repeat(MAX_JSON_BYTES) };
    const error = refusal(() => batchLines(Buffer.from(JSON.stringify([both])), "application/json")) as LineProblemsError;
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]!.error.reason).toMatch(/bytes of JSON$/);
  });
});

describe("JSON lines (any other Content-Type, or none)", () => {
  it("one request a line; blank lines and CRLF endings are skipped", () => {
    const text = `${JSON.stringify(line(0))}\r\n\n   \n${JSON.stringify(line(1))}\n`;
    for (const type of [undefined, "application/x-ndjson", "application/jsonl", "text/plain"]) expect(batchLines(Buffer.from(text), type)).toEqual([line(0), line(1)]);
  });

  it("a line that is not JSON is refused naming its number as the field", () => {
    const error = refusal(() => batchLines(Buffer.from(`${JSON.stringify(line(0))}\n\n{oops\n`), "application/x-ndjson"));
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: "invalid_json", message: "line 3 is not JSON", extra: { field: "line 3" } });
  });

  it("every line past a bound is named at once, with the member that nests too deep; nothing is read of the others", () => {
    const text = [JSON.stringify(nested(MAX_JSON_DEPTH + 2, "input")), JSON.stringify(line(1)), JSON.stringify({ pad: "x".repeat(MAX_JSON_BYTES) })].join("\n");
    const error = refusal(() => batchLines(Buffer.from(text), "application/x-ndjson")) as LineProblemsError;
    expect(error).toBeInstanceOf(LineProblemsError);
    expect(error.problems.map((problem) => problem.origin)).toEqual(["line 1", "line 3"]);
    expect(error.problems[0]!.error.field).toBe("input");
    expect(error.message).toBe("2 line(s) of the batch are refused; nothing was queued");
    // A line of bare arrays has no member to name: the line is the field.
    const bare = refusal(() => batchLines(Buffer.from(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}\n`), undefined)) as LineProblemsError;
    expect(bare.problems[0]).toMatchObject({ origin: "line 1", error: { field: "line" } });
  });
});

describe("a batch line's request", () => {
  it("is read as POST /v1/jobs reads a body, but `ref` and `notify_url` are the line's own, not the request's", () => {
    const request = apiLineRequest({ ref: "x", notify_url: "https://example.com/hook", provider: "d", model: "gen-2-pro", input: { prompt: "p" } });
    expect(request).not.toHaveProperty("ref");
    expect(JSON.stringify(request)).not.toContain("example.com");
    expect(JSON.stringify(request)).toContain("gen-2-pro");
  });
});

import { InputError } from "../../core/errors.js";
import { checkJsonText, JSON_DEPTH_ALLOWED, JSON_SIZE_ALLOWED, jsonNesting, MAX_JSON_BYTES, MAX_JSON_DEPTH } from "../../core/json-text.js";
import { LineProblemsError } from "../../app/errors.js";
import type { LineReader } from "../../app/intake.js";
import { ApiError } from "./errors.js";
import { requestOfBody, utf8Body } from "./requests.js";

/**
 * The requests of a JSON array, each held to one request's bounds (its size,
 * its depth below the array) before the array is parsed.
 */
function arrayLines(text: string): unknown[] {
  // The array is one level more: each request in it may nest as deep as one sent alone.
  const nesting = jsonNesting(text, MAX_JSON_DEPTH + 1);
  const problems = new Map<number, InputError>();
  for (const [index, element] of nesting.elements.entries()) {
    // Each UTF-16 unit is at most 3 bytes of UTF-8: a short element is not measured.
    if ((element.end - element.start) * 3 <= MAX_JSON_BYTES) continue;
    const bytes = Buffer.byteLength(text.slice(element.start, element.end), "utf8");
    if (bytes > MAX_JSON_BYTES) problems.set(index, new InputError("line", `is ${bytes} bytes of JSON`, JSON_SIZE_ALLOWED));
  }
  const [deepIndex, member] = nesting.pastLimit ?? [];
  if (typeof deepIndex === "number" && !problems.has(deepIndex)) {
    problems.set(deepIndex, new InputError(typeof member === "string" ? member : "line", `is nested ${nesting.depth - 1} levels deep (below the array)`, JSON_DEPTH_ALLOWED));
  }
  if (problems.size > 0) throw new LineProblemsError([...problems].sort(([first], [second]) => first - second).map(([index, error]) => ({ origin: `line ${index + 1}`, error })));
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError("invalid_json", "the body is not JSON: send a JSON array of requests, or JSON lines with Content-Type application/x-ndjson");
  }
  if (!Array.isArray(parsed)) throw new InputError("body", "must be a JSON array of requests (or JSON lines)");
  return parsed;
}

/** A batch body: a JSON array of requests, or JSON lines (one request a line), every request within one request's bounds. */
export function batchLines(raw: Buffer, contentType: string | undefined): unknown[] {
  const text = utf8Body(raw);
  if ((contentType ?? "").includes("json") && !(contentType ?? "").includes("ndjson") && !(contentType ?? "").includes("jsonl")) {
    if (text.trimStart().startsWith("[")) return arrayLines(text);
    checkJsonText(text, "body");
    try {
      JSON.parse(text);
    } catch {
      throw new ApiError("invalid_json", "the body is not JSON: send a JSON array of requests, or JSON lines with Content-Type application/x-ndjson");
    }
    throw new InputError("body", "must be a JSON array of requests (or JSON lines)");
  }
  const lines: unknown[] = [];
  const problems: Array<{ origin: string; error: InputError }> = [];
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    if (!line.trim()) continue;
    try {
      checkJsonText(line, "line", { namesMember: true });
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      problems.push({ origin: `line ${index + 1}`, error });
      continue;
    }
    try {
      lines.push(JSON.parse(line));
    } catch {
      throw new ApiError("invalid_json", `line ${index + 1} is not JSON`, { field: `line ${index + 1}` });
    }
  }
  if (problems.length > 0) throw new LineProblemsError(problems);
  return lines;
}

/** A batch line's request as the API reads it: its fields but `ref`, `notify_url` and `cancel_after_s` (the line's own). */
export const apiLineRequest: LineReader = (body) => requestOfBody(body, ["ref", "notify_url", "cancel_after_s"]);

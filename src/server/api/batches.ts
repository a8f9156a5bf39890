import { InputError } from "../../core/errors.js";
import type { LineReader } from "../../app/intake.js";
import { ApiError } from "./errors.js";
import { requestOfBody } from "./requests.js";

/** A batch body: a JSON array of requests, or JSON lines (one request a line). */
export function batchLines(raw: Buffer, contentType: string | undefined): unknown[] {
  const text = raw.toString("utf8");
  if ((contentType ?? "").includes("json") && !(contentType ?? "").includes("ndjson") && !(contentType ?? "").includes("jsonl")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiError("invalid_json", "the body is not JSON: send a JSON array of requests, or JSON lines with Content-Type application/x-ndjson");
    }
    if (!Array.isArray(parsed)) throw new InputError("body", "must be a JSON array of requests (or JSON lines)");
    return parsed;
  }
  const lines: unknown[] = [];
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    if (!line.trim()) continue;
    try {
      lines.push(JSON.parse(line));
    } catch {
      throw new ApiError("invalid_json", `line ${index + 1} is not JSON`, { field: `line ${index + 1}` });
    }
  }
  return lines;
}

/** A batch line's request as the API reads it: its fields but `ref` and `notify_url`. */
export const apiLineRequest: LineReader = (body) => requestOfBody(body, ["ref", "notify_url"]);

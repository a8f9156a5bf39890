import { isUtf8 } from "node:buffer";
import { readFileSync } from "node:fs";
import { z } from "zod";
import { readCancelAfterS } from "../core/deadline.js";
import { InputError } from "../core/errors.js";
import { checkJsonText } from "../core/json-text.js";
import { escapeUnprintable } from "../core/printable.js";
import { REF_ALLOWED, refProblem } from "../core/ref.js";
import { PROVIDER_IDS, type JobRequest } from "../providers/adapter.js";
import { readImageAs, readImages } from "../app/local-images.js";
import { routedRequestFrom, type RoutedRequest } from "../engine/route.js";

/** One native line of a batch file: `{"ref", "provider", "model", "input": {native fields}}`. (A line with `task` is a common request.) */
const batchLineSchema = z
  .object({
    ref: z.string().superRefine((ref, context) => {
      const problem = refProblem(ref);
      if (problem !== null) context.addIssue({ code: "custom", message: `${problem} (allowed: ${REF_ALLOWED})` });
    }),
    provider: z.enum(PROVIDER_IDS as unknown as [string, ...string[]]),
    model: z.string().min(1),
    operation: z.string().min(1).optional(),
    input: z.record(z.string(), z.unknown()),
    images: z.array(z.string().min(1)).optional(),
    // Checked by readCancelAfterS, whose message names what it takes.
    cancel_after_s: z.unknown().optional(),
  })
  .strict();

export interface BatchLine {
  line: number;
  ref: string;
  /** How long after it is queued the job stays wanted (`cancel_after_s`); null: for ever. */
  cancelAfterS: number | null;
  /** Native (`provider`, `model`, `input`) or common (`task`, … with `model` or `route`). */
  request: JobRequest | RoutedRequest;
}

/** Every problem in the file, one per line, so a user fixes them all at once. */
export class BatchFileError extends InputError {
  constructor(readonly problems: string[]) {
    super("batch file", `${problems.length} problem(s):\n  ${problems.join("\n  ")}`);
  }

  /** One entry per refused line, as the API's 422 for a batch lists them (`targets`): the line, and what is wrong with it. */
  lineEntries(): Array<{ target: string; reasons: string[] }> {
    return this.problems.map((problem) => {
      const match = /^(line \d+): ([\s\S]*)$/.exec(problem);
      return match ? { target: match[1]!, reasons: [match[2]!] } : { target: "batch file", reasons: [problem] };
    });
  }
}

/** Field names and messages may quote what the line holds: escaped, so printing a problem cannot act on the terminal. */
function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.length ? issue.path.join(".") : "(line)";
  return escapeUnprintable(`${path}: ${issue.message}`);
}

/**
 * Parses a JSON-lines batch file; blank lines and lines starting with # are
 * skipped. Returns the good lines and the problems of the others, so the
 * caller can add its own checks of the good lines and report everything at once.
 */
export function parseBatchFile(path: string): { lines: BatchLine[]; problems: string[] } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new InputError("FILE", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, "a JSON-lines file");
  }
  const text = bytes.toString("utf8");
  const notUtf8 = isUtf8(bytes) ? new Set<number>() : linesNotUtf8(bytes);
  const problems: string[] = [];
  const lines: BatchLine[] = [];
  const refs = new Map<string, number>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const lineNumber = index + 1;
    const trimmed = raw.trim();
    if (!trimmed || trimmed.startsWith("#")) return;
    if (notUtf8.has(lineNumber)) {
      // Read as it is, its bad bytes would become U+FFFD: a ref or prompt other than the one written.
      problems.push(`line ${lineNumber}: is not UTF-8 text (JSON lines are UTF-8)`);
      return;
    }
    try {
      checkJsonText(trimmed, "line", { namesMember: true });
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      // The line itself too large names no field of it: "line 3: is 2000000 bytes of JSON …".
      problems.push(`line ${lineNumber}: ${escapeUnprintable(error.field === "line" ? `${error.reason} (allowed: ${error.allowed})` : error.message)}`);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      problems.push(`line ${lineNumber}: not valid JSON`);
      return;
    }
    if (isRecord(parsed) && parsed.task !== undefined) {
      const ref = parsed.ref;
      const problem = typeof ref === "string" ? refProblem(ref) : "must be a string";
      if (problem !== null) {
        problems.push(`line ${lineNumber}: ref: ${escapeUnprintable(problem)} (allowed: ${REF_ALLOWED})`);
        return;
      }
      const first = refs.get(ref as string);
      if (first !== undefined) {
        problems.push(`line ${lineNumber}: ref "${ref as string}" repeats line ${first}; refs are unique`);
        return;
      }
      refs.set(ref as string, lineNumber);
      try {
        const cancelAfterS = readCancelAfterS(parsed.cancel_after_s, "cancel_after_s");
        lines.push({ line: lineNumber, ref: ref as string, cancelAfterS, request: routedRequestFrom(parsed, readImageAs, ["ref", "cancel_after_s"]) });
      } catch (error) {
        if (error instanceof InputError) problems.push(`line ${lineNumber}: ${escapeUnprintable(error.message)}`);
        else throw error;
      }
      return;
    }
    const result = batchLineSchema.safeParse(parsed);
    if (!result.success) {
      for (const issue of result.error.issues) problems.push(`line ${lineNumber}: ${describeIssue(issue)}`);
      return;
    }
    const value = result.data;
    const first = refs.get(value.ref);
    if (first !== undefined) {
      problems.push(`line ${lineNumber}: ref "${value.ref}" repeats line ${first}; refs are unique`);
      return;
    }
    refs.set(value.ref, lineNumber);
    try {
      lines.push({
        line: lineNumber,
        ref: value.ref,
        cancelAfterS: readCancelAfterS(value.cancel_after_s, "cancel_after_s"),
        request: {
          provider: value.provider as JobRequest["provider"],
          model: value.model,
          ...(value.operation ? { operation: value.operation } : {}),
          input: value.input,
          ...(value.images?.length ? { images: readImages(value.images) } : {}),
        },
      });
    } catch (error) {
      if (error instanceof InputError) problems.push(`line ${lineNumber}: ${error.field === "cancel_after_s" ? escapeUnprintable(error.message) : `images: ${escapeUnprintable(error.reason)}`}`);
      else throw error;
    }
  });
  if (lines.length === 0 && problems.length === 0) throw new InputError("FILE", `${path} holds no jobs`, "one JSON object per line");
  return { lines, problems };
}

/** The numbers (from 1) of the lines whose bytes are not UTF-8. */
function linesNotUtf8(bytes: Buffer): Set<number> {
  const lines = new Set<number>();
  let start = 0;
  for (let line = 1; start <= bytes.length; line++) {
    const end = bytes.indexOf(0x0a, start);
    const stop = end === -1 ? bytes.length : end;
    if (!isUtf8(bytes.subarray(start, stop))) lines.add(line);
    start = stop + 1;
  }
  return lines;
}

/** The line number a problem starts with ("line 12: …"), for ordering problems from several passes. */
export function problemLine(problem: string): number {
  const match = /^line (\d+)/.exec(problem);
  return match ? Number(match[1]) : 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Like parseBatchFile, but any problem throws BatchFileError. */
export function readBatchFile(path: string): BatchLine[] {
  const { lines, problems } = parseBatchFile(path);
  if (problems.length) throw new BatchFileError(problems);
  return lines;
}

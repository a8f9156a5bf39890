import { createHash } from "node:crypto";
import { checkOutputFolder, newJobOf, requireConfigured, type PreparedJob } from "../../cli/prepare.js";
import type { Runtime } from "../../cli/runtime.js";
import { resolveOutputLocation } from "../../outputs/location.js";
import { InputError } from "../../core/errors.js";
import type { Job } from "../../core/job.js";
import { refProblem } from "../../core/ref.js";
import type { Caller } from "./caller.js";
import { ApiError } from "./errors.js";
import { apiFolderChecks, checkNotifyUrl, checkTokenBudget, prepareForApi, requestOfBody, sameJobOrConflict } from "./jobs.js";

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

export interface PreparedLine {
  prepared: PreparedJob;
  notifyUrl: string | null;
}

/**
 * Every line validated, estimated and judged before anything is queued; the
 * problems of all lines together (one per line, naming its field).
 */
export async function prepareLines(runtime: Runtime, lines: unknown[]): Promise<PreparedLine[]> {
  if (lines.length === 0) throw new InputError("body", "holds no requests");
  const problems: Array<{ line: number; field: string; message: string }> = [];
  const prepared: PreparedLine[] = [];
  const refs = new Map<string, number>();
  for (const [index, value] of lines.entries()) {
    const line = index + 1;
    try {
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new InputError("line", "must be a JSON object (a request)");
      const body = value as Record<string, unknown>;
      if (typeof body.ref !== "string") throw new InputError("ref", "is required on every line of a batch, unique in it");
      const problem = refProblem(body.ref);
      if (problem) throw new InputError("ref", problem);
      const first = refs.get(body.ref);
      if (first !== undefined) throw new InputError("ref", `"${body.ref}" repeats line ${first}; refs are unique`);
      refs.set(body.ref, line);
      const notifyUrl = await checkNotifyUrl(runtime, body.notify_url);
      prepared.push({ prepared: await prepareForApi(runtime, body.ref, requestOfBody(body, ["ref", "notify_url"]), `line ${line}`), notifyUrl });
    } catch (error) {
      if (error instanceof InputError) problems.push({ line, field: error.field, message: error.message });
      else throw error;
    }
  }
  if (problems.length > 0) {
    throw new ApiError("invalid_input", `${problems.length} line(s) of the batch are refused; nothing was queued`, {
      field: "body",
      targets: problems.map((problem) => ({ target: `line ${problem.line}`, reasons: [problem.message] })),
    });
  }
  return prepared;
}

/** The id of the batch of these refs by this caller: the same body again is the same batch (resumed, not paid twice). */
function batchIdOf(caller: Caller, lines: readonly PreparedLine[]): string {
  const hash = createHash("sha256").update(caller.token?.id ?? "local");
  for (const line of lines) hash.update("\u0000").update(line.prepared.ref);
  return `api_batch_${hash.digest("hex").slice(0, 16)}`;
}

/**
 * `POST /v1/batches`: validated whole before anything is queued; refs already
 * stored with the same request are taken as they are (a resent batch resumes),
 * another request under a stored ref refuses the batch.
 */
export async function createBatch(runtime: Runtime, caller: Caller, lines: unknown[]): Promise<{ batchId: string; jobs: Job[]; created: number }> {
  const prepared = await prepareLines(runtime, lines);
  const store = await runtime.store();
  const existing = new Map((await store.jobsByRefs(prepared.map((line) => line.prepared.ref))).map((job) => [job.ref, job]));
  for (const line of prepared) {
    const job = existing.get(line.prepared.ref);
    if (job) sameJobOrConflict(caller, job, line.prepared);
  }
  requireConfigured(runtime, prepared.filter((line) => !existing.has(line.prepared.ref)).map((line) => line.prepared));
  const budgetId = await checkTokenBudget(runtime, caller, prepared.filter((line) => !existing.has(line.prepared.ref)).map((line) => line.prepared));
  const outDir = resolveOutputLocation(runtime.config.outputDir);
  await checkOutputFolder(outDir, null, apiFolderChecks);
  const batchId = batchIdOf(caller, prepared);
  const now = Date.now();
  const results = await store.insertJobs(
    prepared.map(({ prepared: item, notifyUrl }) => newJobOf(item, { now, batchId, outDir, budgetId, tokenId: caller.token?.id ?? null, notifyUrl })),
    now,
  );
  (await runtime.engine()).wake();
  return { batchId, jobs: results.map((result) => result.job), created: results.filter((result) => result.created).length };
}

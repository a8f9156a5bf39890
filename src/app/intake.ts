import { createHash } from "node:crypto";
import { InputError, UnsafeUrlError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import type { Job } from "../core/job.js";
import type { ProviderId } from "../core/provider-id.js";
import { redactUrl } from "../core/redact.js";
import { refProblem, validateRef } from "../core/ref.js";
import { assertSafeUrl } from "../core/url-safety.js";
import { checkBudget } from "../engine/budget.js";
import type { RoutedRequest } from "../engine/route.js";
import { defaultOutputs } from "../outputs/by-location.js";
import { rememberingFolderChecks } from "../outputs/local-folder.js";
import { resolveOutputLocation } from "../outputs/location.js";
import type { JobRequest } from "../providers/adapter.js";
import type { Caller } from "./caller.js";
import { ConflictError, LineProblemsError } from "./errors.js";
import { checkOutputFolder, newJobOf, PreparedInputError, prepareJob, requireConfigured, routeJson, sameRequest, type PrepareOptions, type PreparedJob } from "./prepare.js";
import type { Runtime } from "./runtime.js";

/**
 * The output folder proved writable before a job is accepted, remembered for
 * a second as the engine does: a probe file made and removed for each of
 * hundreds of submits a second queued behind one another in the file system.
 */
export const intakeFolderChecks = rememberingFolderChecks(defaultOutputs, () => Date.now());

/** The `notify_url` of a request, held to the rule for provider URLs (https, no private, loopback or metadata host). */
export async function checkNotifyUrl(runtime: Runtime, value: unknown): Promise<string | null> {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new InputError("notify_url", "must be a URL string");
  try {
    await assertSafeUrl(value, { allowHttp: runtime.config.allowPrivateUrls, allowPrivate: runtime.config.allowPrivateUrls });
  } catch (error) {
    // The refusal quotes the URL: only as redactUrl shows it (its path or query may be the receiver's token).
    if (error instanceof UnsafeUrlError) throw new InputError("notify_url", `refused URL ${redactUrl(value)}: ${error.reason}`, "a public https URL");
    throw error;
  }
  return value;
}

/** Validates, estimates and judges a request; its errors name the request's own fields (not "line 3: …"). */
export async function prepareRequest(runtime: Runtime, ref: string, request: JobRequest | RoutedRequest, origin = "request", options: PrepareOptions = {}): Promise<PreparedJob> {
  try {
    return await prepareJob(runtime, origin, ref, request, options);
  } catch (error) {
    if (error instanceof PreparedInputError) throw error.inner;
    throw error;
  }
}

/** What one request would cost and where it would go. */
export interface Quote {
  provider: ProviderId;
  model: string;
  estimate_micro_usd: number | null;
  source: string;
  warnings: string[];
  target?: string;
  route?: Array<{ target: string; estimate_micro_usd: number | null }>;
  ineligible?: Array<{ target: string; reasons: string[] }>;
}

/** Quotes one request (native or common: its chosen target's), with warnings; nothing is stored or sent. */
export async function quoteOf(runtime: Runtime, request: JobRequest | RoutedRequest): Promise<Quote> {
  const prepared = await prepareRequest(runtime, "quote", request);
  return {
    provider: prepared.validated.provider,
    model: prepared.validated.model,
    estimate_micro_usd: prepared.estimate.microUsd,
    source: prepared.estimate.source,
    warnings: prepared.validated.warnings,
    ...routeJson(prepared.route),
  };
}

/** What the caller's token may still commit, checked before anything is stored (the engine holds it again at each send). */
export async function checkTokenBudget(runtime: Runtime, caller: Caller, items: readonly PreparedJob[]): Promise<string | null> {
  const budgetId = caller.token?.budgetId ?? null;
  if (budgetId === null) return null;
  const budget = await (await runtime.store()).budget(budgetId);
  if (!budget) return null;
  checkBudget(
    items.map((item) => ({ label: item.ref, estimateMicroUsd: item.estimate.microUsd })),
    budget.ceilingMicroUsd,
    false,
    budget.committedMicroUsd,
  );
  return budgetId;
}

/** One job asked for by a remote caller: its ref (null: one is made), the request, where to notify. */
export interface JobSubmission {
  /** As given (checked here); null: the job gets a ref of its own. */
  ref: unknown;
  request: JobRequest | RoutedRequest;
  notifyUrl: unknown;
}

/**
 * One job, native or common, with an optional `ref` (the same ref and
 * request answer the stored job, 200; another request under it, a
 * conflict) and `notify_url`. Everything is checked before it is stored.
 */
export async function submitJob(runtime: Runtime, caller: Caller, submission: JobSubmission): Promise<{ status: 200 | 201; job: Job }> {
  const ref = submission.ref === null ? newId("api") : validateRef(submission.ref, "ref");
  const notifyUrl = await checkNotifyUrl(runtime, submission.notifyUrl);
  const prepared = await prepareRequest(runtime, ref, submission.request);
  const store = await runtime.store();
  const [stored] = await store.jobsByRefs(caller.tenant, [ref]);
  if (stored) return { status: 200, job: sameJobOrConflict(caller, stored, prepared) };
  // A provider without its key would keep the job queued for ever: refused now, as the CLI refuses it.
  requireConfigured(runtime, [prepared]);
  const budgetId = await checkTokenBudget(runtime, caller, [prepared]);
  const outDir = resolveOutputLocation(runtime.config.outputDir);
  await checkOutputFolder(outDir, null, intakeFolderChecks);
  const now = Date.now();
  const [result] = await store.insertJobs(
    [newJobOf(prepared, { now, batchId: null, outDir, budgetId, tokenId: caller.token?.id ?? null, tenant: caller.tenant, notifyUrl })],
    now,
  );
  // Stored by another request between the look and the insert: answered as if it had been there.
  if (!result!.created) return { status: 200, job: sameJobOrConflict(caller, result!.job, prepared) };
  (await runtime.engine()).wake();
  return { status: 201, job: result!.job };
}

/** A ref already stored: its job when it is this caller's and this request, else a conflict that reveals nothing of another's job. */
export function sameJobOrConflict(caller: Caller, job: Job, prepared: Pick<PreparedJob, "validated" | "route">): Job {
  if (!sameRequest(job, prepared)) {
    throw new ConflictError("ref_conflict", `ref "${job.ref}" is already used by job ${job.id} with a different request`, "ref");
  }
  return job;
}

/** How a face reads the request of one batch line (a JSON object with `ref` and `notify_url` beside the request's own fields). */
export type LineReader = (body: Record<string, unknown>) => JobRequest | RoutedRequest;

export interface PreparedLine {
  prepared: PreparedJob;
  notifyUrl: string | null;
}

/**
 * Every line validated, estimated and judged before anything is queued; the
 * problems of all lines together (one per line, naming its field).
 */
export async function prepareLines(runtime: Runtime, lines: readonly unknown[], readRequest: LineReader): Promise<PreparedLine[]> {
  if (lines.length === 0) throw new InputError("body", "holds no requests");
  const problems: Array<{ origin: string; error: InputError }> = [];
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
      prepared.push({ prepared: await prepareRequest(runtime, body.ref, readRequest(body), `line ${line}`), notifyUrl });
    } catch (error) {
      if (error instanceof InputError) problems.push({ origin: `line ${line}`, error });
      else throw error;
    }
  }
  if (problems.length > 0) throw new LineProblemsError(problems);
  return prepared;
}

/** The id of the batch of these refs by this caller: the same body again is the same batch (resumed, not paid twice). */
function batchIdOf(caller: Caller, lines: readonly PreparedLine[]): string {
  const hash = createHash("sha256").update(caller.tenant);
  for (const line of lines) hash.update("\u0000").update(line.prepared.ref);
  return `api_batch_${hash.digest("hex").slice(0, 16)}`;
}

/**
 * A batch: validated whole before anything is queued; refs already stored
 * with the same request are taken as they are (a resent batch resumes),
 * another request under a stored ref refuses the batch.
 */
export async function submitBatch(runtime: Runtime, caller: Caller, lines: readonly unknown[], readRequest: LineReader): Promise<{ batchId: string; jobs: Job[]; created: number }> {
  const prepared = await prepareLines(runtime, lines, readRequest);
  const store = await runtime.store();
  const existing = new Map((await store.jobsByRefs(caller.tenant, prepared.map((line) => line.prepared.ref))).map((job) => [job.ref, job]));
  for (const line of prepared) {
    const job = existing.get(line.prepared.ref);
    if (job) sameJobOrConflict(caller, job, line.prepared);
  }
  requireConfigured(runtime, prepared.filter((line) => !existing.has(line.prepared.ref)).map((line) => line.prepared));
  const budgetId = await checkTokenBudget(runtime, caller, prepared.filter((line) => !existing.has(line.prepared.ref)).map((line) => line.prepared));
  const outDir = resolveOutputLocation(runtime.config.outputDir);
  await checkOutputFolder(outDir, null, intakeFolderChecks);
  const batchId = batchIdOf(caller, prepared);
  const now = Date.now();
  const results = await store.insertJobs(
    prepared.map(({ prepared: item, notifyUrl }) => newJobOf(item, { now, batchId, outDir, budgetId, tokenId: caller.token?.id ?? null, tenant: caller.tenant, notifyUrl })),
    now,
  );
  (await runtime.engine()).wake();
  return { batchId, jobs: results.map((result) => result.job), created: results.filter((result) => result.created).length };
}

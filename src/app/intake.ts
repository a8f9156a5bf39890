import { createHash } from "node:crypto";
import { readCancelAfterS } from "../core/deadline.js";
import { BudgetError, InputError, UnsafeUrlError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import type { Job } from "../core/job.js";
import type { ProviderId } from "../core/provider-id.js";
import { formatMicroUsd } from "../core/money.js";
import { redactUrl } from "../core/redact.js";
import { parseStoreAddress } from "../core/store-address.js";
import { refProblem, validateRef } from "../core/ref.js";
import { assertSafeUrl } from "../core/url-safety.js";
import { checkWellFormed } from "../core/well-formed.js";
import { type BudgetWording, checkBudget } from "../engine/budget.js";
import type { RoutedRequest } from "../engine/route.js";
import { defaultOutputs } from "../outputs/by-location.js";
import { rememberingFolderChecks } from "../outputs/local-folder.js";
import { resolveOutputLocation } from "../outputs/location.js";
import type { JobRequest } from "../providers/adapter.js";
import type { Admission, AdmissionOutcome, BudgetStatus } from "../store/store.js";
import type { Caller } from "./caller.js";
import { ConflictError, IdempotencyKeyReusedError, LineProblemsError } from "./errors.js";
import { GroupCommit } from "./group-commit.js";
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
  // A URL parser would write a lone surrogate as %EF%BF%BD: another address than the one given.
  checkWellFormed(value, "notify_url");
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

/** How an `Idempotency-Key` is read: printable ASCII, as the header's drafts and the OpenAI and Stripe APIs take it. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** Keys are kept this long after their request (at least the day the header's draft and the issue ask for). */
export const IDEMPOTENCY_KEEP_MS = 24 * 3_600_000;

/** A request's `Idempotency-Key` and the sha256 of what it asked (the same key with another request is refused). */
export interface IdempotencyRequest {
  key: string;
  requestSha256: string;
}

/** The key as given, or an InputError naming it. */
export function validateIdempotencyKey(key: string): string {
  if (!IDEMPOTENCY_KEY.test(key)) throw new InputError("Idempotency-Key", `"${key.slice(0, 40)}" is not a key`, "1 to 255 printable ASCII characters, no spaces");
  return key;
}

/** How a token's budget is named when it refuses (the API's words: no flags of the CLI). */
function tokenBudgetWording(caller: Caller): BudgetWording {
  return {
    budget: (ceiling) => `token ${caller.name}'s budget of ${ceiling}`,
    setBy: "",
    committedBy: "its jobs queued, running and charged",
    unpricedRemedy: "a token with a budget runs priced jobs only",
  };
}

/** The budget a caller's jobs are admitted under (its token's, if the token has one), as read now: not held; the admission decides. */
type BudgetOf = { id: string; wording: BudgetWording; status: BudgetStatus | null } | null;

async function budgetOf(runtime: Runtime, caller: Caller): Promise<BudgetOf> {
  const id = caller.token?.budgetId ?? null;
  if (id === null) return null;
  return { id, wording: tokenBudgetWording(caller), status: await (await runtime.store()).budget(id) };
}

/**
 * Intake's writer for one runtime: admissions arriving while one is written
 * are written together by the next (a group commit). SQLite takes one writer;
 * a PostgreSQL store a few at once (its pool's connections), whose budgets
 * and keys are locked in a fixed order (store/admission.ts).
 */
const writers = new WeakMap<Runtime, GroupCommit<Admission, AdmissionOutcome>>();
const ADMISSIONS_PER_WRITE = 64;
/** Writes under way at once on PostgreSQL: a few of its pool's connections, the others left to reads and the engine. */
const POSTGRES_WRITERS = 4;

export function admitted(runtime: Runtime, admission: Admission): Promise<AdmissionOutcome> {
  let writer = writers.get(runtime);
  if (!writer) {
    const concurrency = parseStoreAddress(runtime.config.store).kind === "postgres" ? POSTGRES_WRITERS : 1;
    // The store asked for at each write: one the runtime opened again (after a close) is the one written to.
    writer = new GroupCommit(async (group: Admission[]) => (await runtime.store()).admit(group, Date.now()), { concurrency, maxGroup: ADMISSIONS_PER_WRITE });
    writers.set(runtime, writer);
  }
  return writer.submit(admission);
}

/** What the application answers of an admission: the jobs (with the status a retry of it answers too) or why none was queued. */
async function answerOf(runtime: Runtime, caller: Caller, outcome: AdmissionOutcome, budget: BudgetOf): Promise<{ status: 200 | 201; jobs: Job[]; batchId: string | null }> {
  switch (outcome.kind) {
    case "admitted": {
      const created = outcome.jobs.some((entry) => entry.created);
      if (created) (await runtime.engine()).wake();
      return { status: created ? 201 : 200, jobs: outcome.jobs.map((entry) => entry.job), batchId: null };
    }
    case "replayed": {
      const store = await runtime.store();
      const jobs = await store.listJobs({ ids: outcome.jobIds });
      const byId = new Map(jobs.map((job) => [job.id, job]));
      return { status: outcome.status, jobs: outcome.jobIds.map((id) => byId.get(id)!).filter(Boolean), batchId: outcome.batchId };
    }
    case "key_reused":
      throw new IdempotencyKeyReusedError(outcome.key);
    case "ref_conflict":
      throw new ConflictError("ref_conflict", `ref "${outcome.stored.ref}" is already used by job ${outcome.stored.id} with a different request`, "ref");
    case "over_budget": {
      const { budget: status, neededMicroUsd } = outcome;
      const left = Math.max(0, status.ceilingMicroUsd - status.committedMicroUsd);
      const named = (budget?.wording ?? tokenBudgetWording(caller)).budget(formatMicroUsd(status.ceilingMicroUsd));
      throw new BudgetError(
        status.committedMicroUsd + neededMicroUsd,
        status.ceilingMicroUsd,
        `estimated cost ${formatMicroUsd(neededMicroUsd)} is more than ${named} has left (${formatMicroUsd(left)}: ${formatMicroUsd(status.committedMicroUsd)} is held by its jobs queued, running and charged); nothing was queued`,
      );
    }
  }
}

/** One job asked for by a remote caller: its ref (null: one is made), the request, where to notify. */
export interface JobSubmission {
  /** As given (checked here); null: the job gets a ref of its own. */
  ref: unknown;
  request: JobRequest | RoutedRequest;
  notifyUrl: unknown;
  /** How long after its admission the job stays wanted (`cancel_after_s`, or the API's `Cancel-After`); null: for ever. */
  cancelAfterS?: number | null;
  /** The request's `traceparent` header: the job span becomes a child of the caller's span (traces exported). */
  traceparent?: string | null;
}

/**
 * Checks made before the admission, which writes: the provider configured,
 * the output folder writable, and under a budget a price for every job and no
 * request costing more than the whole ceiling (what is left is the
 * admission's to decide, atomically). When one refuses a request whose jobs
 * are stored already as this same request (a client's retry), the stored jobs
 * are the answer, not the refusal.
 */
async function checkLocally(runtime: Runtime, caller: Caller, items: readonly PreparedJob[], budget: BudgetOf): Promise<string> {
  // A provider without its key would keep the job queued for ever: refused now, as the CLI refuses it.
  requireConfigured(runtime, items);
  if (budget?.status) checkBudget(items.map((item) => ({ label: item.ref, estimateMicroUsd: item.estimate.microUsd })), budget.status.ceilingMicroUsd, false, 0, budget.wording);
  const outDir = resolveOutputLocation(runtime.config.outputDir);
  await checkOutputFolder(outDir, null, intakeFolderChecks);
  return outDir;
}

/** The stored jobs of these refs when every one is stored as this same request (a retry), else null. */
async function storedAsAsked(runtime: Runtime, caller: Caller, items: readonly PreparedJob[]): Promise<Job[] | null> {
  const stored = new Map((await (await runtime.store()).jobsByRefs(caller.tenant, items.map((item) => item.ref))).map((job) => [job.ref, job]));
  const jobs = items.map((item) => stored.get(item.ref));
  return jobs.every((job, index) => job !== undefined && sameRequest(job, items[index]!)) ? (jobs as Job[]) : null;
}

/**
 * One job, native or common, with an optional `ref` (the same ref and
 * request answer the stored job, 200; another request under it, a
 * conflict), `notify_url` and `Idempotency-Key`. Everything is checked
 * before it is stored; its estimate is reserved in the caller's budget in
 * the transaction that stores it.
 */
export async function submitJob(runtime: Runtime, caller: Caller, submission: JobSubmission, idempotency: IdempotencyRequest | null = null): Promise<{ status: 200 | 201; job: Job }> {
  const ref = submission.ref === null ? newId("api") : validateRef(submission.ref, "ref");
  const notifyUrl = await checkNotifyUrl(runtime, submission.notifyUrl);
  const budget = await budgetOf(runtime, caller);
  // A common request is routed within what the budget has left (a dearer target is not eligible).
  const routing = { tenant: caller.tenant, ...(budget?.status ? { budgetLeftMicroUsd: budget.status.ceilingMicroUsd - budget.status.committedMicroUsd } : {}) };
  const prepared = { ...(await prepareRequest(runtime, ref, submission.request, "request", routing)), cancelAfterS: submission.cancelAfterS ?? null };
  let outDir: string;
  try {
    outDir = await checkLocally(runtime, caller, [prepared], budget);
  } catch (error) {
    // A retry of a job stored before is answered with it, whatever changed here since.
    const stored = submission.ref === null ? null : await storedAsAsked(runtime, caller, [prepared]);
    if (stored) return { status: 200, job: stored[0]! };
    throw error;
  }
  const now = Date.now();
  const outcome = await admitted(runtime, {
    tenant: caller.tenant,
    jobs: [newJobOf(prepared, { now, batchId: null, outDir, budgetId: budget?.id ?? null, tokenId: caller.token?.id ?? null, tenant: caller.tenant, notifyUrl, trace: runtime.jobTrace(submission.traceparent) })],
    budgetId: budget?.id ?? null,
    differs: (stored) => !sameRequest(stored, prepared),
    idempotency: idempotency ? { ...idempotency, keepMs: IDEMPOTENCY_KEEP_MS } : null,
    batchId: null,
  });
  const answer = await answerOf(runtime, caller, outcome, budget);
  return { status: answer.status, job: answer.jobs[0]! };
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
export async function prepareLines(runtime: Runtime, lines: readonly unknown[], readRequest: LineReader, cancelAfterS: { header: number | null } = { header: null }, tenant?: string): Promise<PreparedLine[]> {
  if (lines.length === 0) throw new InputError("body", "holds no requests");
  // route_by "time" counts the batch's earlier lines ahead of each.
  const routing = { routedHere: new Map<ProviderId, number>(), ...(tenant !== undefined ? { tenant } : {}) };
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
      const own = readCancelAfterS(body.cancel_after_s, "cancel_after_s");
      if (own !== null && cancelAfterS.header !== null) throw new InputError("Cancel-After", "is given with the line's own cancel_after_s: send one of them", "Cancel-After for every line, or cancel_after_s on the lines");
      prepared.push({ prepared: { ...(await prepareRequest(runtime, body.ref, readRequest(body), `line ${line}`, routing)), cancelAfterS: own ?? cancelAfterS.header }, notifyUrl });
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
 * A batch: validated whole before anything is queued, then admitted whole
 * (its estimates reserved in the caller's budget in the transaction that
 * stores it); refs already stored with the same request are taken as they
 * are (a resent batch resumes, and answers its jobs as they are now),
 * another request under a stored ref refuses the batch. A batch all of whose
 * jobs were stored before by one earlier batch is answered under that
 * batch's id, so the id answered always resolves.
 */
export async function submitBatch(
  runtime: Runtime,
  caller: Caller,
  lines: readonly unknown[],
  readRequest: LineReader,
  idempotency: IdempotencyRequest | null = null,
  cancelAfterHeaderS: number | null = null,
  traceparent: string | null = null,
): Promise<{ status: 200 | 201; batchId: string; jobs: Job[]; created: number }> {
  const prepared = await prepareLines(runtime, lines, readRequest, { header: cancelAfterHeaderS }, caller.tenant);
  const budget = await budgetOf(runtime, caller);
  const items = prepared.map((line) => line.prepared);
  let outDir: string;
  try {
    outDir = await checkLocally(runtime, caller, items, budget);
  } catch (error) {
    // A retry of a batch stored before is answered with its jobs, whatever changed here since.
    const stored = await storedAsAsked(runtime, caller, items);
    if (stored) return { status: 200, batchId: batchOfStored(stored) ?? batchIdOf(caller, prepared), jobs: stored, created: 0 };
    throw error;
  }
  const batchId = batchIdOf(caller, prepared);
  const now = Date.now();
  const wanted = new Map(items.map((item) => [item.ref, item]));
  const outcome = await admitted(runtime, {
    tenant: caller.tenant,
    jobs: prepared.map(({ prepared: item, notifyUrl }) => newJobOf(item, { now, batchId, outDir, budgetId: budget?.id ?? null, tokenId: caller.token?.id ?? null, tenant: caller.tenant, notifyUrl, trace: runtime.jobTrace(traceparent) })),
    budgetId: budget?.id ?? null,
    differs: (stored) => !sameRequest(stored, wanted.get(stored.ref)!),
    idempotency: idempotency ? { ...idempotency, keepMs: IDEMPOTENCY_KEEP_MS } : null,
    batchId,
  });
  const answer = await answerOf(runtime, caller, outcome, budget);
  const created = outcome.kind === "admitted" ? outcome.jobs.filter((entry) => entry.created).length : 0;
  const answeredId = answer.batchId ?? (created === 0 ? batchOfStored(answer.jobs) : null) ?? batchId;
  return { status: answer.status, batchId: answeredId, jobs: answer.jobs, created };
}

/** The one batch these stored jobs all belong to, if they do. */
function batchOfStored(jobs: readonly Job[]): string | null {
  const batches = new Set(jobs.map((job) => job.batchId));
  const [only] = batches;
  return batches.size === 1 && only !== undefined ? only : null;
}

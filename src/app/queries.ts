import { InputError } from "../core/errors.js";
import type { Job, JobEvent, JobOutput } from "../core/job.js";
import type { BatchSummary, DailySpend, JobFilter, SpendLine } from "../store/store.js";
import { canSee, scopeOf, type Caller } from "./caller.js";
import { NotFoundError } from "./errors.js";
import { remoteEvents } from "./job-view.js";
import { shownEvents } from "./notify-urls.js";
import type { Runtime } from "./runtime.js";

/** What a listing may filter by; whose jobs it reads is the caller's to say, not the filter's. */
export type JobListFilter = Omit<JobFilter, "tenant" | "ids" | "limit" | "newestFirst">;

/**
 * Jobs newest first, a page of `limit`: the caller's own unless admin. The
 * next page starts after the page's last job (`next`): jobs created
 * meanwhile are newer, so a page never repeats or skips one.
 */
export async function listJobs(runtime: Runtime, caller: Caller, filter: JobListFilter, limit: number): Promise<{ jobs: Job[]; next: Pick<Job, "createdAt" | "id"> | null }> {
  const tenant = scopeOf(caller);
  // One more than the page says whether there is a next one.
  const jobs = await (await runtime.store()).listJobs({ ...filter, ...(tenant !== undefined ? { tenant } : {}), newestFirst: true, limit: limit + 1 });
  const page = jobs.slice(0, limit);
  return { jobs: page, next: jobs.length > limit ? page.at(-1)! : null };
}

/** The job by id, when the caller may see it; otherwise not found (whether it exists is not said). */
export async function visibleJob(runtime: Runtime, caller: Caller, id: string): Promise<Job> {
  const job = await (await runtime.store()).getJob(id);
  if (!job || !canSee(caller, job)) throw new NotFoundError(`no job ${id}`);
  return job;
}

/** A visible job's saved outputs. */
export async function jobOutputs(runtime: Runtime, job: Pick<Job, "id">): Promise<JobOutput[]> {
  return (await runtime.store()).outputs(job.id);
}

/** One saved output of a visible job, or not found. */
export async function jobOutput(runtime: Runtime, job: Pick<Job, "id">, index: string): Promise<JobOutput> {
  const output = (await jobOutputs(runtime, job)).find((each) => String(each.index) === index);
  if (!output) throw new NotFoundError(`job ${job.id} has no output ${index}`);
  return output;
}

/** A visible job's event log as a remote caller sees it: every URL it was notified at redacted, no server path. */
export async function jobEvents(runtime: Runtime, job: Pick<Job, "id" | "notifyUrl" | "outDir">): Promise<JobEvent[]> {
  return remoteEvents(job, await shownEvents(await runtime.store(), job, runtime.config.notifyUrl));
}

/** How a batch id is written (`batch_…`, or a command's own): letters, digits, `_` and `-`, at most 100. */
const BATCH_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** A batch id as given in a path or a query, refused in one sentence naming the field when it cannot be one. */
export function checkBatchId(batchId: string, field = "batch"): string {
  if (!BATCH_ID.test(batchId)) throw new InputError(field, `"${batchId.slice(0, 40)}${batchId.length > 40 ? "…" : ""}" is not a batch id`, "a batch id: 1 to 100 letters, digits, _ or -");
  return batchId;
}

/** A batch counted by state, with its estimate and charges: the caller's jobs in it only, unless admin; not found when it has none. */
export async function batchOf(runtime: Runtime, caller: Caller, batchId: string): Promise<BatchSummary> {
  checkBatchId(batchId);
  const summary = await (await runtime.store()).batchSummary(batchId, scopeOf(caller));
  if (summary.jobs === 0) throw new NotFoundError(`no batch ${batchId}`);
  return summary;
}

/** How many of a batch's failures its page lists (the counts say how many there are). */
export const BATCH_FAILURES_SHOWN = 20;

/** The batch's jobs that ended without a result (failed, expired, unknown submission), at most `BATCH_FAILURES_SHOWN` of each, each read as one range of an index. */
export async function batchFailures(runtime: Runtime, caller: Caller, batchId: string): Promise<Job[]> {
  const store = await runtime.store();
  const tenant = scopeOf(caller);
  const pages = await Promise.all((["failed", "unknown_submission", "expired"] as const).map((state) => store.batchJobsInState(checkBatchId(batchId), state, BATCH_FAILURES_SHOWN, tenant)));
  return pages.flat();
}

/** Spend between `from` and `to` by provider, model and token (named), the caller's own unless admin. */
export async function spendOf(runtime: Runtime, caller: Caller, from: number, to: number): Promise<Array<SpendLine & { tokenName: string | null }>> {
  const store = await runtime.store();
  const lines = await store.spendSummary(from, to, scopeOf(caller));
  const names = new Map((await store.tokens()).map((token) => [token.id, token.name]));
  return lines.map((line) => ({ ...line, tokenName: line.tokenId === null ? null : (names.get(line.tokenId) ?? line.tokenId) }));
}

/** The spend of a period as the API answers it and the CLI's `--json` prints it: totals, then one line per provider, model and token. */
export function spendView(lines: ReadonlyArray<SpendLine & { tokenName: string | null }>, from: number, to: number) {
  const total = (pick: (line: SpendLine) => number) => lines.reduce((sum, line) => sum + pick(line), 0);
  return {
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    settled_micro_usd: total((line) => line.settledMicroUsd),
    estimated_micro_usd: total((line) => line.estimatedMicroUsd),
    unpriced_jobs: total((line) => line.unpricedJobs),
    lines: lines.map((line) => ({
      provider: line.provider,
      model: line.model,
      token: line.tokenName,
      settled_micro_usd: line.settledMicroUsd,
      estimated_micro_usd: line.estimatedMicroUsd,
      jobs: line.jobs,
      unpriced_jobs: line.unpricedJobs,
    })),
  };
}

const DAY_MS = 86_400_000;

/** How long a spend period may be: a year and a day (one bounded read, by index). */
const MAX_PERIOD_MS = 366 * DAY_MS;
/** The default period: the last 30 days. */
const DEFAULT_PERIOD_MS = 30 * DAY_MS;

const ALLOWED_TIME = "a day (YYYY-MM-DD, UTC, inclusive), an ISO 8601 time (2026-11-27T10:00:00Z) or milliseconds since the epoch";

/** One end of a spend period: a day is its first millisecond (`from`) or the first of the next day (`to`: days are inclusive). */
function periodEnd(value: string, field: "from" | "to"): number {
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (day) {
    const start = Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]));
    if (new Date(start).toISOString().slice(0, 10) !== value) throw new InputError(field, `"${value}" is not a day of the calendar`, ALLOWED_TIME);
    return field === "from" ? start : start + DAY_MS;
  }
  const at = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isSafeInteger(at)) throw new InputError(field, `"${value.slice(0, 40)}" is not a time`, ALLOWED_TIME);
  return at;
}

/**
 * The period a spend question covers, the same for the API, the CLI and the
 * dashboard: `from` inclusive, `to` exclusive as a time and inclusive as a day
 * (`from=2026-11-27&to=2026-11-27` is that whole day). By default the 30 days
 * before `to` (now when not given).
 */
export function spendPeriod(from: string | undefined, to: string | undefined, now: number): { from: number; to: number } {
  const end = to === undefined ? now : periodEnd(to, "to");
  const start = from === undefined ? end - DEFAULT_PERIOD_MS : periodEnd(from, "from");
  if (start >= end) throw new InputError("from", `must be before to (a day given as to is included: from=${from ?? ""}&to=${from ?? ""} is that day)`, "from earlier than to");
  if (end - start > MAX_PERIOD_MS) throw new InputError("to", `is more than 366 days after from`, "a period of at most 366 days");
  return { from: start, to: end };
}

/** Daily spend: the first ms of each UTC day shown, oldest first, and the lines of those days. */
export interface DailySpendView {
  days: number[];
  lines: DailySpend[];
}

/** Spend of the last `days` UTC days (today included) by provider and day, the caller's own unless admin: one bounded read. */
export async function spendOfDays(runtime: Runtime, caller: Caller, now: number, days: number): Promise<DailySpendView> {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const from = today - (days - 1) * DAY_MS;
  const lines = await (await runtime.store()).spendByDay(from, today + DAY_MS, scopeOf(caller));
  return { days: Array.from({ length: days }, (_, index) => from + index * DAY_MS), lines };
}

import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { isTerminal, type Job } from "../../src/core/job.js";
import type { ProviderId } from "../../src/providers/adapter.js";
import type { AllEmulators, LoggedRequest, Sandbox } from "../../src/sandbox/index.js";
import { KyselyStore } from "../../src/store/kysely-store.js";
import type { Store } from "../../src/store/store.js";

/**
 * What the money invariants are checked against: every job in the store, the
 * sandbox's own records (tasks, request log, limits) and the output folders.
 */
export interface InvariantSubject {
  store: Store;
  sandbox: Sandbox;
  /** The emulators the sandbox runs (any subset of A–F). */
  emulators: Partial<AllEmulators>;
  /**
   * A text each job's request carries and no other job's does (in its
   * prompt): how the provider's own task records and the submit requests in
   * the sandbox's log are matched to jobs.
   */
  markerOf(job: Job): string;
  /** The budget the jobs were queued under, if any. */
  budgetId?: string;
  /** Folders results were saved in: every file there is checked for temporary leftovers. */
  outputDirs: readonly string[];
  /** C's slots on the tier in use (the sandbox's default tier, free, has 3). */
  cSlots?: number;
}

/** One task as the provider recorded it, normalised across A–F. */
export interface ProviderTask {
  ids: string[];
  /** Where the job's marker is looked for (prompt or whole body). */
  text: string;
  succeeded: boolean;
  /** B: refused at submit (a failed job created by the submit answer), not an accepted task. */
  rejectedAtSubmit: boolean;
  idempotencyKey: string | null;
}

const SUBMIT_PATHS: Record<ProviderId, RegExp> = {
  a: /\/contents\/generations\/tasks$/,
  b: /^\/b\/v1\/media\//,
  c: /^\/c\/openapi\/v2\/video\/text\/generate$/,
  d: /^\/d\/v1\//,
  e: /^\/e\/v[34]\/images\/[a-z-]+-async$/,
  f: /^\/f\/v1\/[^/]+\/async\/generate$/,
};

/** The tag the sandbox writes at the end of each video, naming the task it was rendered for. */
const VIDEO_TAGS: Partial<Record<ProviderId, (providerJobId: string) => string>> = {
  a: (id) => `mediagate sandbox: A task ${id}`,
  b: (id) => `mediagate sandbox: B job ${id}`,
  c: (id) => `mediagate sandbox: C video ${id}`,
};

/** spec D: 24 active tasks per key; spec E: 4 requests a minute; spec A: 180 a minute (standard key). */
const D_ACTIVE_LIMIT = 24;
const E_PER_MINUTE = 4;
const A_PER_MINUTE = 180;

/** Every task a provider's emulator recorded (null when that emulator is not running). */
export function providerTasks(emulators: Partial<AllEmulators>, provider: ProviderId): ProviderTask[] | null {
  const plain = { rejectedAtSubmit: false, idempotencyKey: null };
  switch (provider) {
    case "a":
      return emulators.a?.tasks().map((task) => ({ ...plain, ids: [task.id], text: task.prompt, succeeded: task.status === "succeeded" })) ?? null;
    case "b":
      return (
        emulators.b?.jobs.map((job) => ({
          ids: [job.id],
          text: JSON.stringify(job.body),
          succeeded: job.status === "completed",
          rejectedAtSubmit: job.rejectedAtSubmit,
          idempotencyKey: job.idempotencyKey,
        })) ?? null
      );
    case "c":
      return emulators.c?.tasks().map((task) => ({ ...plain, ids: [task.videoId], text: task.prompt, succeeded: task.status === 1 })) ?? null;
    case "d":
      return emulators.d?.jobs.map((job) => ({ ...plain, ids: [job.id], text: JSON.stringify(job.body), succeeded: job.status === "Ready" })) ?? null;
    case "e":
      return emulators.e?.jobs().map((job) => ({ ...plain, ids: [job.jobId, job.id], text: job.prompt ?? "", succeeded: job.status === "succeeded" })) ?? null;
    case "f":
      return emulators.f?.generations().map((generation) => ({ ...plain, ids: [generation.id], text: generation.prompt, succeeded: generation.status === "ready" })) ?? null;
  }
}

/** A submit the provider definitely refused: an answer of 400 or more that reached the client. */
function refused(entry: LoggedRequest): boolean {
  return entry.statusCode !== undefined && entry.statusCode >= 400 && entry.fault !== "drop_after_handling";
}

/** Whether a submit request in the sandbox's log was for this job: its body carries the job's marker, or its webhook address names the job. */
function submitIsFor(entry: LoggedRequest, job: Job, marker: string): boolean {
  if (entry.body && JSON.stringify(entry.body).includes(marker)) return true;
  let url = entry.url;
  try {
    url = decodeURIComponent(entry.url);
  } catch {
    // keep the raw form
  }
  return url.includes(`/webhooks/${job.provider}/${job.id}`);
}

function filesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/**
 * Checks what must hold after any run, however it was disturbed, and returns
 * every violation found (an empty list when all hold):
 * - none lost: every job is terminal or still tracked, and no provider task
 *   that succeeded belongs to a job that gave up on it;
 * - no double submit: at most one accepted task per job at its provider; on a
 *   provider without idempotency a job is submitted again only after a
 *   definite refusal; on B only under the same Idempotency-Key;
 * - no charge twice: at most one ledger row per job, equal to its charge;
 *   D's and B's charges equal what the provider charged;
 * - limits kept, as the provider saw them: D's 24 active tasks, C's tier
 *   slots, E's 4 a minute, A's 180 a minute, and no slot held by an ended job;
 * - the budget never passed: what is committed, and what is charged, are
 *   within the ceiling, and committed equals what its jobs hold;
 * - every saved file is whole (size and sha256 as recorded), is its own
 *   task's (videos carry their task's tag), and no `.tmp-` file is left.
 */
export async function checkInvariants(subject: InvariantSubject): Promise<string[]> {
  const { store, sandbox, emulators } = subject;
  const violations: string[] = [];
  const jobs = await store.listJobs();
  const log = sandbox.requests();

  // None lost.
  for (const job of jobs) {
    if (isTerminal(job.state)) {
      if (job.leaseOwner !== null) violations.push(`${job.ref}: ${job.state} but still leased by ${job.leaseOwner}`);
      if (job.slotsHeld.length > 0) violations.push(`${job.ref}: ${job.state} but still holds slots ${job.slotsHeld.join(", ")}`);
      continue;
    }
    if (job.state === "queued" && job.providerJobId !== null) violations.push(`${job.ref}: queued again after ${job.provider.toUpperCase()} accepted it as ${job.providerJobId}`);
    if (!Number.isFinite(job.nextAttemptAt)) violations.push(`${job.ref}: ${job.state} with no time to look at it again`);
  }

  // One provider task per job, and the job's record of it.
  const byProviderJobId = new Map<string, Job>();
  for (const job of jobs) {
    if (job.providerJobId === null) continue;
    const key = `${job.provider}:${job.providerJobId}`;
    const other = byProviderJobId.get(key);
    if (other) violations.push(`${job.ref} and ${other.ref} both hold ${key}`);
    byProviderJobId.set(key, job);
  }
  const orphans = new Map<ProviderId, number>();
  for (const provider of ["a", "b", "c", "d", "e", "f"] as const) {
    const tasks = providerTasks(emulators, provider);
    if (!tasks) continue;
    const ours = jobs.filter((job) => job.provider === provider);
    orphans.set(provider, tasks.filter((task) => !task.rejectedAtSubmit && !task.ids.some((id) => byProviderJobId.has(`${provider}:${id}`))).length);
    for (const job of ours) {
      const marker = subject.markerOf(job);
      const matched = tasks.filter((task) => task.text.includes(marker));
      const accepted = matched.filter((task) => !task.rejectedAtSubmit);
      if (accepted.length > 1) violations.push(`${job.ref}: ${accepted.length} tasks at ${provider.toUpperCase()} (${accepted.map((task) => task.ids[0]).join(", ")})`);
      if (provider === "b") {
        const keys = new Set(matched.map((task) => task.idempotencyKey));
        if (accepted.length > 0 && keys.size > 1) violations.push(`${job.ref}: B holds tasks under ${keys.size} idempotency keys`);
      }
      if (job.providerJobId !== null && !accepted.some((task) => task.ids.includes(job.providerJobId!))) {
        violations.push(`${job.ref}: records ${job.providerJobId}, which ${provider.toUpperCase()} has no task of it under`);
      }
      if (job.state === "succeeded" && !accepted.some((task) => task.succeeded)) violations.push(`${job.ref}: succeeded, but no task of it succeeded at ${provider.toUpperCase()}`);
      if (job.state === "failed" && accepted.some((task) => task.succeeded)) {
        violations.push(`${job.ref}: lost result: ${provider.toUpperCase()} rendered it, the job failed (${job.error?.code}: ${job.error?.message})`);
      }
      if (job.state === "unknown_submission" && provider === "b") violations.push(`${job.ref}: unknown submission on B, which has idempotency keys`);
    }
  }

  // Submits as the sandbox received them.
  for (const provider of ["a", "b", "c", "d", "e", "f"] as const) {
    if (!emulators[provider]) continue;
    const submits = log.filter((entry) => entry.provider === provider && entry.method === "POST" && SUBMIT_PATHS[provider].test(entry.url.split("?")[0]!));
    const ours = jobs.filter((job) => job.provider === provider);
    for (const job of ours) {
      const own = submits.filter((entry) => submitIsFor(entry, job, subject.markerOf(job)));
      if (provider === "b") {
        const firstUnrefused = own.findIndex((entry) => !refused(entry));
        if (firstUnrefused < 0) continue;
        const key = own[firstUnrefused]!.headers["idempotency-key"];
        const later = own.slice(firstUnrefused).filter((entry) => entry.headers["idempotency-key"] !== key);
        if (later.length > 0) violations.push(`${job.ref}: B submit resent under another Idempotency-Key after one that may have been accepted`);
        continue;
      }
      const resentAfter = own.slice(0, -1).filter((entry) => !refused(entry));
      if (resentAfter.length > 0) {
        violations.push(
          `${job.ref}: submitted ${own.length} times to ${provider.toUpperCase()}, again after an answer that was not a refusal (${own.map((entry) => entry.fault ?? entry.statusCode ?? "no answer").join(", ")})`,
        );
      }
    }
    if (provider !== "b") {
      // Every submit that was not refused is one job's only send: one accepted, or one whose answer was lost. This also counts
      // the submits no job can be told from (a connection cut before the body was read, an F form); an adapter may count a
      // refusal as of unknown outcome (F's 502), so it is a bound.
      const unrefused = submits.filter((entry) => !refused(entry)).length;
      const expected = ours.filter((job) => job.providerJobId !== null || job.state === "unknown_submission").length;
      if (unrefused > expected) {
        violations.push(`${provider.toUpperCase()}: ${unrefused} submits not refused, for ${expected} jobs accepted or of unknown outcome`);
      }
    }
  }

  // Charges: one ledger row per job at most, equal to the job's charge and to what the provider charged.
  if (store instanceof KyselyStore) {
    const rows = await store.db.selectFrom("ledger").select(["job_id", "micro_usd"]).execute();
    const ledger = new Map<string, number[]>();
    for (const row of rows) ledger.set(row.job_id, [...(ledger.get(row.job_id) ?? []), Number(row.micro_usd)]);
    for (const job of jobs) {
      const entries = ledger.get(job.id) ?? [];
      if (entries.length > 1) violations.push(`${job.ref}: ${entries.length} ledger rows`);
      const charged = job.chargeState === "computed" || job.chargeState === "settled" ? job.chargeMicroUsd : null;
      if ((entries[0] ?? null) !== charged) violations.push(`${job.ref}: ledger ${entries[0] ?? "none"}, job charge ${charged ?? "none"} (${job.chargeState})`);
    }
  } else {
    violations.push("the ledger could not be read (not a Kysely store)");
  }
  for (const job of jobs) {
    if (job.providerJobId === null || job.chargeMicroUsd === null) continue;
    if (job.provider === "d" && emulators.d) {
      const atD = emulators.d.chargesMicroUsd[job.providerJobId];
      if (atD !== job.chargeMicroUsd) violations.push(`${job.ref}: charged ${job.chargeMicroUsd}, D charged ${atD}`);
    }
    if (job.provider === "b" && emulators.b && job.chargeState === "settled") {
      const atB = emulators.b.job(job.providerJobId)?.chargeMicroUsd;
      if (atB !== job.chargeMicroUsd) violations.push(`${job.ref}: settled at ${job.chargeMicroUsd}, B charged ${atB}`);
    }
  }

  // Limits, as the providers saw them. A task the engine does not know of (an unknown submission B accepted) may make a provider refuse for capacity.
  if (emulators.d) {
    if (emulators.d.peakActive > D_ACTIVE_LIMIT) violations.push(`D: ${emulators.d.peakActive} tasks active at once`);
    if (emulators.d.rejected429Count > 0 && !orphans.get("d")) violations.push(`D: ${emulators.d.rejected429Count} submits refused for too many active tasks`);
  }
  if (emulators.c) {
    const slots = subject.cSlots ?? 3;
    for (const [key, peak] of Object.entries(emulators.c.stats().peakConcurrency)) if (peak > slots) violations.push(`C: ${peak} slots held at once on ${key}`);
    const refusals = emulators.c.stats().concurrentLimitRejections;
    if (refusals > 0 && !orphans.get("c")) violations.push(`C: ${refusals} submits refused with 500044`);
  }
  if (emulators.e) {
    const quota = emulators.e.quota();
    if (quota.rejected > 0) violations.push(`E: ${quota.rejected} requests over the quota (429)`);
    for (const [organization, stats] of Object.entries(quota.perOrganization)) {
      if (stats.maxInMinute > E_PER_MINUTE) violations.push(`E: ${stats.maxInMinute} requests in one minute for ${organization}`);
    }
  }
  if (emulators.a) {
    const limits = emulators.a.rateLimits();
    if (limits.rejected > 0) violations.push(`A: ${limits.rejected} requests over the rate limit (429)`);
    for (const [key, stats] of Object.entries(limits.perKey)) if (stats.maxInWindow > A_PER_MINUTE) violations.push(`A: ${stats.maxInWindow} requests in one minute on ${key}`);
  }
  for (const pool of await store.poolStatus()) {
    const holders = jobs.filter((job) => job.slotsHeld.includes(pool.key)).length;
    if (pool.held !== holders) violations.push(`slot pool ${pool.key}: ${pool.held} held, ${holders} jobs hold it`);
    if (pool.held > pool.configuredCapacity) violations.push(`slot pool ${pool.key}: ${pool.held} held of ${pool.configuredCapacity}`);
  }

  // The budget.
  if (subject.budgetId) {
    const budget = await store.budget(subject.budgetId);
    if (!budget) violations.push(`budget ${subject.budgetId} is missing`);
    else {
      const under = jobs.filter((job) => job.budgetId === subject.budgetId);
      const charged = under.reduce((sum, job) => sum + (job.chargeMicroUsd ?? 0), 0);
      const held = under.reduce((sum, job) => sum + job.budgetHeldMicroUsd, 0);
      if (budget.committedMicroUsd > budget.ceilingMicroUsd) violations.push(`budget: ${budget.committedMicroUsd} committed of a ${budget.ceilingMicroUsd} ceiling`);
      if (charged > budget.ceilingMicroUsd) violations.push(`budget: ${charged} charged of a ${budget.ceilingMicroUsd} ceiling`);
      if (held !== budget.committedMicroUsd) violations.push(`budget: ${budget.committedMicroUsd} committed, its jobs hold ${held}`);
    }
  }

  // Files.
  const paths = new Map<string, string>();
  for (const job of jobs) {
    const outputs = await store.outputs(job.id);
    if (job.state === "succeeded" && outputs.length === 0) violations.push(`${job.ref}: succeeded with no output`);
    if (job.state !== "succeeded" && outputs.length > 0) violations.push(`${job.ref}: ${job.state} with ${outputs.length} outputs recorded`);
    for (const output of outputs) {
      const other = paths.get(output.path);
      if (other) violations.push(`${job.ref} and ${other} share ${output.path}`);
      paths.set(output.path, job.ref);
      if (!existsSync(output.path)) {
        violations.push(`${job.ref}: ${output.path} is missing`);
        continue;
      }
      const bytes = readFileSync(output.path);
      if (bytes.length !== output.bytes) violations.push(`${job.ref}: ${output.path} has ${bytes.length} bytes, ${output.bytes} recorded`);
      if (createHash("sha256").update(bytes).digest("hex") !== output.sha256) violations.push(`${job.ref}: ${output.path} does not match its sha256`);
      const tag = VIDEO_TAGS[job.provider];
      if (tag && job.providerJobId && !bytes.toString("latin1").endsWith(tag(job.providerJobId))) violations.push(`${job.ref}: ${output.path} is not ${job.providerJobId}'s video`);
    }
  }
  for (const folder of subject.outputDirs) {
    for (const path of filesUnder(folder)) if (path.includes(".tmp-")) violations.push(`temporary file left: ${path}`);
  }
  return violations;
}

import { existsSync, readFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { ConfigError, InputError } from "../core/errors.js";
import { isTerminal, type Job } from "../core/job.js";
import { newId } from "../core/ids.js";
import type { Estimate, JobRequest, ProviderAdapter, ValidatedRequest } from "../providers/adapter.js";
import type { ProviderEntry } from "../providers/registry.js";
import { checkBudget, type BudgetCheck } from "../engine/budget.js";
import type { Runtime } from "./runtime.js";

export interface PreparedJob {
  /** Where the job came from, for messages ("line 3", "--prompt"). */
  origin: string;
  ref: string;
  request: JobRequest;
  validated: ValidatedRequest;
  estimate: Estimate;
}

/** An input problem with where it came from ("line 3: width: must be a multiple of 16"). */
export class PreparedInputError extends InputError {
  constructor(origin: string, inner: InputError) {
    super(`${origin}: ${inner.field}`, inner.reason, inner.allowed);
  }
}

/** `--image` values: http(s) URLs are passed as given; anything else is a local file, read now. */
export function readImages(values: readonly string[]): JobRequest["images"] {
  return values.map((value) => {
    if (/^https?:\/\//i.test(value)) return value;
    const path = resolve(value);
    if (!existsSync(path)) throw new InputError("--image", `file ${value} does not exist`, "a local file path or an http(s) URL");
    return { fileName: basename(path), bytes: readFileSync(path) };
  });
}

export function entryFor(runtime: Runtime, provider: JobRequest["provider"]): ProviderEntry & { adapter: ProviderAdapter } {
  const entry = runtime.providers.get(provider);
  if (!entry?.adapter) {
    throw new InputError("provider", `provider ${provider.toUpperCase()} is not supported by this version of mediagate`, "d");
  }
  return entry as ProviderEntry & { adapter: ProviderAdapter };
}

/**
 * Validates and estimates one request. Providers whose rules live at the
 * provider (B's catalog) are read first, and a provider that quotes (B) is
 * asked for the estimate; nothing is submitted.
 */
export async function prepareJob(runtime: Runtime, origin: string, ref: string, request: JobRequest): Promise<PreparedJob> {
  const entry = entryFor(runtime, request.provider);
  const { adapter } = entry;
  if (adapter.prefetch && entry.missing.length > 0) {
    throw new ConfigError(entry.missing[0]!, `provider ${request.provider.toUpperCase()} checks requests against its catalog, so it must be configured first: set ${entry.missing.join(" and ")}`);
  }
  const context = entry.missing.length === 0 ? await (await runtime.engine()).providerContext(request.provider) : undefined;
  let validated: ValidatedRequest;
  try {
    if (adapter.prefetch && context) await adapter.prefetch(request, context);
    validated = adapter.validate(request);
  } catch (error) {
    if (error instanceof InputError) throw new PreparedInputError(origin, error);
    throw error;
  }
  const estimate = await adapter.estimate(validated, context);
  return { origin, ref, request, validated, estimate };
}

/** Refuses to queue for a provider that is not configured, naming the variables to set. */
export function requireConfigured(runtime: Runtime, jobs: readonly PreparedJob[]): void {
  for (const provider of new Set(jobs.map((job) => job.request.provider))) {
    const entry = entryFor(runtime, provider);
    if (entry.missing.length > 0) {
      throw new ConfigError(
        entry.missing[0]!,
        `provider ${provider.toUpperCase()} is not configured: set ${entry.missing.join(" and ")} (or run \`mediagate sandbox\` and use the lines it prints)`,
      );
    }
  }
}

function sameRequest(job: Job, prepared: PreparedJob): boolean {
  return (
    job.provider === prepared.validated.provider &&
    job.model === prepared.validated.model &&
    (job.operation ?? null) === (prepared.validated.operation ?? null) &&
    JSON.stringify(job.body) === JSON.stringify(prepared.validated.body)
  );
}

export interface EnqueueResult {
  jobs: Job[];
  created: number;
  resumed: number;
  budget: BudgetCheck;
}

/**
 * Stores the jobs (a ref that exists is resumed, not resubmitted), after the
 * configuration and budget checks: nothing is queued if any check fails.
 */
export async function enqueue(
  runtime: Runtime,
  prepared: readonly PreparedJob[],
  options: { batchId: string | null; outDir: string; allowUnpriced?: boolean },
): Promise<EnqueueResult> {
  const store = await runtime.store();
  const existing = new Map<string, Job>();
  for (const item of prepared) {
    const job = await store.findJob(item.ref);
    if (job && job.ref === item.ref) {
      if (!sameRequest(job, item)) {
        throw new InputError(
          `${item.origin}: ref`,
          `"${item.ref}" is already used by job ${job.id} with a different request; refs are unique in a store`,
          "a new ref, or the same request to resume it",
        );
      }
      existing.set(item.ref, job);
    }
  }
  const toSend = prepared.filter((item) => {
    const job = existing.get(item.ref);
    return !job || (job.state === "queued" && job.attempts === 0);
  });
  requireConfigured(runtime, toSend);
  const budget = checkBudget(
    toSend.map((item) => ({ label: item.ref, estimateMicroUsd: item.estimate.microUsd })),
    runtime.config.budgetMicroUsd,
    options.allowUnpriced ?? false,
  );
  const now = Date.now();
  const results = await store.insertJobs(
    prepared.map((item) => ({
      id: newId("job", now),
      ref: item.ref,
      batchId: options.batchId,
      provider: item.validated.provider,
      model: item.validated.model,
      operation: item.validated.operation,
      body: item.validated.body,
      facts: item.validated.facts,
      warnings: item.validated.warnings,
      estimateMicroUsd: item.estimate.microUsd,
      estimateSource: item.estimate.source,
      outDir: options.outDir,
    })),
    now,
  );
  return {
    jobs: results.map((result) => result.job),
    created: results.filter((result) => result.created).length,
    resumed: results.filter((result) => !result.created && !isTerminal(result.job.state)).length,
    budget,
  };
}

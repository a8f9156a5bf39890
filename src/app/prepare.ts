import { ConfigError, InputError } from "../core/errors.js";
import { checkInputValue } from "../core/input-value.js";
import type { Job } from "../core/job.js";
import type { JobTrace } from "../core/trace-context.js";
import { newId } from "../core/ids.js";
import type { Estimate, JobRequest, ProviderAdapter, ProviderId, ValidatedRequest } from "../providers/adapter.js";
import { jobRouteOf, planRoute, type EligibleTarget, type RoutedRequest, type RouteWorld, type TargetVerdict } from "../engine/route.js";
import type { ProviderEntry } from "../providers/registry.js";
import { defaultOutputs } from "../outputs/by-location.js";
import { outputFolderProblem, type OutputWriter } from "../outputs/local-folder.js";
import { deadlineOf } from "../core/deadline.js";
import { INPUT_FILES_FACT, inputFilesOf, type InputFile } from "./request-view.js";
import type { Runtime } from "./runtime.js";
import type { NewJob } from "../store/store.js";
import { Timings } from "./eta.js";
import { LOCAL_TENANT } from "../core/tenant.js";

export interface PreparedJob {
  /** Where the job came from, for messages ("line 3", "--prompt"). */
  origin: string;
  ref: string;
  /** What is stored and sent (the request as given is not kept: a batch holds every line's until it is queued). */
  validated: ValidatedRequest;
  estimate: Estimate;
  /** A common request's route: every eligible target in the order they are tried (the first is `validated`), and why the others are not. */
  route?: { order: EligibleTarget[]; verdicts: TargetVerdict[]; fallbackOnFailure: boolean };
  /** The local files the request carried, by name, type, size and sha256: kept with the job to show what was asked. */
  files?: InputFile[];
  /** How long after its admission the job stays wanted (`cancel_after_s`); absent or null: for ever. */
  cancelAfterS?: number | null;
}

/** An input problem with where it came from ("line 3: width: must be a multiple of 16"). */
export class PreparedInputError extends InputError {
  constructor(
    origin: string,
    /** The error as the request's own field names it (the API answers with this one). */
    readonly inner: InputError,
  ) {
    super(`${origin}: ${inner.field}`, inner.reason, inner.allowed);
  }
}

export function entryFor(runtime: Runtime, provider: JobRequest["provider"]): ProviderEntry & { adapter: ProviderAdapter } {
  const entry = runtime.providers.get(provider);
  if (!entry?.adapter) {
    throw new InputError("provider", `provider ${provider.toUpperCase()} is not supported by this version of mediagate`, "d");
  }
  return entry as ProviderEntry & { adapter: ProviderAdapter };
}

export interface PrepareOptions {
  /**
   * What one job may still commit under the caller's budget (null: no budget), for routing: a target whose estimate
   * is over it is not eligible. Default: the configuration's MEDIAGATE_BUDGET_USD, the ceiling of a command.
   */
  budgetLeftMicroUsd?: number | null;
  /** Whose job it will be (`route_by: "time"` counts the jobs ahead in its line); default the local operator. */
  tenant?: string;
  /**
   * Jobs this same call routed to each provider already (a batch's earlier
   * lines, not stored yet): `route_by: "time"` counts them ahead too, so a
   * batch spreads as the queues it fills grow. Updated by each routed job.
   */
  routedHere?: Map<ProviderId, number>;
}

/**
 * Validates and estimates one request. Providers whose rules live at the
 * provider (B's catalog) are read first, and a provider that quotes (B) is
 * asked for the estimate; nothing is submitted.
 */
export async function prepareJob(runtime: Runtime, origin: string, ref: string, request: JobRequest | RoutedRequest, options: PrepareOptions = {}): Promise<PreparedJob> {
  try {
    checkRequestValue(request);
  } catch (error) {
    if (error instanceof InputError) throw new PreparedInputError(origin, error);
    throw error;
  }
  if ("common" in request) return { ...(await prepareRouted(runtime, origin, ref, request, options)), files: inputFilesOf(request) };
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
  return { origin, ref, validated, estimate, files: inputFilesOf(request) };
}

/**
 * Every face's request held to the bounds its JSON text would be (the
 * library's and the AI SDK's are objects, never text) and its text to
 * well-formed Unicode, each field named as the request names it. A common
 * request's targets are checked where they are read (parseTarget).
 */
function checkRequestValue(request: JobRequest | RoutedRequest): void {
  if ("common" in request) {
    for (const [field, value] of Object.entries(request.common)) checkInputValue(value, field);
    return;
  }
  const { input, images, ...target } = request;
  for (const [field, value] of Object.entries(target)) checkInputValue(value, field);
  checkInputValue(input, "input");
  if (images !== undefined) checkInputValue(images, "images");
}

/** A common request's route as JSON (`quote --json`, the API's quote): the target chosen, those after it, and why any other cannot take it. */
export function routeJson(route: PreparedJob["route"]): { target?: string; route?: Array<{ target: string; estimate_micro_usd: number | null }>; ineligible?: Array<{ target: string; reasons: string[] }> } {
  if (!route) return {};
  return {
    target: route.order[0]!.target.name,
    route: route.order.map((entry) => ({ target: entry.target.name, estimate_micro_usd: entry.estimate.microUsd })),
    ineligible: route.verdicts.filter((verdict) => !verdict.eligible).map((verdict) => ({ target: verdict.target.name, reasons: verdict.reasons })),
  };
}

/** Where a prepared job is stored and whose it is: everything of its row that validation and estimation did not say. */
export interface NewJobPlace {
  now: number;
  batchId: string | null;
  outDir: string;
  budgetId: string | null;
  tokenId?: string | null;
  /** Whose job it is (default LOCAL_TENANT). */
  tenant?: string;
  notifyUrl?: string | null;
  /** Its place in a trace (`Runtime.jobTrace`): null or absent, not traced. */
  trace?: JobTrace | null;
}

/** The row a prepared job is stored as (the CLI, the library and the API store the same thing). */
export function newJobOf(item: Pick<PreparedJob, "ref" | "validated" | "estimate" | "route" | "files" | "cancelAfterS">, place: NewJobPlace): NewJob {
  // The request's files are named in the facts of every target it may go to (a fall-over takes the next target's facts).
  const files = item.files ?? [];
  const withFiles = (facts: Record<string, unknown>) => (files.length > 0 ? { ...facts, [INPUT_FILES_FACT]: files } : facts);
  const route = item.route ? jobRouteOf(item.route.order, item.route.fallbackOnFailure) : null;
  return {
    id: newId("job", place.now),
    ref: item.ref,
    batchId: place.batchId,
    provider: item.validated.provider,
    model: item.validated.model,
    operation: item.validated.operation,
    body: item.validated.body,
    facts: withFiles(item.validated.facts),
    warnings: item.validated.warnings,
    estimateMicroUsd: item.estimate.microUsd,
    estimateSource: item.estimate.source,
    outDir: place.outDir,
    budgetId: place.budgetId,
    route: route ? { ...route, next: route.next.map((step) => ({ ...step, facts: withFiles(step.facts) })) } : null,
    ...(place.tokenId !== undefined ? { tokenId: place.tokenId } : {}),
    ...(place.tenant !== undefined ? { tenant: place.tenant } : {}),
    ...(place.notifyUrl !== undefined ? { notifyUrl: place.notifyUrl } : {}),
    deadlineAt: deadlineOf(place.now, item.cancelAfterS),
    ...(place.trace ? { trace: place.trace } : {}),
  };
}

/**
 * How long routing trusts the halts it read: a batch of thousands of common requests reads them once, and a
 * long-lived server sees a halt (or its clearing) within a second.
 */
const HALTS_FRESH_MS = 1_000;

/** What routing reads of this runtime's world: halts (read at most once a second), provider contexts. */
const routeWorlds = new WeakMap<Runtime, RouteWorld>();

function routeWorldOf(runtime: Runtime): RouteWorld {
  let world = routeWorlds.get(runtime);
  if (world) return world;
  let halts: { read: Promise<ReadonlyMap<ProviderId, string>>; at: number } | null = null;
  world = {
    adapter: (provider) => {
      const entry = runtime.providers.get(provider);
      return { adapter: entry?.adapter ?? null, missing: entry?.missing ?? [] };
    },
    context: async (provider) => (await runtime.engine()).providerContext(provider),
    halted: () => {
      const now = Date.now();
      if (halts === null || now - halts.at >= HALTS_FRESH_MS) {
        halts = { read: runtime.store().then(async (store) => new Map((await store.halts()).map((halt) => [halt.provider, `${halt.code}: ${halt.message}`]))), at: now };
      }
      return halts.read;
    },
    budget: { leftMicroUsd: runtime.config.budgetMicroUsd ?? null, allowUnpriced: false },
  };
  routeWorlds.set(runtime, world);
  return world;
}

/**
 * A common request: every target of its route judged before anything is
 * sent (configured, able to honour each field, valid, not halted, within the
 * budget); the job goes to the first eligible one (or the cheapest, by
 * `route_by`), the others kept in order for a fallback.
 */
async function prepareRouted(runtime: Runtime, origin: string, ref: string, request: RoutedRequest, options: PrepareOptions): Promise<PreparedJob> {
  try {
    const world = routeWorldOf(runtime);
    const budgeted = options.budgetLeftMicroUsd !== undefined ? { ...world, budget: { leftMicroUsd: options.budgetLeftMicroUsd, allowUnpriced: false } } : world;
    const routedHere = options.routedHere ?? new Map<ProviderId, number>();
    const timed: RouteWorld =
      request.routeBy === "time"
        ? {
            ...budgeted,
            finishIfQueued: async (validated) =>
              new Timings(runtime, await runtime.store()).finishIfQueued(validated, options.tenant ?? LOCAL_TENANT, routedHere.get(validated.provider) ?? 0, Date.now()),
          }
        : budgeted;
    const { verdicts, order } = await planRoute(request.common, request.targets, request.routeBy, timed);
    const chosen = order[0]!;
    routedHere.set(chosen.validated.provider, (routedHere.get(chosen.validated.provider) ?? 0) + 1);
    return { origin, ref, validated: chosen.validated, estimate: chosen.estimate, route: { order, verdicts, fallbackOnFailure: request.fallbackOnFailure } };
  } catch (error) {
    if (error instanceof InputError) throw new PreparedInputError(origin, error);
    throw error;
  }
}

/** Refuses to queue for a provider that is not configured, naming the variables to set. */
export function requireConfigured(runtime: Runtime, jobs: readonly PreparedJob[]): void {
  for (const provider of new Set(jobs.map((job) => job.validated.provider))) {
    const entry = entryFor(runtime, provider);
    if (entry.missing.length > 0) {
      throw new ConfigError(
        entry.missing[0]!,
        `provider ${provider.toUpperCase()} is not configured: set ${entry.missing.join(" and ")} (or run \`mediagate sandbox\` and use the lines it prints)`,
      );
    }
  }
}

/**
 * Creates the output folder and proves it writable before anything is queued
 * or sent: a folder that fails only after the provider rendered (and
 * charged) would leave paid results with nowhere to go.
 */
export async function checkOutputFolder(folder: string, fromFlag: string | null, writer: OutputWriter = defaultOutputs): Promise<void> {
  const problem = await outputFolderProblem(folder, writer);
  if (!problem) return;
  const message = `${problem.message}; nothing was sent`;
  if (fromFlag) throw new InputError(fromFlag, message, "a folder this process can create and write, or an s3://bucket/prefix it can write in");
  throw new ConfigError("MEDIAGATE_OUTPUT_DIR", `MEDIAGATE_OUTPUT_DIR (or --output-dir): ${message}`);
}

function sameTarget(job: Job, validated: ValidatedRequest): boolean {
  return (
    job.provider === validated.provider &&
    job.model === validated.model &&
    (job.operation ?? null) === (validated.operation ?? null) &&
    JSON.stringify(job.body) === JSON.stringify(validated.body)
  );
}

/** A stored job is this request when it is what the request sends; for a common request, what it sends to any target of its route (routing may choose another one now: a halt, the budget). */
export function sameRequest(job: Job, prepared: Pick<PreparedJob, "validated" | "route">): boolean {
  if (!prepared.route) return sameTarget(job, prepared.validated);
  return prepared.route.verdicts.some((verdict) => verdict.validated !== null && sameTarget(job, verdict.validated));
}

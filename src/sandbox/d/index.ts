import type { FastifyInstance } from "fastify";
import type { ProviderEmulator, SandboxContext } from "../context.js";
import { countBy, peakConcurrency } from "../emulator-stats.js";
import type { DEndpointId } from "./endpoints.js";
import { isActiveAt, readyAtOrNull, statusAt, type DJobOutcome, type DJobRecord, type DJobStatus } from "./jobs.js";
import type { ImageSize } from "./megapixels.js";
import { resolveDOptions, type DEmulatorOptions, type DOutcomeRates, type DRenderTime, type DUnknownStatusRule } from "./options.js";
import { MICRO_USD_PER_CREDIT } from "./pricing.js";
import { D_RESULTS_PREFIX } from "./results.js";
import { registerPollingRoutes, registerResultRoutes, registerSubmitRoutes } from "./routes.js";
import { D_POLLING_PREFIX, DService } from "./service.js";

export type { DEmulatorOptions, DOutcomeRates, DRenderTime, DUnknownStatusRule } from "./options.js";
export { DEFAULT_D_API_KEY, D_CONCURRENCY_LIMIT, D_CONTEXT_EDITING_CONCURRENCY_LIMIT, SAMPLE_TTL_MS } from "./options.js";
export type { DEndpointId, DPricedEndpointId } from "./endpoints.js";
export { D_ENDPOINT_IDS } from "./endpoints.js";
export type { DJobOutcome, DJobStatus } from "./jobs.js";
export type { ImageSize } from "./megapixels.js";
export type { DRate } from "./pricing.js";
export { D_RATES, MICRO_USD_PER_CREDIT } from "./pricing.js";
export type { DErrorBody, DErrorCode } from "./errors.js";

/** What the sandbox knows about one accepted job, for tests and benchmarks (times are virtual ms). */
export interface DJobView {
  id: string;
  endpoint: DEndpointId;
  apiKey: string;
  /** The submit body as received, unknown fields included. */
  body: Record<string, unknown>;
  /** The size asked for, and the size generated, billed and served (reduced to 4 MP when larger). */
  requestedSize: ImageSize;
  outputSize: ImageSize;
  /** The seed the image is drawn from (given, or picked by the sandbox). */
  seed: number;
  referenceCount: number;
  /** The real state now; injected unknown statuses are what polls see, not this. */
  status: DJobStatus;
  createdAt: number;
  /** When rendering ends (planned at submit). */
  finishesAt: number;
  /** When the job became Ready; null while it renders and when it ended in Error or Failed. */
  readyAt: number | null;
  /** True while it counts against the concurrency limits. */
  active: boolean;
  chargeMicroUsd: number;
  polls: number;
  downloads: number;
}

export interface DEmulator extends ProviderEmulator {
  readonly id: "d";
  /** Every accepted job, in submit order, as of the current virtual time. */
  readonly jobs: DJobView[];
  job(id: string): DJobView | undefined;
  /** Submit requests that passed the key check, whatever their answer. */
  readonly submitCount: number;
  /** Submits refused with 429 (too many active tasks) and with 402 (credits). */
  readonly rejected429Count: number;
  readonly rejected402Count: number;
  /** The most tasks active at once on any one key. */
  readonly peakActive: number;
  /** Tasks active now on a key (default: the first configured key). */
  activeCount(apiKey?: string): number;
  /** The account's balance, micro-USD; settable (an integer). */
  balanceMicroUsd: number;
  /** What each accepted job was charged, by job id. */
  readonly chargesMicroUsd: Readonly<Record<string, number>>;
  /**
   * Changes the given options on the running emulator (the others keep their
   * value): knobs apply to jobs submitted from now on, `balanceMicroUsd` sets
   * the balance, `apiKeys` replaces the account's keys.
   */
  configure(changes: DEmulatorOptions): void;
  /** Render time of jobs submitted from now on. */
  setRenderTimeMs(renderTime: DRenderTime): void;
  /** Chances that jobs submitted from now on end in Error or Failed. */
  setOutcomeRates(rates: DOutcomeRates): void;
  /** The next `count` accepted jobs end in `outcome` when their render time is over (before any drawn outcome). */
  failNextJobs(outcome: Exclude<DJobOutcome, "Ready">, count?: number): void;
  /** The rule drawing unknown statuses for jobs submitted from now on; null turns it off. */
  setUnknownStatus(rule: DUnknownStatusRule | null): void;
  /** The next `jobCount` accepted jobs answer `status` to their first `polls` polls, then their real status. */
  injectUnknownStatus(status: string, polls: number, jobCount?: number): void;
}

/**
 * Emulator of image service D, under `/d` (client base URL `{sandbox}/d`),
 * polling under `/d-poll` on the sandbox's other host name, result images
 * under `/d-results`. Choices where the spec is silent: README.md here.
 */
export function createDEmulator(options: DEmulatorOptions = {}): DEmulator {
  const service = new DService(resolveDOptions(options));

  const view = (job: DJobRecord): DJobView => {
    const now = service.now() ?? job.createdAt;
    const { request } = job;
    return {
      id: job.id,
      endpoint: job.endpoint,
      apiKey: job.apiKey,
      body: request.body,
      requestedSize: request.requestedSize,
      outputSize: request.outputSize,
      seed: job.seed,
      referenceCount: request.references.length,
      status: statusAt(job, now),
      createdAt: job.createdAt,
      finishesAt: job.finishesAt,
      readyAt: readyAtOrNull(job, now),
      active: isActiveAt(job, now),
      chargeMicroUsd: job.chargeMicroUsd,
      polls: job.polls,
      downloads: job.downloads,
    };
  };

  return {
    id: "d",
    async register(app: FastifyInstance, context: SandboxContext) {
      const results = service.bind(context);
      await app.register(async (scope) => registerSubmitRoutes(scope, service), { prefix: "/d" });
      await app.register(async (scope) => registerPollingRoutes(scope, service), { prefix: D_POLLING_PREFIX });
      await app.register(async (scope) => registerResultRoutes(scope, results), { prefix: D_RESULTS_PREFIX });
    },
    sandboxStats() {
      const now = service.now() ?? 0;
      const jobs = [...service.jobs.values()];
      return {
        tasks: countBy(jobs, (job) => statusAt(job, now)),
        peakConcurrency: peakConcurrency(jobs.map((job) => ({ start: job.createdAt, end: job.finishesAt }))),
        limitRefusals: service.rejected429Count,
        // spec D bills in credits (1 credit = 0.01 USD); charges are per megapixel, so a balance may hold a fraction of one.
        creditsLeft: { amount: service.account.balanceMicroUsd / MICRO_USD_PER_CREDIT, unit: "credits" },
      };
    },
    reset: () => service.reset(),
    get jobs() {
      return [...service.jobs.values()].map(view);
    },
    job(id) {
      const job = service.jobs.get(id);
      return job ? view(job) : undefined;
    },
    get submitCount() {
      return service.submitCount;
    },
    get rejected429Count() {
      return service.rejected429Count;
    },
    get rejected402Count() {
      return service.rejected402Count;
    },
    get peakActive() {
      return service.account.peakActive;
    },
    activeCount(apiKey = service.options.apiKeys[0]!) {
      const now = service.now();
      return now === undefined ? 0 : service.account.active(apiKey, now).length;
    },
    get balanceMicroUsd() {
      return service.account.balanceMicroUsd;
    },
    set balanceMicroUsd(value: number) {
      service.account.balanceMicroUsd = value;
    },
    get chargesMicroUsd() {
      return Object.fromEntries([...service.jobs.values()].map((job) => [job.id, job.chargeMicroUsd]));
    },
    configure(changes) {
      service.configure(changes);
    },
    setRenderTimeMs(renderTime) {
      service.options.renderTimeMs = renderTime;
    },
    setOutcomeRates(rates) {
      service.options.outcomeRates = { errorRate: rates.errorRate ?? 0, failedRate: rates.failedRate ?? 0 };
    },
    failNextJobs(outcome, count = 1) {
      service.failNextJobs(outcome, count);
    },
    setUnknownStatus(rule) {
      service.options.unknownStatus = rule;
    },
    injectUnknownStatus(status, polls, jobCount = 1) {
      service.injectUnknownStatus(status, polls, jobCount);
    },
  };
}

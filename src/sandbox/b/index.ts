import type { FastifyInstance } from "fastify";
import type { ProviderEmulator, SandboxContext } from "../context.js";
import { countBy, peakConcurrency } from "../emulator-stats.js";
import { keyId } from "./auth.js";
import { B_CATALOG } from "./catalog-entries.js";
import { billingStateAt, chargeMicroUsd, isFinishedAt, settledAt, statusAt, type BBillingState, type BJobError, type BJobRecord, type BJobStatus } from "./jobs.js";
import type { BOperation } from "./operation.js";
import type { BEmulatorOptions } from "./options.js";
import { B_PREFIX, registerBRoutes } from "./routes.js";
import { BService } from "./service.js";
import { compileCatalogSchemas } from "./validation.js";
import type { BDelivery, BWebhookFaultKind } from "./webhooks.js";

export type { BEmulatorOptions, BRenderTime, BWebhookFaults } from "./options.js";
export { B_CONCURRENCY_LIMIT, DEFAULT_B_API_KEY, SANDBOX_B_WEBHOOK_SECRET, WEBHOOK_RETRY_DELAYS_MS } from "./options.js";
export type { BAvailability, BField, BFunction, BMediaType, BOperation, BPricing, BPricingUnit, BRate } from "./operation.js";
export { B_CATALOG, findOperation } from "./catalog-entries.js";
export { inputSchema } from "./catalog-record.js";
export type { BBillingState, BJobError, BJobStatus } from "./jobs.js";
export type { BDelivery, BDeliveryAttempt, BDeliveryState, BWebhookFaultKind } from "./webhooks.js";
export type { BErrorBody, BErrorCode } from "./errors.js";
export { renderWav, wavInfo } from "./wav.js";
export { MAX_SPAN_DAYS } from "./spend.js";

/** What the sandbox knows about one job, for tests and benchmarks (times are virtual ms). */
export interface BJobView {
  id: string;
  apiKey: string;
  apiId: string;
  /** The body as received minus webhook_url (free-text and URL fields removed after DELETE). */
  body: Record<string, unknown>;
  /** The real state now. */
  status: BJobStatus;
  idempotencyKey: string | null;
  webhookUrl: string | null;
  createdAt: number;
  /** When it starts running (planned at submit). */
  startsAt: number;
  /** When it completes or fails (planned at submit). */
  finishesAt: number;
  /** finishesAt once that time has passed, else null. */
  finishedAt: number | null;
  /** Refused at submit (bad body, unavailable operation, insufficient balance). */
  rejectedAtSubmit: boolean;
  error: BJobError | null;
  /** null while unfinished. */
  billingState: BBillingState | null;
  /** What it costs if it completes. */
  priceMicroUsd: number;
  /** The final charge once settled (0 for a failed job), else null. */
  chargeMicroUsd: number | null;
  settledAt: number | null;
  deletedAt: number | null;
  /** GET reads of the job. */
  reads: number;
}

export interface BEmulator extends ProviderEmulator {
  readonly id: "b";
  /** Every job created (accepted or refused at submit), in submit order. */
  readonly jobs: BJobView[];
  job(id: string): BJobView | undefined;
  /** Submit requests that passed the key check, whatever their answer. */
  readonly submitCount: number;
  /** Submits answered 429. */
  readonly rejected429Count: number;
  /** Charges settled so far, micro-USD, by API key (every configured key listed). */
  readonly settledChargesByKey: Readonly<Record<string, number>>;
  /** The account's balance now, micro-USD (settled charges taken); settable. */
  balanceMicroUsd: number;
  /** Unfinished jobs of a key (default: the first configured key). */
  activeCount(apiKey?: string): number;
  /** Every webhook delivery, in the order planned. */
  readonly deliveries: readonly BDelivery[];
  readonly webhookSecret: string;
  readonly catalog: readonly BOperation[];
  /** The name a key has in spend reads. */
  keyId(apiKey: string): string;
  /** Changes options on the running emulator; knobs apply to jobs submitted from now on, `balanceMicroUsd` sets the balance. */
  configure(changes: BEmulatorOptions): void;
  /** The next `count` accepted jobs fail when their render time is over (default error generation_failed). */
  failNextJobs(count?: number, error?: BJobError): void;
  /** The next `count` webhook messages get this fault (`delay` adds `delayMs` virtual ms). */
  injectWebhookFault(kind: BWebhookFaultKind, count?: number, delayMs?: number): void;
  /** Runs every webhook attempt due by now (virtual time) and waits for the answers. */
  flushWebhooks(): Promise<void>;
}

/**
 * Emulator of media service B under `/b` (client base URL `{sandbox}/b`),
 * written from the spec only. Choices where the spec says "not shown":
 * README.md here.
 */
export function createBEmulator(options: BEmulatorOptions = {}): BEmulator {
  compileCatalogSchemas();
  const service = new BService(options);

  const view = (job: BJobRecord): BJobView => {
    const now = service.now();
    const billingState = billingStateAt(job, now);
    const settled = billingState === "settled";
    return {
      id: job.id,
      apiKey: job.apiKey,
      apiId: job.operation.apiId,
      body: { ...job.body },
      status: statusAt(job, now),
      idempotencyKey: job.idempotencyKey,
      webhookUrl: job.webhookUrl,
      createdAt: job.createdAt,
      startsAt: job.startsAt,
      finishesAt: job.finishesAt,
      finishedAt: isFinishedAt(job, now) ? job.finishesAt : null,
      rejectedAtSubmit: job.rejectedAtSubmit,
      error: job.outcome.kind === "failed" ? { ...job.outcome.error } : null,
      billingState,
      priceMicroUsd: job.priceMicroUsd,
      chargeMicroUsd: settled ? chargeMicroUsd(job) : null,
      settledAt: settled ? settledAt(job) : null,
      deletedAt: job.deletedAt,
      reads: job.reads,
    };
  };

  return {
    id: "b",
    async register(app: FastifyInstance, context: SandboxContext) {
      service.bind(context);
      await app.register(async (scope) => registerBRoutes(scope, service), { prefix: B_PREFIX });
    },
    async close() {
      await service.close();
    },
    sandboxStats() {
      const now = service.now();
      const jobs = [...service.jobs.values()];
      const accepted = jobs.filter((job) => !job.rejectedAtSubmit);
      return {
        tasks: countBy(jobs, (job) => statusAt(job, now)),
        peakConcurrency: peakConcurrency(accepted.map((job) => ({ start: job.createdAt, end: job.finishesAt }))),
        limitRefusals: service.rejected429Count,
        creditsLeft: { amount: service.balanceMicroUsd(), unit: "micro_usd" },
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
    get settledChargesByKey() {
      return service.settledChargesByKey();
    },
    get balanceMicroUsd() {
      return service.balanceMicroUsd();
    },
    set balanceMicroUsd(value: number) {
      service.setBalance(value);
    },
    activeCount(apiKey = service.options.apiKeys[0]!) {
      return service.activeJobs(apiKey, service.now()).length;
    },
    get deliveries() {
      return service.webhooks?.all() ?? [];
    },
    get webhookSecret() {
      return service.options.webhookSecret;
    },
    catalog: B_CATALOG,
    keyId,
    configure(changes) {
      service.configure(changes);
    },
    failNextJobs(count = 1, error = { code: "generation_failed", message: "the generation failed upstream" }) {
      service.failNextJobs(count, error);
    },
    injectWebhookFault(kind, count = 1, delayMs = 0) {
      if (!service.webhooks) throw new Error("the B emulator is not registered with a sandbox yet");
      service.webhooks.injectFault(kind, count, delayMs);
    },
    async flushWebhooks() {
      await service.webhooks?.flush();
    },
  };
}

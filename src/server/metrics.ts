import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Counter, Gauge } from "prom-client";
import { JOB_STATES } from "../core/job.js";
import type { ProviderCounters, StepTiming } from "../engine/context.js";
import type { Engine } from "../engine/engine.js";
import type { EngineLogger } from "../engine/logger.js";
import { PROVIDER_IDS, type ProviderId } from "../providers/adapter.js";
import type { PoolStatus, Store } from "../store/store.js";
import { ApiError } from "./api/errors.js";
import { tokenOfSecret } from "../app/tokens.js";

/**
 * A count by label values that code outside the server keeps for `/metrics`.
 * Plain numbers, no prom-client: the engine's processes load this file too,
 * and prom-client is only loaded by a server that serves `/metrics`.
 */
export class LabelledCount<Label extends string> {
  private readonly counts = new Map<string, { labels: Record<Label, string>; value: number }>();

  inc(labels: Record<Label, string>, by = 1): void {
    const key = JSON.stringify(Object.entries(labels).sort(([left], [right]) => (left < right ? -1 : 1)));
    const entry = this.counts.get(key);
    if (entry) entry.value += by;
    else this.counts.set(key, { labels: { ...labels }, value: by });
  }

  entries(): Array<{ labels: Record<Label, string>; value: number }> {
    return [...this.counts.values()];
  }
}

/**
 * Counts of this process that other code increments and `/metrics` reports.
 * `notificationsOut`: one per notification attempt, by its result, a word
 * from a fixed few (`delivered`, `failed`, `given_up`): the notifier calls
 * `metrics.notificationsOut.inc({ result: "delivered" })`. Reported as
 * `mediagate_notifications_total{result}`.
 */
export const metrics = {
  notificationsOut: new LabelledCount<"result">(),
};

/** What a webhook request came to: answered (see `receiveWebhook`) or refused (see `WebhookRefusals`). */
export type WebhookOutcome = "applied" | "duplicate" | "unmatched" | "rejected" | "throttled";

export interface MetricsDeps {
  store: Store;
  /** The engine object of the server (webhooks' provider calls); its counters cover every provider request of the process. */
  engine: Engine;
  log: EngineLogger;
}

export interface ServerMetrics {
  webhookDelivery(provider: string, outcome: WebhookOutcome): void;
}

/** Provider calls last from tens of milliseconds (a poll) to minutes (a video's download). */
const STEP_BUCKETS_S = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * Serves `/metrics` in Prometheus' text format from a registry of its own
 * (never prom-client's global one). Store-wide values (jobs by state, slots,
 * halts, the ledger) are read from the store at each scrape; engine values
 * are this process's. When the store holds any API token, a scrape needs an
 * admin token, as the API does; without one it is open (serve then listens
 * on loopback only). `engine` is the engine this server runs, whose steps
 * are timed; null for none (`serve --no-engine`).
 */
export async function registerMetrics(app: FastifyInstance, deps: MetricsDeps, engine: Engine | null): Promise<ServerMetrics> {
  // Loaded here, not at import: prom-client takes a noticeable time to load, and only `serve` needs it.
  const client = await import("prom-client");
  const registry = new client.Registry();
  const registers = [registry];

  new client.Gauge({
    name: "mediagate_jobs",
    help: "Jobs in the store by provider and state (one aggregate over an index at each scrape)",
    labelNames: ["provider", "state"],
    registers,
    async collect(this: Gauge<"provider" | "state">) {
      const counts = await deps.store.jobCounts();
      this.reset();
      for (const provider of PROVIDER_IDS) for (const state of JOB_STATES) this.set({ provider, state }, 0);
      for (const count of counts) this.set({ provider: count.provider, state: count.state }, count.count);
    },
  });

  const engineCounter = (name: string, help: string, read: (counters: ProviderCounters) => number) =>
    new client.Counter({
      name,
      help,
      labelNames: ["provider"],
      registers,
      collect(this: Counter<"provider">) {
        const stats = deps.engine.stats();
        this.reset();
        for (const provider of PROVIDER_IDS) {
          const counters = stats[provider];
          this.inc({ provider }, counters ? read(counters) : 0);
        }
      },
    });
  engineCounter("mediagate_provider_requests_total", "HTTP requests this process sent to the provider", (counters) => counters.requests);
  engineCounter("mediagate_provider_http_429_total", "Provider answers with HTTP 429 (too many requests) to this process", (counters) => counters.status429);
  engineCounter("mediagate_provider_backpressure_total", "Submits the provider pushed back for capacity (429, 500044, …); the job waits for a slot", (counters) => counters.backpressure);

  const steps = new client.Histogram({
    name: "mediagate_provider_step_duration_seconds",
    help: "Provider calls of this process's engine: a submit, a poll, one output's download (capture), from the call to its answer, a wait for a rate token included",
    labelNames: ["provider", "step", "outcome"],
    buckets: STEP_BUCKETS_S,
    registers,
  });
  if (engine) {
    const onStep = (timing: StepTiming) => steps.observe({ provider: timing.provider, step: timing.step, outcome: timing.outcome }, timing.ms / 1000);
    engine.on("step", onStep);
    app.addHook("onClose", async () => {
      engine.off("step", onStep);
    });
  }

  const slotGauge = (name: string, help: string, read: (pool: PoolStatus) => number) =>
    new client.Gauge({
      name,
      help,
      labelNames: ["provider", "pool"],
      registers,
      async collect(this: Gauge<"provider" | "pool">) {
        const pools = await deps.store.poolStatus();
        this.reset();
        for (const pool of pools) this.set({ provider: pool.key.split(":")[0]!, pool: pool.key }, read(pool));
      },
    });
  slotGauge("mediagate_slots_in_use", "Provider slots held by jobs now, every process on the store", (pool) => pool.held);
  slotGauge("mediagate_slots_capacity", "Provider slots that may be held: the published cap, or less where the provider pushed back", (pool) => Math.min(pool.configuredCapacity, pool.learnedCapacity));

  new client.Gauge({
    name: "mediagate_provider_halted",
    help: "1 while the provider is halted (no credits, a refused key): no engine sends it a job",
    labelNames: ["provider"],
    registers,
    async collect(this: Gauge<"provider">) {
      const halted = new Set((await deps.store.halts()).map((halt) => halt.provider));
      this.reset();
      for (const provider of PROVIDER_IDS) this.set({ provider }, halted.has(provider) ? 1 : 0);
    },
  });

  new client.Gauge({
    name: "mediagate_ledger_micro_usd",
    help: "Charges in the ledger by provider, integer micro-USD (computed or settled; every process on the store), read at each scrape",
    labelNames: ["provider"],
    registers,
    async collect(this: Gauge<"provider">) {
      const totals = await Promise.all(PROVIDER_IDS.map(async (provider) => [provider, await deps.store.ledgerTotal({ provider })] as const));
      this.reset();
      for (const [provider, total] of totals) this.set({ provider }, total);
    },
  });

  const deliveries = new client.Counter({
    name: "mediagate_webhook_deliveries_total",
    help: "Webhook requests received by outcome: applied, duplicate, unmatched (verified), rejected, throttled (refused)",
    labelNames: ["provider", "outcome"],
    registers,
  });

  new client.Counter({
    name: "mediagate_notifications_total",
    help: "Notification attempts of this process by result",
    labelNames: ["result"],
    registers,
    collect(this: Counter<"result">) {
      this.reset();
      for (const entry of metrics.notificationsOut.entries()) this.inc(entry.labels, entry.value);
    },
  });

  app.get("/metrics", async (request, reply) => {
    const refusal = await scrapeRefusal(deps.store, request);
    if (refusal) return reply.code(refusal.status).send(refusal.body);
    let text: string;
    try {
      text = await registry.metrics();
    } catch (error) {
      deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, "a /metrics scrape could not read the store");
      return reply.code(503).send({ error: { code: "store_unavailable", message: "the store did not answer; the metrics read from it are not available" } });
    }
    return reply.header("content-type", registry.contentType).header("cache-control", "no-store").send(text);
  });

  return {
    webhookDelivery(provider, outcome) {
      deliveries.inc({ provider: PROVIDER_IDS.includes(provider as ProviderId) ? provider : "unknown", outcome });
    },
  };
}

/** Why a scrape is refused: with tokens in the store, only an admin token may read the metrics (the API's rule for every job). */
async function scrapeRefusal(store: Store, request: FastifyRequest): Promise<{ status: number; body: object } | null> {
  if (!(await store.hasActiveTokens())) return null;
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header);
  if (!match) return unauthorized("send an admin API token as Authorization: Bearer mg_… (`mediagate token create NAME --admin`)");
  const found = await tokenOfSecret(store, match[1]!);
  if ("refused" in found) return unauthorized(found.refused);
  if (!found.token.admin) {
    const error = new ApiError("admin_token_required", `token ${found.token.name} is not an admin token: the metrics cover every job`);
    return { status: error.status, body: error.body() };
  }
  return null;
}

function unauthorized(message: string): { status: number; body: object } {
  const error = new ApiError("unauthorized", message);
  return { status: error.status, body: error.body() };
}

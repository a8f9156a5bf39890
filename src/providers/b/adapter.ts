import { z } from "zod";
import { Webhook } from "standardwebhooks";
import { ConfigError, ProviderError } from "../../core/errors.js";
import type {
  CallContext,
  Charge,
  Estimate,
  JobRequest,
  ProviderAdapter,
  ProviderLimits,
  ProviderStatus,
  Settlement,
  Submitted,
  ValidatedRequest,
  WebhookDelivery,
  WebhookVerdict,
} from "../adapter.js";
import type { ProviderHttp } from "../http.js";
import { createBAccount, type BAccount } from "./account.js";
import { apiIdOf, apiIdOfValidated } from "./api-id.js";
import { BCatalogCache } from "./catalog.js";
import { B_COMMON_CAPABILITIES, bFromCommon } from "./common.js";
import { bEndpoints, keyHeaders } from "./endpoints.js";
import { invalidAnswer, readErrorFrom, submitErrorFrom } from "./errors.js";
import { parseJob, type BJob } from "./job-object.js";
import { statusOfJob, type BContent } from "./job-status.js";
import { quoteAmountOf, UNPRICED_WITHOUT_QUOTE } from "./quote.js";
import { PendingReads, settlementOf } from "./settlement.js";
import { validateBRequest } from "./validate.js";
import { BWebhookError, verifyBWebhook, type BWebhookEvent } from "./webhook.js";

export interface BAdapterConfig {
  /** MEDIAGATE_B_BASE_URL: `{b_base_url}`; submits go to `{baseUrl}/v1/media/{api_id}`. */
  baseUrl: string;
  /** MEDIAGATE_B_API_KEY, sent as X-API-Key. */
  apiKey: string;
  /** MEDIAGATE_B_WEBHOOK_SECRET (`whsec_…`). Without it no webhook_url is sent: deliveries could not be verified. */
  webhookSecret?: string;
  /** How long a catalog record or list is used before it is read again. Default 10 minutes. */
  catalogTtlMs?: number;
  /** Jobs in flight at once. B's concurrency ceiling is not shown: default 4, and the engine re-learns it from 429s. */
  concurrency?: number;
  /** Give up tracking a job after this long. spec B: "overall timeout … chosen by the client". Default 60 minutes. */
  trackingDeadlineMs?: number;
}

/** B's adapter, plus what the CLI needs beside jobs. */
export interface BAdapter extends ProviderAdapter {
  readonly id: "b";
  /** The catalog records `prefetch` reads and `validate` uses, kept `catalogTtlMs`. */
  readonly catalog: BCatalogCache;
  /** Account operations (catalog, balance, spend, delete) over the given HTTP client. */
  account(http: ProviderHttp, signal?: AbortSignal): BAccount;
}

const MINUTE = 60_000;
const DEFAULT_CATALOG_TTL_MS = 10 * MINUTE;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_TRACKING_DEADLINE_MS = 60 * MINUTE;
/** spec B: "Polling interval … chosen by the client". Video renders take seconds to minutes; with webhooks the engine polls only as a fallback. */
const POLL_PACE = { minIntervalMs: 2_000, maxIntervalMs: 30_000 };

/** spec B Content response: `url`. */
const ContentAnswer = z.object({ url: z.string().refine((url) => URL.canParse(url), "not an absolute URL") });

function checkConfig(config: BAdapterConfig): void {
  if (config.catalogTtlMs !== undefined && !(config.catalogTtlMs >= 0)) {
    throw new ConfigError("catalogTtlMs", `B's catalog TTL must be zero or more milliseconds, got ${config.catalogTtlMs}`);
  }
  if (config.concurrency !== undefined && !(Number.isSafeInteger(config.concurrency) && config.concurrency > 0)) {
    throw new ConfigError("concurrency", `B's concurrency must be a positive integer, got ${config.concurrency}`);
  }
  if (config.trackingDeadlineMs !== undefined && !(config.trackingDeadlineMs > 0)) {
    throw new ConfigError("trackingDeadlineMs", `B's tracking deadline must be positive, got ${config.trackingDeadlineMs}`);
  }
  if (config.webhookSecret !== undefined) {
    try {
      new Webhook(config.webhookSecret);
    } catch {
      throw new ConfigError("MEDIAGATE_B_WEBHOOK_SECRET", "MEDIAGATE_B_WEBHOOK_SECRET must be a Standard Webhooks secret: whsec_ followed by base64");
    }
  }
}

/**
 * Provider B: a catalog of operations, each an asynchronous job. Every
 * field, enum and cap comes from the operation's catalog record; the submit
 * carries an Idempotency-Key; the charge is settled after the job ends.
 */
export function createBAdapter(config: BAdapterConfig): BAdapter {
  checkConfig(config);
  const endpoints = bEndpoints(config.baseUrl);
  const catalog = new BCatalogCache(endpoints, config.catalogTtlMs ?? DEFAULT_CATALOG_TTL_MS);
  const pendingReads = new PendingReads();
  const slots = { key: "b:account", capacity: config.concurrency ?? DEFAULT_CONCURRENCY };
  const trackingDeadlineMs = config.trackingDeadlineMs ?? DEFAULT_TRACKING_DEADLINE_MS;
  const secret = config.webhookSecret;
  const headers = () => keyHeaders(config.apiKey);

  function jobIdOf(submitted: Submitted): string {
    const handleId = submitted.handles.id;
    const id = submitted.providerJobId || (typeof handleId === "string" ? handleId : "");
    if (!id) throw new ProviderError("invalid_handle", "B job has no stored request id to read", { provider: "b", retryable: false });
    return id;
  }

  async function readJob(context: CallContext, jobId: string): Promise<{ job: BJob; raw: unknown }> {
    const response = await context.http.request({ method: "GET", url: endpoints.job(jobId), headers: headers(), retry: "idempotent" }, context.signal);
    if (response.status !== 200) throw readErrorFrom(context.http, response, `the read of job ${jobId}`);
    const raw = response.json();
    const job = parseJob(raw);
    if (!job) throw invalidAnswer(context.http, response, `job ${jobId} without an id and a status`);
    return { job, raw };
  }

  async function readContent(context: CallContext, jobId: string): Promise<BContent> {
    const response = await context.http.request({ method: "GET", url: endpoints.content(jobId), headers: headers(), retry: "idempotent" }, context.signal);
    if (response.status === 409) return { kind: "not_ready", raw: response.text() };
    if (response.status !== 200) throw readErrorFrom(context.http, response, `the content read of job ${jobId}`);
    const raw = response.json();
    const answer = ContentAnswer.safeParse(raw);
    if (!answer.success) throw invalidAnswer(context.http, response, `the content of job ${jobId} without a url`);
    return { kind: "ready", url: answer.data.url, raw };
  }

  async function verify(delivery: WebhookDelivery, context: CallContext): Promise<WebhookVerdict> {
    let event: BWebhookEvent;
    try {
      event = verifyBWebhook(delivery.rawBody, delivery.headers, secret!, { nowMs: context.clock.now() });
    } catch (error) {
      if (!(error instanceof BWebhookError)) throw error;
      // Signed by B but not JSON: answered 2xx so B stops retrying; the engine reads the job itself.
      if (error.code === "invalid_payload" && error.deliveryId) return { kind: "accepted", deliveryId: error.deliveryId, providerJobId: null };
      return { kind: "rejected", code: error.code, reason: `${error.code}: ${error.message}` };
    }
    // spec B Events 4: event kinds are not shown; a payload that is not a job object is accepted and only nudges a read.
    if (!event.job) return { kind: "accepted", deliveryId: event.deliveryId, providerJobId: null };
    const job = event.job;
    let status: ProviderStatus | undefined;
    try {
      // The same reading as a poll: a completed job's address comes from the content call. Its billing is null, so settle reads the job.
      status = await statusOfJob(job, event.payload, () => readContent(context, job.id));
    } catch {
      status = undefined; // the content read failed: without a status the engine reads the job at once
    }
    return { kind: "accepted", deliveryId: event.deliveryId, providerJobId: job.id, ...(status ? { status } : {}) };
  }

  return {
    id: "b",
    displayName: "B (catalog of video and audio operations, settled billing)",
    catalog,
    models: () => catalog.knownApiIds(),
    modelNaming: "an operation of B's catalog, vendor/model with --operation; list them with `mediagate catalog`",

    async prefetch(request: JobRequest, context: CallContext): Promise<void> {
      let apiId: string;
      try {
        apiId = apiIdOf(request);
      } catch {
        return; // a malformed model or operation: validate reports it
      }
      await catalog.load(apiId, context);
    },

    // Pure like validate: reads the record prefetch cached for the target, and throws when it was not prefetched.
    fromCommon: (request, target) => bFromCommon(request, target, (apiId) => catalog.cached(apiId)),
    commonCapabilities: () => B_COMMON_CAPABILITIES,

    validate: (request: JobRequest): ValidatedRequest => validateBRequest(request, (apiId) => catalog.cached(apiId)),

    async estimate(request: ValidatedRequest, context?: CallContext): Promise<Estimate> {
      if (!context) return UNPRICED_WITHOUT_QUOTE;
      const apiId = apiIdOfValidated(request);
      // spec B rule 3: quotes are never charged and execute nothing, so resending one is safe. No key is shown to be needed; sending it to B's own host is harmless.
      const response = await context.http.request(
        { method: "POST", url: endpoints.quote(apiId), headers: headers(), body: request.body, retry: "idempotent" },
        context.signal,
      );
      if (response.status !== 200) throw readErrorFrom(context.http, response, `the quote of ${apiId}`);
      const raw = response.json();
      const amount = quoteAmountOf(raw);
      if (!amount) {
        return { microUsd: null, source: `unpriced: B's quote of ${apiId} has no single integer …_micro_usd amount (its shape is not shown): ${context.http.redact(JSON.stringify(raw)).slice(0, 200)}` };
      }
      // spec B Errors: a quote is a budget ceiling; it knows nothing of balance or allowance, and the settled charge is the accounting fact.
      return { microUsd: amount.microUsd, source: `B quote of ${apiId} (${amount.field}); a ceiling, the settled charge is the accounting fact` };
    },

    limits: (): ProviderLimits => ({
      // spec B Limits: "the rate and concurrency ceilings behind 429 … not shown". No rate window; a conservative slot pool, re-learned from 429s.
      rateWindows: [],
      slotPools: [slots],
      poll: POLL_PACE,
      trackingDeadlineMs,
      // spec B Idempotency: the same body with the same key returns the existing job.
      idempotentSubmit: true,
    }),

    async submit(request: ValidatedRequest, context: CallContext): Promise<Submitted> {
      const idempotencyKey = context.job?.idempotencyKey;
      if (!idempotencyKey) {
        // A submit without a stored key could create a second job when resent after a crash: never sent.
        throw new ProviderError("idempotency_key_missing", "a B submit needs the job's Idempotency-Key, stored before sending; nothing was sent", { provider: "b", retryable: false });
      }
      const apiId = apiIdOfValidated(request);
      // spec B Events 1: webhook_url at the top level of the body; only requested when deliveries can be verified.
      const callbackUrl = secret !== undefined ? (context.job?.callbackUrl ?? null) : null;
      const body = callbackUrl !== null ? { ...request.body, webhook_url: callbackUrl } : request.body;
      const response = await context.http.request(
        { method: "POST", url: endpoints.media(apiId), headers: { ...headers(), "Idempotency-Key": idempotencyKey }, body, retry: "none" },
        context.signal,
      );
      let job: BJob | null = null;
      if (response.status >= 200 && response.status < 300) {
        try {
          job = parseJob(response.json());
        } catch {
          job = null; // not JSON: submitErrorFrom says what that means
        }
      }
      if (!job || job.status === "failed") throw submitErrorFrom(context.http, response, apiId, callbackUrl !== null);
      return { providerJobId: job.id, handles: { id: job.id, status: job.status, apiId } };
    },

    async poll(submitted: Submitted, context: CallContext): Promise<ProviderStatus> {
      const jobId = jobIdOf(submitted);
      const { job, raw } = await readJob(context, jobId).catch((error: unknown) => {
        // A 404 on the read of a job B accepted: B does not know it (any more).
        if (error instanceof ProviderError && error.code === "not_found") {
          throw new ProviderError("task_not_found", error.message, { ...error.detail, taskUnknown: true }, { cause: error });
        }
        throw error;
      });
      return statusOfJob(job, raw, () => readContent(context, jobId));
    },

    // No cancel: spec B shows no cancel operation (DELETE erases a job's media and prompts; it does not stop a job).

    ...(secret !== undefined ? { webhooks: { verify } } : {}),

    async settle(submitted: Submitted, _outcome: ProviderStatus, context: CallContext): Promise<Settlement> {
      const jobId = jobIdOf(submitted);
      // Always the job's own billing: the outcome of a poll or a webhook carries none worth recording (null on deliveries).
      const { job, raw } = await readJob(context, jobId);
      return settlementOf(job, raw, pendingReads);
    },

    charge: (): Charge => ({ microUsd: null, source: "B settles the charge after the job ends: recorded by settle from billing.charge_micro_usd once settled" }),

    account: (http: ProviderHttp, signal?: AbortSignal) => createBAccount({ baseUrl: config.baseUrl, apiKey: config.apiKey, http, ...(signal ? { signal } : {}) }),
  };
}

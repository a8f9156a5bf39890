import { z } from "zod";
import { ConfigError, ProviderError } from "../../core/errors.js";
import type { CallContext, Charge, Estimate, JobRequest, ProviderAdapter, ProviderLimits, ProviderStatus, Submitted, ValidatedRequest } from "../adapter.js";
import { pollErrorFrom, submitErrorFrom } from "./errors.js";
import { D_ENDPOINTS } from "./models.js";
import { pollStatusFrom } from "./poll-status.js";
import { chargeD, D_PRICE_VIEWS, estimateD, type DPriceView } from "./pricing.js";
import { dCommonCapabilities, dFromCommon } from "./common.js";
import { validateDRequest } from "./schema.js";

export interface DAdapterConfig {
  /** MEDIAGATE_D_BASE_URL; submits go to `{baseUrl}/v1/{endpoint}`. */
  baseUrl: string;
  apiKey: string;
  /** MEDIAGATE_D_PRICE_VIEW: which of D's two official price views estimates use (default the pricing page). */
  priceView?: DPriceView;
  /** MEDIAGATE_D_CONCURRENCY: the account's concurrent tasks when it differs from the published 24 (an arranged limit, a private deployment). */
  concurrency?: number;
  /** Give up tracking a job after this long. Default 30 minutes (D publishes no render time or result retention). */
  trackingDeadlineMs?: number;
}

const DEFAULT_TRACKING_DEADLINE_MS = 30 * 60_000;
/** D publishes no poll pace; ask often enough to fetch a ten-minute signed result in time, no more than four times a second. */
const POLL_PACE = { minIntervalMs: 250, maxIntervalMs: 5_000 };
/** spec D Limits "Concurrent tasks": 24 per account; the older context-editing endpoint 6. */
const ACCOUNT_CONCURRENCY = 24;
const CONTEXT_EDITING_CONCURRENCY = 6;

/** spec D submit response: `id` and `polling_url`, stored exactly as given. */
const SubmitAnswer = z.object({ id: z.string().min(1), polling_url: z.string().refine((url) => URL.canParse(url), "not an absolute URL") });
const DHandles = z.object({ id: z.string().min(1), polling_url: z.string().min(1) });

function checkConfig(config: DAdapterConfig): void {
  if (config.priceView !== undefined && !D_PRICE_VIEWS.includes(config.priceView)) {
    throw new ConfigError("MEDIAGATE_D_PRICE_VIEW", `D's price view must be ${D_PRICE_VIEWS.join(" or ")}, got "${String(config.priceView)}"`);
  }
  if (config.concurrency !== undefined && !(Number.isSafeInteger(config.concurrency) && config.concurrency > 0)) {
    throw new ConfigError("MEDIAGATE_D_CONCURRENCY", `D's concurrency must be a positive whole number of tasks, got ${config.concurrency}`);
  }
  if (config.trackingDeadlineMs !== undefined && !(config.trackingDeadlineMs > 0)) {
    throw new ConfigError("trackingDeadlineMs", `D's tracking deadline must be positive, got ${config.trackingDeadlineMs}`);
  }
}

/** Provider D: one POST per job, then GET the returned `polling_url` until Ready; priced per megapixel. */
export function createDAdapter(config: DAdapterConfig): ProviderAdapter {
  checkConfig(config);
  const base = config.baseUrl.replace(/\/+$/, "");
  const priceView = config.priceView ?? "pricing-page";
  const trackingDeadlineMs = config.trackingDeadlineMs ?? DEFAULT_TRACKING_DEADLINE_MS;
  const accountSlots = { key: "d:account", capacity: config.concurrency ?? ACCOUNT_CONCURRENCY };
  const contextEditingSlots = { key: "d:gen-ctx-max", capacity: Math.min(CONTEXT_EDITING_CONCURRENCY, accountSlots.capacity) };
  // spec D Authentication 1: `x-key: <API_KEY>` on every call; it is not a bearer token.
  const headers = () => ({ "x-key": config.apiKey });

  return {
    id: "d",
    displayName: "D (images, per megapixel)",
    models: () => [...D_ENDPOINTS],

    fromCommon: (request, target) => dFromCommon(request, target.model),
    commonCapabilities: (model) => dCommonCapabilities(model),

    validate: (request: JobRequest): ValidatedRequest => validateDRequest(request),

    estimate: async (request: ValidatedRequest): Promise<Estimate> => estimateD(request, priceView),

    limits: (request: ValidatedRequest): ProviderLimits => ({
      // D publishes no request rate.
      rateWindows: [],
      // A gen-ctx-max job counts in its own pool of 6 and in the account's 24 (the conservative reading).
      slotPools: request.model === "gen-ctx-max" ? [accountSlots, contextEditingSlots] : [accountSlots],
      poll: POLL_PACE,
      trackingDeadlineMs,
      idempotentSubmit: false,
    }),

    async submit(request: ValidatedRequest, context: CallContext): Promise<Submitted> {
      // The endpoint comes from our own table; encoded anyway so that no value can open another path segment.
      const url = `${base}/v1/${encodeURIComponent(request.model)}`;
      const response = await context.http.request({ method: "POST", url, headers: headers(), body: request.body, retry: "none" }, context.signal);
      if (response.status < 200 || response.status >= 300) throw submitErrorFrom(context.http, response, request.model);
      let body: unknown;
      try {
        body = response.json();
      } catch {
        body = undefined; // not JSON: reported below with what it means for the job
      }
      const answer = SubmitAnswer.safeParse(body);
      if (!answer.success) {
        throw context.http.errorFrom(
          response,
          "invalid_response",
          `D accepted the submit to ${request.model} (HTTP ${response.status}) but its answer has no usable id and polling_url; a job may exist at D, so it is not resent`,
        );
      }
      const { id, polling_url } = answer.data;
      return { providerJobId: id, handles: { id, polling_url } };
    },

    async poll(submitted: Submitted, context: CallContext): Promise<ProviderStatus> {
      const handles = DHandles.safeParse(submitted.handles);
      if (!handles.success) {
        throw new ProviderError("invalid_handle", `D job ${submitted.providerJobId} has no stored id and polling_url to poll`, { provider: "d", retryable: false });
      }
      // spec D Endpoints: the polling_url is used as given; it may name another host, so it passes the URL-safety check first.
      const response = await context.http.request(
        { method: "GET", url: handles.data.polling_url, headers: headers(), retry: "idempotent", untrustedUrl: true },
        context.signal,
      );
      if (response.status < 200 || response.status >= 300) throw pollErrorFrom(context.http, response, handles.data.id);
      return pollStatusFrom(context.http, response, handles.data.id);
    },

    // No cancel: spec D shows no cancel operation.

    charge: (request: ValidatedRequest, outcome: ProviderStatus): Charge => chargeD(request, outcome, priceView),
  };
}

import { createHash } from "node:crypto";
import { z } from "zod";
import { ConfigError, OutcomeUnknownError, ProviderError } from "../../core/errors.js";
import { displayUrl } from "../../core/redact.js";
import type {
  CallContext,
  Charge,
  Estimate,
  JobRequest,
  ProviderAdapter,
  ProviderLimits,
  ProviderStatus,
  Submitted,
  ValidatedRequest,
  WebhookDelivery,
  WebhookVerdict,
} from "../adapter.js";
import { A_COMMON_CAPABILITIES, aFromCommon } from "./common.js";
import { errorFromAnswer } from "./errors.js";
import { DEFAULT_NEWEST_GENERATION, parseGeneration } from "./models.js";
import { aEndpoints, type APlan } from "./paths.js";
import { chargeA, estimateA } from "./pricing.js";
import { validateARequest } from "./schema.js";
import { A_LOOKUP_WINDOW_MS, ATaskId, CreateAnswer } from "./task-id.js";
import { taskStatusFrom } from "./task-status.js";
import { resolveWireNames, type AWireNames } from "./wire-names.js";

export interface AAdapterConfig {
  /** MEDIAGATE_A_BASE_URL, without /api/…: the base path is chosen by `enterprise`. */
  baseUrl: string;
  apiKey: string;
  /** MEDIAGATE_A_ENTERPRISE: the key is an enterprise key, used on /api/plan/v3. */
  enterprise: boolean;
  /** Sent as `callback_url` on every task (built from MEDIAGATE_PUBLIC_URL); a callback only nudges a read. */
  callbackUrl?: string | null;
  /** Price of one token in micro-USD (may be fractional); without it A jobs are unpriced. */
  microUsdPerToken?: number | null;
  /** Give up tracking after this long; never beyond A's 7-day lookup window. Default 24 h. */
  trackingDeadlineMs?: number;
  /** The newest model generation, "major.minor" (default "2.0"): it alone gets the newest generation's limits. */
  newestGeneration?: string;
  /** Model identifiers listed for help and quotes (the spec names none). */
  models?: string[];
  /** Wire names the spec does not show (video/audio item types, container field, task kind values). */
  wireNames?: Partial<AWireNames>;
}

/** spec A Limits: requests per minute, polls included. */
const REQUESTS_PER_MINUTE: Record<APlan, number> = { standard: 180, enterprise: 600 };
const DEFAULT_TRACKING_DEADLINE_MS = 24 * 3_600_000;
/** A publishes no poll pace; reads count against the per-minute limit, so keep them sparse. */
const POLL_PACE = { minIntervalMs: 5_000, maxIntervalMs: 30_000 };

const AHandles = z.object({
  submitted_at: z.number().optional(),
  plan: z.enum(["standard", "enterprise"]).optional(),
});

function checkConfig(config: AAdapterConfig): void {
  if (config.microUsdPerToken != null && !(Number.isFinite(config.microUsdPerToken) && config.microUsdPerToken >= 0)) {
    throw new ConfigError("microUsdPerToken", `A's per-token rate must be a non-negative number, got ${config.microUsdPerToken}`);
  }
  if (config.trackingDeadlineMs !== undefined && !(config.trackingDeadlineMs > 0)) {
    throw new ConfigError("trackingDeadlineMs", `A's tracking deadline must be positive, got ${config.trackingDeadlineMs}`);
  }
  if (config.callbackUrl) {
    let protocol: string;
    try {
      protocol = new URL(config.callbackUrl).protocol;
    } catch {
      protocol = "";
    }
    if (protocol !== "https:" && protocol !== "http:") throw new ConfigError("MEDIAGATE_PUBLIC_URL", `A's callback_url must be an http(s) URL, got "${displayUrl(config.callbackUrl)}"`);
  }
}

/** Provider A: typed content items, a task id `cgt-…`, Bearer auth, two base paths by plan, tokens for billing. */
export function createAAdapter(config: AAdapterConfig): ProviderAdapter {
  checkConfig(config);
  const plan: APlan = config.enterprise ? "enterprise" : "standard";
  const endpoints = aEndpoints(config.baseUrl, plan);
  const names = resolveWireNames(config.wireNames);
  const newestText = config.newestGeneration ?? DEFAULT_NEWEST_GENERATION;
  const newestGeneration = parseGeneration(newestText);
  if (!newestGeneration) throw new ConfigError("newestGeneration", `A's newest generation must read "major.minor", got "${newestText}"`);
  const microUsdPerToken = config.microUsdPerToken ?? null;
  // spec A Limits: the lookup window is 7 days, so tracking never outlives it.
  const trackingDeadlineMs = Math.min(config.trackingDeadlineMs ?? DEFAULT_TRACKING_DEADLINE_MS, A_LOOKUP_WINDOW_MS);
  const settings = { names, newestGeneration, callbackUrl: config.callbackUrl ?? null };

  // spec A Authentication: every call carries the Bearer key and Content-Type: application/json.
  const headers = () => ({ authorization: `Bearer ${config.apiKey}`, "content-type": "application/json" });

  return {
    id: "a",
    displayName: "A (video tasks)",
    models: () => [...(config.models ?? [])],
    modelNaming: "an identifier encoding the generation and a snapshot date, e.g. vidgen-2-0-250601 (A's spec publishes no list)",

    fromCommon: (request, target) => aFromCommon(request, target.model, target.operation),
    commonCapabilities: () => A_COMMON_CAPABILITIES,

    validate: (request: JobRequest): ValidatedRequest => validateARequest(request, settings),

    estimate: async (): Promise<Estimate> => estimateA(microUsdPerToken),

    limits: (): ProviderLimits => ({
      rateWindows: [{ key: `a:${plan}`, limit: REQUESTS_PER_MINUTE[plan], windowMs: 60_000 }],
      slotPools: [],
      poll: POLL_PACE,
      trackingDeadlineMs,
      idempotentSubmit: false,
    }),

    async submit(request: ValidatedRequest, context: CallContext): Promise<Submitted> {
      // The engine's per-job callback (from MEDIAGATE_PUBLIC_URL) wins over one fixed in the configuration.
      const callbackUrl = context.job?.callbackUrl ?? null;
      const body = callbackUrl ? { ...request.body, callback_url: callbackUrl } : request.body;
      const response = await context.http.request({ method: "POST", url: endpoints.tasks, headers: headers(), body, retry: "none" }, context.signal);
      if (response.status < 200 || response.status >= 300) throw errorFromAnswer(context.http, response, "create");
      let answer: unknown;
      try {
        answer = response.json();
      } catch {
        answer = undefined;
      }
      const created = CreateAnswer.safeParse(answer);
      if (!created.success) {
        // Accepted, but with no usable id: a task may exist and bill; never resend on our own.
        throw new OutcomeUnknownError("a", `A accepted the create (HTTP ${response.status}) but answered no task id starting with cgt-: ${context.http.redact(response.text().slice(0, 200))}`);
      }
      const id = created.data.id;
      return { providerJobId: id, handles: { task_id: id, plan, submitted_at: context.clock.now() } };
    },

    async poll(submitted: Submitted, context: CallContext): Promise<ProviderStatus> {
      const id = ATaskId.safeParse(submitted.providerJobId);
      if (!id.success) {
        throw new ProviderError("invalid_task_id", `A task ids start with cgt-; "${submitted.providerJobId}" cannot be read`, { provider: "a", retryable: false });
      }
      const handles = AHandles.safeParse(submitted.handles);
      const submittedPlan = handles.success ? handles.data.plan : undefined;
      if (submittedPlan !== undefined && submittedPlan !== plan) {
        // spec A Authentication: a key and a base path of different plans are never mixed.
        throw new ProviderError("plan_changed", `task ${id.data} was created on A's ${submittedPlan} plan; the configuration now uses the ${plan} plan, whose key cannot read it`, { provider: "a", retryable: false });
      }
      const response = await context.http.request({ method: "GET", url: endpoints.task(id.data), headers: headers(), retry: "idempotent" }, context.signal);
      if (response.status === 404) {
        const submittedAt = handles.success ? handles.data.submitted_at : undefined;
        if (submittedAt !== undefined && context.clock.now() - submittedAt >= A_LOOKUP_WINDOW_MS) {
          // spec A: a task older than 7 days no longer exists; its answer is gone for good.
          return {
            kind: "failed",
            providerStatus: "not found",
            code: "task_expired_from_lookup",
            message: `task ${id.data} is older than A's 7-day lookup window and can no longer be read`,
            raw: { httpStatus: 404, body: context.http.redact(response.text().slice(0, 2_000)) },
          };
        }
      }
      if (response.status < 200 || response.status >= 300) throw errorFromAnswer(context.http, response, "read");
      return taskStatusFrom(context.http, response, id.data);
    },

    // No cancel: spec A "The cancel operation (method and path): not shown".

    // spec A: the callback's format is not published, so a delivery is only a nudge to read the task
    // now; its body is never parsed or trusted. The route's job id says which job to read.
    webhooks: {
      verify: async (delivery: WebhookDelivery): Promise<WebhookVerdict> => {
        if (!delivery.jobId) return { kind: "rejected", code: "missing_job_id", reason: "an A callback must arrive on /webhooks/a/{jobId}" };
        const digest = createHash("sha256").update(delivery.rawBody).digest("hex").slice(0, 32);
        return { kind: "accepted", deliveryId: `${delivery.jobId}:${digest}`, providerJobId: null };
      },
    },

    charge: (_request: ValidatedRequest, outcome: ProviderStatus): Charge => chargeA(outcome, microUsdPerToken),
  };
}

import { z } from "zod";
import { ConfigError, InputError, OutcomeUnknownError, ProviderError } from "../../core/errors.js";
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
import { F_COMMON_CAPABILITIES, fFromCommon } from "./common.js";
import { pollErrorFrom, submitErrorFrom } from "./errors.js";
import { readGeneration } from "./generation-status.js";
import { chargeF, estimateF } from "./pricing.js";
import { validateFRequest, type FValidationSettings } from "./schema.js";
import { checkWebhookUrl, type ResolveHost } from "./webhook-url.js";
import {
  createFWebhookVerifier,
  DEFAULT_F_JWKS_REFRESH_COOLDOWN_MS,
  DEFAULT_F_WEBHOOK_TOLERANCE_MS,
  FWebhookVerificationError,
  parseVerifiedBody,
} from "./webhook-verifier.js";

export interface FAdapterConfig {
  /** MEDIAGATE_F_BASE_URL ({f_base_url}); paths under it start with /v1/. */
  baseUrl: string;
  /** MEDIAGATE_F_API_KEY, sent as `Api-Key`. */
  apiKey: string;
  /** Largest accepted age (and lead) of a delivery's timestamp. Default 5 minutes (F publishes none). */
  webhookToleranceMs?: number;
  /** Model slugs to accept and list (the spec names none). Empty or absent: any well-formed slug, none listed. */
  models?: readonly string[];
  /** Models on which FLASH is known to work. Default none: spec F says FLASH returns 400 on "this model version" without naming it. */
  flashAllowedModels?: readonly string[];
  /** The rendering_speed values to accept. Absent: any value, with a warning (F shows only FLASH). */
  renderingSpeeds?: readonly string[];
  /** Requests per minute, polls included. Default 60 (F publishes no rate limit). */
  requestsPerMinute?: number;
  /** Generations in flight at once. Default 8 (F publishes no concurrency limit). */
  concurrency?: number;
  /** Give up tracking a generation after this long. Default 30 minutes (F publishes no render time). */
  trackingDeadlineMs?: number;
  /** Least time between two refreshes of the key set after a failed signature. Default 30 s. */
  jwksRefreshCooldownMs?: number;
  /** Resolver for the webhook_url check (tests); default the system resolver. */
  resolveHost?: ResolveHost;
}

/** spec F Limits: no rate limit is published; one request a second on average is a conservative start (the engine adapts on 429). */
const DEFAULT_REQUESTS_PER_MINUTE = 60;
/** spec F Limits: no concurrency limit is published; a small pool keeps a batch from flooding an unknown limit. */
const DEFAULT_CONCURRENCY = 8;
const DEFAULT_TRACKING_DEADLINE_MS = 30 * 60_000;
/** F publishes no render time or poll pace; image links expire (lifetime not shown), so a ready result is noticed within seconds. */
const POLL_PACE = { minIntervalMs: 1_000, maxIntervalMs: 10_000 };

/** spec F submit response: `generation_id` (URL-safe base64). */
const SubmitAnswer = z.object({ generation_id: z.string().min(1) });
const FHandles = z.object({ generation_id: z.string().min(1) });

function checkConfig(config: FAdapterConfig): void {
  const positive: Array<[keyof FAdapterConfig, number | undefined]> = [
    ["webhookToleranceMs", config.webhookToleranceMs],
    ["trackingDeadlineMs", config.trackingDeadlineMs],
    ["requestsPerMinute", config.requestsPerMinute],
    ["concurrency", config.concurrency],
  ];
  for (const [name, value] of positive) {
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) throw new ConfigError(name, `F's ${name} must be a positive number, got ${value}`);
  }
  if (config.jwksRefreshCooldownMs !== undefined && !(config.jwksRefreshCooldownMs >= 0)) {
    throw new ConfigError("jwksRefreshCooldownMs", `F's jwksRefreshCooldownMs must not be negative, got ${config.jwksRefreshCooldownMs}`);
  }
}

/** The form fields to send, as validation built them (`ValidatedRequest.body` is stored with the job and read back). */
function formOf(body: Record<string, unknown>): FormData {
  const form = new FormData();
  for (const [field, value] of Object.entries(body)) {
    if (typeof value !== "string") throw new InputError(field, "the stored request holds a value that is not form text; validate the job again");
    form.append(field, value);
  }
  return form;
}

/** Provider F: multipart generate with a per-request webhook, reads by generation id, Ed25519-signed deliveries. */
export function createFAdapter(config: FAdapterConfig): ProviderAdapter {
  checkConfig(config);
  const base = config.baseUrl.replace(/\/+$/, "");
  const jwksUrl = `${base}/v1/.well-known/jwks.json`;
  const settings: FValidationSettings = {
    models: config.models ?? [],
    flashAllowedModels: config.flashAllowedModels ?? [],
    renderingSpeeds: config.renderingSpeeds ?? [],
  };
  const limits: ProviderLimits = {
    rateWindows: [{ key: "f:account", limit: config.requestsPerMinute ?? DEFAULT_REQUESTS_PER_MINUTE, windowMs: 60_000 }],
    slotPools: [{ key: "f:account", capacity: config.concurrency ?? DEFAULT_CONCURRENCY }],
    poll: POLL_PACE,
    trackingDeadlineMs: config.trackingDeadlineMs ?? DEFAULT_TRACKING_DEADLINE_MS,
    // spec F shows no idempotency key: a lost submit answer is never resent automatically.
    idempotentSubmit: false,
  };
  // spec F Authentication: `Api-Key: <API_KEY>` on every request.
  const headers = () => ({ "api-key": config.apiKey });
  const verifier = createFWebhookVerifier({
    jwks: jwksUrl,
    toleranceMs: config.webhookToleranceMs ?? DEFAULT_F_WEBHOOK_TOLERANCE_MS,
    refreshCooldownMs: config.jwksRefreshCooldownMs ?? DEFAULT_F_JWKS_REFRESH_COOLDOWN_MS,
  });

  /** spec F Endpoints: GET {f_base_url}/v1/.well-known/jwks.json, through the provider's HTTP path (rate token, redaction). */
  const loadJwks = async (context: CallContext): Promise<unknown> => {
    const response = await context.http.request({ method: "GET", url: jwksUrl, headers: headers(), retry: "idempotent" }, context.signal);
    if (response.status < 200 || response.status >= 300) throw new Error(`GET ${jwksUrl} answered HTTP ${response.status}`);
    return response.json();
  };

  async function verify(delivery: WebhookDelivery, context: CallContext): Promise<WebhookVerdict> {
    let signed;
    try {
      signed = await verifier.verifySignature(delivery.rawBody, delivery.headers, { jwks: () => loadJwks(context), now: () => context.clock.now() });
    } catch (error) {
      if (error instanceof FWebhookVerificationError) return { kind: "rejected", code: error.reason, reason: error.message };
      return { kind: "rejected", code: "verification_failed", reason: `F delivery could not be verified: ${error instanceof Error ? error.message : String(error)}` };
    }
    // spec F delivery body: the header, not the body, names the generation (the pages disagree on the body's key).
    const generationId = signed.generationId;
    const accepted = { kind: "accepted" as const, deliveryId: generationId, providerJobId: generationId };
    let payload: unknown;
    try {
      payload = parseVerifiedBody(signed.rawBody);
    } catch {
      // Authentic but unreadable: no status is claimed, so the engine reads the generation at once.
      return accepted;
    }
    const reading = readGeneration(payload, generationId);
    // Signed, so trusted: the status is the one a read would give.
    return reading.kind === "status" ? { ...accepted, status: reading.status } : accepted;
  }

  return {
    id: "f",
    displayName: "F (images, signed webhooks)",
    models: () => [...settings.models],
    modelNaming: "an F model slug (family and major version) as F's documentation names it, e.g. img-v2 (F's spec publishes no list)",

    fromCommon: (request, target) => fFromCommon(request, target),
    commonCapabilities: () => F_COMMON_CAPABILITIES,

    validate: (request: JobRequest): ValidatedRequest => validateFRequest(request, settings),

    estimate: async (): Promise<Estimate> => estimateF(),

    limits: (): ProviderLimits => ({ ...limits, rateWindows: [...limits.rateWindows], slotPools: [...limits.slotPools] }),

    async submit(request: ValidatedRequest, context: CallContext): Promise<Submitted> {
      const form = formOf(request.body);
      const callbackUrl = context.job?.callbackUrl ?? null;
      // spec F request: webhook_url is a query parameter, checked here before anything is sent. Without one, the job is polled.
      if (callbackUrl !== null) await checkWebhookUrl(callbackUrl, context.http.urlPolicy, config.resolveHost);
      const query = callbackUrl !== null ? `?${new URLSearchParams({ webhook_url: callbackUrl }).toString()}` : "";
      // The slug passed validation; encoded anyway so that no value can open another path segment.
      const url = `${base}/v1/${encodeURIComponent(request.model)}/async/generate${query}`;
      const response = await context.http.request({ method: "POST", url, headers: headers(), body: form, retry: "none" }, context.signal);
      if (response.status < 200 || response.status >= 300) throw submitErrorFrom(context.http, response, request.model);
      let body: unknown;
      try {
        body = response.json();
      } catch {
        body = undefined; // not JSON: reported below
      }
      const answer = SubmitAnswer.safeParse(body);
      if (!answer.success) {
        // A generation may exist (and be billed): the job becomes an unknown submission, never resent on its own.
        throw new OutcomeUnknownError(
          "f",
          context.http.redact(`F accepted the generate request (HTTP ${response.status}) but its answer has no generation_id: ${response.text().slice(0, 200)}`),
        );
      }
      const generationId = answer.data.generation_id;
      return { providerJobId: generationId, handles: { generation_id: generationId, webhook_url: callbackUrl } };
    },

    async poll(submitted: Submitted, context: CallContext): Promise<ProviderStatus> {
      const handles = FHandles.safeParse(submitted.handles);
      if (!handles.success) {
        throw new ProviderError("invalid_handle", `F job ${submitted.providerJobId} has no stored generation_id to read`, { provider: "f", retryable: false });
      }
      const generationId = handles.data.generation_id;
      // spec F Endpoints: GET {f_base_url}/v1/generations/{generation_id}; the id is encoded so it stays one path segment.
      const url = `${base}/v1/generations/${encodeURIComponent(generationId)}`;
      const response = await context.http.request({ method: "GET", url, headers: headers(), retry: "idempotent" }, context.signal);
      if (response.status < 200 || response.status >= 300) throw pollErrorFrom(context.http, response, generationId);
      let raw: unknown;
      try {
        raw = response.json();
      } catch {
        throw context.http.errorFrom(response, "invalid_response", `F answered the read of generation ${generationId} with something that is not JSON`, { retryable: true });
      }
      const reading = readGeneration(raw, generationId);
      if (reading.kind === "unreadable") {
        throw context.http.errorFrom(response, "invalid_response", `F answered the read of generation ${generationId}: ${reading.reason}`, { retryable: true });
      }
      return reading.status;
    },

    // No cancel: spec F shows no cancel operation.

    webhooks: { verify },

    charge: (_request: ValidatedRequest, outcome: ProviderStatus): Charge => chargeF(outcome),
  };
}

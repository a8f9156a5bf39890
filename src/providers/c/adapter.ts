import { z } from "zod";
import { ConfigError, OutcomeUnknownError, ProviderError } from "../../core/errors.js";
import type { CallContext, Charge, Estimate, JobRequest, ProviderAdapter, ProviderLimits, ProviderStatus, Submitted, ValidatedRequest } from "../adapter.js";
import type { HttpResponse, ProviderHttp } from "../http.js";
import { C_COMMON_CAPABILITIES, cFromCommon } from "./common.js";
import { decodeEnvelope, ResultResp, SubmitResp, type CEnvelope } from "./envelope.js";
import { errorFromEnvelope } from "./error-codes.js";
import { cHeaders, cTraceHeader } from "./headers.js";
import { chargeC, estimateC } from "./pricing.js";
import { resultStatusOf } from "./result-status.js";
import { validateCRequest } from "./schema.js";
import { slotsOfTier, type CTier } from "./tiers.js";

export interface CAdapterConfig {
  /** MEDIAGATE_C_BASE_URL; the paths /openapi/v2/… are added. */
  baseUrl: string;
  apiKey: string;
  /** MEDIAGATE_C_TIER: sets the account's concurrency (3/15/20/25). */
  tier: CTier;
  /** Give up tracking after this long. Default 1 h (typical render time is not shown). */
  trackingDeadlineMs?: number;
  /** Randomness of the 500069 jitter (tests fix it). */
  random?: () => number;
}

const SUBMIT_PATH = "/openapi/v2/video/text/generate";
const RESULT_PATH = "/openapi/v2/video/result";
const DEFAULT_TRACKING_DEADLINE_MS = 3_600_000;
/** spec C: "Polling every 3 to 5 seconds is the recommended pace." */
const POLL_PACE = { minIntervalMs: 3_000, maxIntervalMs: 5_000 };

const CHandles = z.object({ submitted_at: z.number().optional() });

function isSuccessStatus(status: number): boolean {
  return status >= 200 && status < 300;
}

/** An answer that is not an envelope: with 2xx on a submit the task may exist, so its outcome is unknown. */
function notAnEnvelope(http: ProviderHttp, response: HttpResponse, action: "submit" | "result"): Error {
  const what = `C answered the ${action} with HTTP ${response.status} and no {ErrCode, ErrMsg, Resp} envelope`;
  if (action === "submit" && isSuccessStatus(response.status)) {
    return new OutcomeUnknownError("c", `${what}: ${http.redact(response.text().slice(0, 200))}`);
  }
  const retryable = response.status === 429 || response.status === 408 || response.status >= 500;
  return http.errorFrom(response, retryable ? "provider_unavailable" : "invalid_response", what, { retryable });
}

/** Provider C: text-to-video behind an ErrCode envelope, with a per-tier ceiling on generating tasks. */
export function createCAdapter(config: CAdapterConfig): ProviderAdapter {
  const capacity = slotsOfTier(config.tier);
  if (config.trackingDeadlineMs !== undefined && !(config.trackingDeadlineMs > 0)) {
    throw new ConfigError("trackingDeadlineMs", `C's tracking deadline must be positive, got ${config.trackingDeadlineMs}`);
  }
  const base = config.baseUrl.replace(/\/+$/, "");
  const random = config.random ?? Math.random;

  const envelopeOf = (http: ProviderHttp, response: HttpResponse, action: "submit" | "result"): CEnvelope => {
    // spec C: the envelope is decoded for every answer, whatever the HTTP status.
    const envelope = decodeEnvelope(response.text());
    if (!envelope) throw notAnEnvelope(http, response, action);
    if (envelope.ErrCode !== 0) throw errorFromEnvelope(http, response, envelope, random);
    return envelope;
  };

  return {
    id: "c",
    displayName: "C (text to video)",
    models: () => ["v6"],

    fromCommon: (request, target) => cFromCommon(request, target.model, target.operation),
    commonCapabilities: () => C_COMMON_CAPABILITIES,

    validate: (request: JobRequest): ValidatedRequest => validateCRequest(request),

    estimate: async (): Promise<Estimate> => estimateC(),

    limits: (): ProviderLimits => ({
      rateWindows: [],
      // spec C Limits: one pool per account, sized by tier; a slot is held from submit until the task leaves status 5.
      slotPools: [{ key: "c:account", capacity }],
      poll: POLL_PACE,
      trackingDeadlineMs: config.trackingDeadlineMs ?? DEFAULT_TRACKING_DEADLINE_MS,
      idempotentSubmit: false,
    }),

    async submit(request: ValidatedRequest, context: CallContext): Promise<Submitted> {
      const response = await context.http.request(
        { method: "POST", url: `${base}${SUBMIT_PATH}`, headers: cHeaders(config.apiKey, true), body: request.body, retry: "none" },
        context.signal,
      );
      const envelope = envelopeOf(context.http, response, "submit");
      const resp = SubmitResp.safeParse(envelope.Resp);
      if (!resp.success) {
        throw new OutcomeUnknownError("c", `C accepted the submit (ErrCode 0) but Resp has no video_id: ${context.http.redact(response.text().slice(0, 200))}`);
      }
      const videoId = resp.data.video_id;
      // Taken after the answer, so it is never earlier than the provider's own start: the ten-minute release is never assumed early.
      return { providerJobId: videoId, handles: { video_id: videoId, submitted_at: context.clock.now() } };
    },

    async poll(submitted: Submitted, context: CallContext): Promise<ProviderStatus> {
      // A read may be resent inline (5xx, lost connection); each attempt gets its own Ai-trace-id.
      const response = await context.http.request(
        {
          method: "GET",
          url: `${base}${RESULT_PATH}/${encodeURIComponent(submitted.providerJobId)}`,
          headers: cHeaders(config.apiKey, false),
          attemptHeaders: cTraceHeader,
          retry: "idempotent",
        },
        context.signal,
      );
      let envelope;
      try {
        envelope = envelopeOf(context.http, response, "result");
      } catch (error) {
        // Not shown by the spec: a 404 on the read of a video C accepted says C does not know it (the sandbox's choice
        // for an unknown video_id, ErrCode 400013). Ended after a bounded time by the engine, not at the first answer.
        if (response.status === 404 && error instanceof ProviderError) {
          throw new ProviderError("task_not_found", error.message, { ...error.detail, taskUnknown: true }, { cause: error });
        }
        throw error;
      }
      const resp = ResultResp.safeParse(envelope.Resp);
      if (!resp.success) {
        throw context.http.errorFrom(response, "invalid_response", `C answered the result of ${submitted.providerJobId} without an integer Resp.status`, { retryable: true });
      }
      const handles = CHandles.safeParse(submitted.handles);
      const submittedAt = handles.success ? handles.data.submitted_at : undefined;
      const heldForMs = submittedAt === undefined ? null : context.clock.now() - submittedAt;
      const status = resultStatusOf(resp.data, heldForMs, envelope);
      if (status === "success_without_url") {
        throw context.http.errorFrom(response, "invalid_response", `C reported ${submitted.providerJobId} done (status 1) without Resp.url`, { retryable: true });
      }
      return status;
    },

    // No cancel: spec C "There is no cancel endpoint."

    charge: (_request: ValidatedRequest, outcome: ProviderStatus): Charge => chargeC(outcome),
  };
}


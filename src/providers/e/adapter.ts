import { z } from "zod";
import { ConfigError, InputError, ProviderError } from "../../core/errors.js";
import { redactSecrets } from "../../core/redact.js";
import type { CallContext, JobRequest, ProviderAdapter, ProviderLimits, ProviderStatus, Submitted, ValidatedRequest } from "../adapter.js";
import { authorizedRequest, ETokenSource, notSentOnFailure } from "./auth.js";
import { E_COMMON_CAPABILITIES, eFromCommon } from "./common.js";
import { callErrorFrom, submitErrorFrom } from "./errors.js";
import { ESubmitFacts } from "./facts.js";
import { E_MODELS, E_OPERATION_INFO, isEModel, operationOf, type EModel, type EOperation } from "./operations.js";
import { pollStatusFrom } from "./poll-status.js";
import { chargeE, estimateE } from "./pricing.js";
import { validateERequest } from "./schema.js";
import { resolveScopes, type EScopeNames } from "./scopes.js";
import { EUploads } from "./uploads.js";

/** The operations whose path the spec does not show, and which may therefore be configured. */
export type EUnshownPathOperation = "fill-image" | "generate-object-composite" | "generate-similar-images";
const UNSHOWN_PATH_OPERATIONS: readonly EUnshownPathOperation[] = ["fill-image", "generate-object-composite", "generate-similar-images"];

/** spec E Endpoints: "the HTTP method of cancel: not shown". */
export type ECancelMethod = "PUT" | "DELETE" | "POST";
const CANCEL_METHODS: readonly ECancelMethod[] = ["PUT", "DELETE", "POST"];

export interface EAdapterConfig {
  /** MEDIAGATE_E_BASE_URL: `{e_base_url}`; submits go to `{baseUrl}/v3/images/…-async`. */
  baseUrl: string;
  /** MEDIAGATE_E_AUTH_URL: `{e_auth_url}`; tokens come from `{authUrl}/ims/token/v3`. */
  authUrl: string;
  clientId: string;
  clientSecret: string;
  /** The scope list sent with the token request, in full. */
  scopes?: string[];
  /** Or the names that fill the spec's scope list (`<vendor>ID`, `<service>_api`, …); see eScopeList. */
  scopeNames?: EScopeNames;
  /** Paths (under `{e_base_url}`) of the operations whose path the spec does not show. */
  operationPaths?: Partial<Record<EUnshownPathOperation, string>>;
  /** The method cancel is sent with first (default PUT); a 405 tries the others once each. */
  cancelMethod?: ECancelMethod;
  /** Give up tracking a job after this long. Default one hour (E publishes no render time). */
  trackingDeadlineMs?: number;
}

/** E's adapter, with the secrets it holds: the engine's redaction must include `secrets()` (the token changes over time). */
export interface EAdapter extends ProviderAdapter {
  /** The client secret and the current (and recently replaced) access tokens. */
  secrets(): string[];
}

const DEFAULT_TRACKING_DEADLINE_MS = 60 * 60_000;
/**
 * spec E Limits: 4 requests per minute and 9,000 per day per organisation,
 * and "whether status polls count … not shown, so count them". Every request
 * through the call context takes from both windows: submits, polls, cancels,
 * uploads, and token requests too (whether those count is not shown either;
 * counting them can only make mediagate slower, never over the quota).
 */
const RATE_WINDOWS = [
  { key: "e:org", limit: 4, windowMs: 60_000 },
  { key: "e:org:day", limit: 9_000, windowMs: 86_400_000 },
];
/**
 * spec E Endpoints: "no interval is mandated" (the example polls every
 * second). At 4 requests a minute for the whole organisation, one job polled
 * every 15 s already takes the minute's budget; the engine's rate windows
 * share it out, and a job waits at most a minute between polls.
 */
const POLL_PACE = { minIntervalMs: 15_000, maxIntervalMs: 60_000 };

/** spec E submit response: `jobId`, `statusUrl`, `cancelUrl`, flat at the top. */
const SubmitAnswer = z.object({
  jobId: z.string().min(1),
  statusUrl: z.string().refine((url) => URL.canParse(url), "not an absolute URL"),
  cancelUrl: z.string().optional(),
});
const EHandles = z.object({ jobId: z.string().min(1), statusUrl: z.string().min(1), cancelUrl: z.string().min(1).optional() });

function checkConfig(config: EAdapterConfig): void {
  for (const [operation, path] of Object.entries(config.operationPaths ?? {})) {
    if (!UNSHOWN_PATH_OPERATIONS.includes(operation as EUnshownPathOperation)) {
      throw new ConfigError("operationPaths", `E's ${operation} path is shown by the spec and cannot be changed`);
    }
    if (typeof path !== "string" || !/^\/[A-Za-z0-9._~\-/]*$/.test(path) || path.split("/").includes("..")) {
      throw new ConfigError("operationPaths", `E's ${operation} path must be an absolute path without query or "..", got "${String(path)}"`);
    }
  }
  if (config.cancelMethod !== undefined && !CANCEL_METHODS.includes(config.cancelMethod)) {
    throw new ConfigError("cancelMethod", `E's cancel method must be ${CANCEL_METHODS.join(", ")}, got "${String(config.cancelMethod)}"`);
  }
  if (config.trackingDeadlineMs !== undefined && !(config.trackingDeadlineMs > 0)) {
    throw new ConfigError("trackingDeadlineMs", `E's tracking deadline must be positive, got ${config.trackingDeadlineMs}`);
  }
}

/** Removes the adapter's own secrets from an error, whatever the HTTP layer was told to redact. */
function scrubbed(error: unknown, secrets: string[]): unknown {
  if (!(error instanceof Error)) return error;
  error.message = redactSecrets(error.message, secrets);
  if (error instanceof ProviderError && error.detail.rawBody !== undefined) error.detail.rawBody = redactSecrets(error.detail.rawBody, secrets);
  return error;
}

/** The stored operation and model of a validated job, read back (the store is not trusted to be of this version). */
function routeOf(request: ValidatedRequest): { operation: EOperation; model: EModel } {
  const operation = operationOf(request.operation ?? "");
  if (!operation) throw new InputError("operation", `"${String(request.operation)}" is not an E operation`);
  if (!isEModel(request.model) || !E_OPERATION_INFO[operation].paths[request.model]) {
    throw new InputError("model", `"${request.model}" has no ${operation} endpoint`, E_MODELS.join(", "));
  }
  return { operation, model: request.model };
}

/** Provider E: a client-credentials token, five `-async` operations, then the returned statusUrl polled as given. */
export function createEAdapter(config: EAdapterConfig): EAdapter {
  checkConfig(config);
  const base = config.baseUrl.replace(/\/+$/, "");
  const tokens = new ETokenSource({
    authUrl: config.authUrl.replace(/\/+$/, ""),
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    scopes: resolveScopes(config),
  });
  const uploads = new EUploads(base, tokens);
  const trackingDeadlineMs = config.trackingDeadlineMs ?? DEFAULT_TRACKING_DEADLINE_MS;
  const cancelMethods = [config.cancelMethod ?? "PUT", ...CANCEL_METHODS.filter((method) => method !== (config.cancelMethod ?? "PUT"))];

  const pathFor = (operation: EOperation, model: EModel): string => {
    const configured = (config.operationPaths as Partial<Record<EOperation, string>> | undefined)?.[operation];
    return configured ?? E_OPERATION_INFO[operation].paths[model]!;
  };

  /** Every provider call goes through here, so the secret and the tokens never leave in an error. */
  const guarded = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw scrubbed(error, tokens.secrets());
    }
  };

  const handlesOf = (submitted: Submitted) => {
    const handles = EHandles.safeParse(submitted.handles);
    if (!handles.success) {
      throw new ProviderError("invalid_handle", `E job ${submitted.providerJobId} has no stored jobId and statusUrl`, { provider: "e", retryable: false });
    }
    return handles.data;
  };

  return {
    id: "e",
    displayName: "E (images, asynchronous operations)",
    models: () => [...E_MODELS],
    secrets: () => tokens.secrets(),

    fromCommon: (request, target) => eFromCommon(request, target),
    commonCapabilities: () => E_COMMON_CAPABILITIES,

    validate: (request: JobRequest): ValidatedRequest => validateERequest(request, pathFor),

    estimate: async () => estimateE(),

    limits: (): ProviderLimits => ({
      rateWindows: RATE_WINDOWS.map((window) => ({ ...window })),
      // spec E Limits: "The concurrency ceiling … not shown": no slot pool.
      slotPools: [],
      poll: POLL_PACE,
      trackingDeadlineMs,
      idempotentSubmit: false,
    }),

    submit: (request: ValidatedRequest, context: CallContext): Promise<Submitted> =>
      guarded(async () => {
        const { operation, model } = routeOf(request);
        const facts = ESubmitFacts.safeParse(request.facts);
        if (!facts.success) throw new InputError("facts", "the job's stored E facts cannot be read: validate the job again");
        const body: Record<string, unknown> = { ...request.body };
        for (const upload of facts.data.uploads) {
          // spec E Endpoints: a local source image is uploaded first (valid 7 days); a failed upload means the submit was not sent.
          const uploadId = await notSentOnFailure(() => uploads.uploadIdFor(upload, context));
          body[upload.field] = { source: { uploadId } };
        }
        const url = `${base}${pathFor(operation, model)}`;
        // spec E Authentication 2: submit also carries Content-Type: application/json. Sent once: E has no idempotency.
        const response = await authorizedRequest(tokens, context, (headers) => ({
          method: "POST",
          url,
          headers: { ...headers, "content-type": "application/json" },
          body,
          retry: "none",
        }));
        if (response.status < 200 || response.status >= 300) throw submitErrorFrom(context.http, response, `${operation} (${model})`);
        let raw: unknown;
        try {
          raw = response.json();
        } catch {
          raw = undefined; // not JSON: reported below with what it means for the job
        }
        const answer = SubmitAnswer.safeParse(raw);
        if (!answer.success) {
          throw context.http.errorFrom(
            response,
            "invalid_response",
            `E accepted the submit of ${operation} (HTTP ${response.status}) but its answer has no usable jobId and statusUrl; a job may exist at E, so it is not resent`,
          );
        }
        // spec E submit response: "Keep all three", exactly as returned (a missing cancelUrl only makes the job uncancellable).
        const { jobId, statusUrl, cancelUrl } = answer.data;
        return { providerJobId: jobId, handles: { jobId, statusUrl, ...(cancelUrl !== undefined ? { cancelUrl } : {}) } };
      }),

    poll: (submitted: Submitted, context: CallContext): Promise<ProviderStatus> =>
      guarded(async () => {
        const { jobId, statusUrl } = handlesOf(submitted);
        // spec E Endpoints: the statusUrl is requested exactly as given (tenant-specific host, never rebuilt), with
        // Authorization and x-api-key only and no Content-Type; being the provider's URL, it passes the URL-safety check first.
        const response = await authorizedRequest(tokens, context, (headers) => ({
          method: "GET",
          url: statusUrl,
          headers,
          retry: "idempotent",
          untrustedUrl: true,
        }));
        if (response.status === 404) {
          // The statusUrl E returned for a job it accepted answers 404: E does not know the job (any more). Not shown by
          // the spec; told apart from a refusal so that the engine ends the job after a bounded time, not at once.
          const said = callErrorFrom(context.http, response, `the status read of job ${jobId}`);
          throw new ProviderError("task_not_found", said.message, { ...said.detail, taskUnknown: true });
        }
        if (response.status < 200 || response.status >= 300) throw callErrorFrom(context.http, response, `the status read of job ${jobId}`);
        return pollStatusFrom(context.http, response, jobId);
      }),

    cancel: (submitted: Submitted, context: CallContext): Promise<void> =>
      guarded(async () => {
        const { jobId, cancelUrl } = handlesOf(submitted);
        if (cancelUrl === undefined) {
          throw new ProviderError("invalid_handle", `E returned no cancelUrl for job ${jobId}: it cannot be cancelled`, { provider: "e", retryable: false });
        }
        // spec E Endpoints: the method of cancel is not shown. The configured one goes first; 405 (RFC 9110 §15.5.6,
        // method not allowed) tries the next. A cancel changes nothing when repeated, so the HTTP layer may resend it.
        for (const [index, method] of cancelMethods.entries()) {
          const response = await authorizedRequest(tokens, context, (headers) => ({
            method,
            url: cancelUrl,
            headers,
            retry: "idempotent",
            untrustedUrl: true,
          }));
          if (response.status >= 200 && response.status < 300) return;
          if (response.status === 405 && index + 1 < cancelMethods.length) continue;
          throw callErrorFrom(context.http, response, `the cancel (${method}) of job ${jobId}`);
        }
      }),

    charge: () => chargeE(),
  };
}


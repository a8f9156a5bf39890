import { ProviderError } from "../../core/errors.js";
import type { HttpResponse, ProviderHttp } from "../http.js";
import type { CEnvelope } from "./envelope.js";

/** spec C Errors: the ErrCodes with a published meaning. */
export const C_ERR_CODES = {
  concurrentLimit: 500044,
  insufficientBalance: 500090,
  retryLater: 500069,
} as const;

/** spec C 500069: "retry with a longer delay and jitter": 10 s plus up to 20 s of jitter. */
const RETRY_LATER_BASE_MS = 10_000;
const RETRY_LATER_JITTER_MS = 20_000;

/** A ProviderError for an envelope with a non-zero ErrCode, with what the engine must do about it. */
export function errorFromEnvelope(http: ProviderHttp, response: HttpResponse, envelope: CEnvelope, random: () => number = Math.random): ProviderError {
  const providerCode = String(envelope.ErrCode);
  const said = `C answered ErrCode ${envelope.ErrCode}${envelope.ErrMsg ? `: ${envelope.ErrMsg}` : ""}`;
  switch (envelope.ErrCode) {
    case C_ERR_CODES.concurrentLimit:
      // spec C: back-pressure; the request is valid, resubmitting at once makes it worse: wait for a slot, with backoff.
      return http.errorFrom(response, "slot_limit", `${said} (the account's tier holds its full quota of generating videos)`, { providerCode, backpressure: true, retryable: true });
    case C_ERR_CODES.insufficientBalance:
      return http.errorFrom(response, "insufficient_balance", `${said} (insufficient balance; no further C job is sent)`, { providerCode, haltsProvider: true });
    case C_ERR_CODES.retryLater: {
      // spec C: not a quota error; retry with a longer delay and jitter.
      const base = http.errorFrom(response, "retry_later", said, { providerCode, retryable: true });
      const jittered = RETRY_LATER_BASE_MS + Math.round(random() * RETRY_LATER_JITTER_MS);
      return new ProviderError(base.code, base.message, { ...base.detail, retryAfterMs: Math.max(jittered, base.detail.retryAfterMs ?? 0) });
    }
    default:
      // Other ErrCodes are not shown: kept as given, not retried.
      return http.errorFrom(response, "provider_rejected", said, { providerCode });
  }
}

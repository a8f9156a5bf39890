import { z } from "zod";
import type { ProviderError } from "../../core/errors.js";
import type { HttpResponse, ProviderHttp } from "../http.js";

/**
 * spec A Errors: "Error body shape and error codes: not shown". Whatever the
 * body holds is kept (redacted) as the raw body; a code and message are
 * picked out when the body has the common shapes `{ error: { code, message } }`
 * or `{ code, message }`. Branches use the HTTP status only.
 */
const NestedError = z.object({ error: z.object({ code: z.string().optional(), message: z.string().optional() }) });
const FlatError = z.object({ code: z.string().optional(), message: z.string().optional() });

function describeAnswer(response: HttpResponse): { providerCode?: string; message?: string } {
  let body: unknown;
  try {
    body = JSON.parse(response.text());
  } catch {
    return {};
  }
  const nested = NestedError.safeParse(body);
  const found = nested.success ? nested.data.error : FlatError.safeParse(body).data;
  return {
    ...(found?.code !== undefined ? { providerCode: found.code } : {}),
    ...(found?.message !== undefined ? { message: found.message } : {}),
  };
}

/** A ProviderError for a non-2xx answer of A, with what the engine must do about it. */
export function errorFromAnswer(http: ProviderHttp, response: HttpResponse, action: "create" | "read"): ProviderError {
  const { providerCode, message } = describeAnswer(response);
  const said = `A answered HTTP ${response.status}${providerCode ? ` ${providerCode}` : ""} to the task ${action}${message ? `: ${message}` : ""}`;
  const flags = providerCode !== undefined ? { providerCode } : {};
  const status = response.status;
  if (status === 401 || status === 403) {
    // spec A Authentication: a key paired with the other plan's base path "fails or incurs extra charges": stop sending.
    return http.errorFrom(response, "authentication_failed", `${said} (check MEDIAGATE_A_API_KEY, and MEDIAGATE_A_ENTERPRISE: an enterprise key needs the /api/plan/v3 base path, a standard key /api/v3)`, { ...flags, haltsProvider: true });
  }
  if (status === 429) return http.errorFrom(response, "rate_limited", said, { ...flags, retryable: true });
  if (status === 408 || status >= 500) return http.errorFrom(response, "provider_unavailable", said, { ...flags, retryable: true });
  // A read's 404 says A does not know the task (a task older than the lookup window is told apart by the adapter).
  if (status === 404) return http.errorFrom(response, action === "read" ? "task_not_found" : "not_found", said, action === "read" ? { ...flags, taskUnknown: true } : flags);
  if (status >= 400 && status < 500) return http.errorFrom(response, "invalid_request", said, flags);
  return http.errorFrom(response, "unexpected_answer", said, flags);
}

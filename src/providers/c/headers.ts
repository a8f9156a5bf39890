import { randomUUID } from "node:crypto";

/**
 * spec C Authentication: every call carries `API-KEY` and an `Ai-trace-id`,
 * "a fresh unique identifier per request, UUID form"; the submit also sends
 * `Content-Type: application/json`. Built anew for each request, so no two
 * requests share a trace id.
 */
export function cHeaders(apiKey: string, json: boolean): Record<string, string> {
  return {
    "API-KEY": apiKey,
    ...cTraceHeader(),
    ...(json ? { "content-type": "application/json" } : {}),
  };
}

/** A fresh trace id: given to ProviderHttp as `attemptHeaders`, so an inline resend never repeats one. */
export function cTraceHeader(): Record<string, string> {
  return { "Ai-trace-id": randomUUID() };
}

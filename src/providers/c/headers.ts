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
    "Ai-trace-id": randomUUID(),
    ...(json ? { "content-type": "application/json" } : {}),
  };
}

import { apiIdPath } from "./api-id.js";

/** Every address of B, from its base URL (spec B Endpoints). */
export interface BEndpoints {
  /** POST: submit a job to the operation `{vendor}/{model}/{function}`. */
  media(apiId: string): string;
  /** GET: the job object; DELETE: erase its media and prompts. */
  job(requestId: string): string;
  /** GET: `{url}` of the result; 409 before the job completes. */
  content(requestId: string): string;
  catalogList(): string;
  catalogRecord(apiId: string): string;
  quote(apiId: string): string;
  balance(): string;
  dailySpend(startDate: string, endDate: string): string;
}

export function bEndpoints(baseUrl: string): BEndpoints {
  const base = baseUrl.replace(/\/+$/, "");
  // Ids handed back by B are encoded whole: one id can never become two segments.
  const jobPath = (requestId: string) => `${base}/v1/media/jobs/${encodeURIComponent(requestId)}`;
  return {
    media: (apiId) => `${base}/v1/media/${apiIdPath(apiId)}`,
    job: jobPath,
    content: (requestId) => `${jobPath(requestId)}/content`,
    catalogList: () => `${base}/catalog/apis`,
    catalogRecord: (apiId) => `${base}/catalog/apis/${apiIdPath(apiId)}?expand=inputs`,
    quote: (apiId) => `${base}/catalog/apis/${apiIdPath(apiId)}/quote`,
    balance: () => `${base}/billing/balance`,
    dailySpend: (startDate, endDate) => `${base}/billing/spend/daily?${new URLSearchParams({ start_date: startDate, end_date: endDate }).toString()}`,
  };
}

/**
 * spec B Authentication 1: `X-API-Key: <API_KEY>`. Header styles of other
 * vendors (`x-<vendor>-api-key`) are not accepted, so no other is ever sent.
 */
export function keyHeaders(apiKey: string): Record<string, string> {
  return { "X-API-Key": apiKey };
}

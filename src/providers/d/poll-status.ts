import { z } from "zod";
import type { ProviderStatus } from "../adapter.js";
import type { HttpResponse, ProviderHttp } from "../http.js";

/** spec D poll response: `status`, `id`, and `result.sample` once Ready. Other fields are not shown and are kept in `raw`. */
const PollAnswer = z.object({ status: z.string(), id: z.string().optional(), result: z.unknown().optional() });
const ReadyResult = z.object({ sample: z.string().min(1) });

/** spec D job status: "A client example also treats `Error` and `Failed` as terminal failure." */
const FAILURE_STATUSES = new Set(["Error", "Failed"]);

/**
 * The one value read as "still working". spec D names only "pending states" in
 * its table, not their values; "Pending" is the value D's own API reference
 * and client examples poll on (written down in the sandbox as its only one).
 */
const PENDING_STATUS = "Pending";

/** The status value D's API answers for an id it does not know (its API reference; the spec does not show it). */
const TASK_NOT_FOUND = "Task not found";

/** spec D result.sample: a signed URL valid ten minutes, so the engine downloads it at once. */
export const SAMPLE_URL_LIFETIME_MS = 10 * 60_000;

/** Leading part of a failed job's answer quoted in its message. */
const QUOTED_ANSWER_CHARS = 300;

/** The normalised status of one poll answer (2xx). Throws ProviderError(`invalid_response`) when it cannot be read. */
export function pollStatusFrom(http: ProviderHttp, response: HttpResponse, jobId: string): ProviderStatus {
  const raw = response.json();
  const answer = PollAnswer.safeParse(raw);
  if (!answer.success) {
    throw http.errorFrom(response, "invalid_response", `D answered the poll of job ${jobId} without a string status`, { retryable: true });
  }
  const { status, id } = answer.data;
  if (id !== undefined && id !== jobId) {
    throw http.errorFrom(response, "invalid_response", `D answered the poll of job ${jobId} with job ${id}`);
  }
  if (status === "Ready") {
    const result = ReadyResult.safeParse(answer.data.result);
    if (!result.success) {
      throw http.errorFrom(response, "invalid_response", `D reported job ${jobId} Ready without result.sample`, { retryable: true });
    }
    return {
      kind: "succeeded",
      providerStatus: status,
      outputs: [{ url: result.data.sample, metadata: { providerJobId: jobId, signedUrlLifetimeMs: SAMPLE_URL_LIFETIME_MS } }],
      raw,
    };
  }
  if (FAILURE_STATUSES.has(status)) {
    const quoted = http.redact(response.text().trim().slice(0, QUOTED_ANSWER_CHARS));
    return { kind: "failed", providerStatus: status, code: "provider_failed", message: `D reported job ${jobId} ${status}: ${quoted}`, raw };
  }
  if (status === PENDING_STATUS) return { kind: "pending", providerStatus: status, raw };
  // spec D: "The full set of status values: not shown." Anything else keeps the job polling, marked unrecognised: the
  // engine ends a job that answers only such values for a bounded time (D's "Task not found", after a restart, for ever).
  return {
    kind: "pending",
    providerStatus: status,
    unrecognised: { said: `D answered status "${status.slice(0, 80)}" for job ${jobId}`, taskUnknown: status === TASK_NOT_FOUND },
    raw,
  };
}

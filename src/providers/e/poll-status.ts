import { z } from "zod";
import type { OutputRef, ProviderStatus } from "../adapter.js";
import type { HttpResponse, ProviderHttp } from "../http.js";

/** spec E status responses: running → status, jobId; succeeded → status, jobId, result; failed → status only. */
const StatusAnswer = z.object({ status: z.string(), jobId: z.string().optional(), result: z.unknown().optional() });

/**
 * spec E `result`: outputs of `seed` (integer) and `image.url`, with
 * `altText` for the whole result. A seed that is not an integer is kept as
 * given (it is the only per-image identifier); only the URL is required.
 */
const SucceededResult = z.object({
  outputs: z.array(z.object({ seed: z.unknown().optional(), image: z.object({ url: z.string().min(1) }) })).min(1),
  altText: z.unknown().optional(),
});

/** The normalised status of one poll answer (2xx). Throws ProviderError(`invalid_response`) when it cannot be read. */
export function pollStatusFrom(http: ProviderHttp, response: HttpResponse, jobId: string): ProviderStatus {
  const raw = response.json();
  const answer = StatusAnswer.safeParse(raw);
  if (!answer.success) {
    throw http.errorFrom(response, "invalid_response", `E answered the status of job ${jobId} without a string status`, { retryable: true });
  }
  const { status } = answer.data;
  if (answer.data.jobId !== undefined && answer.data.jobId !== jobId) {
    throw http.errorFrom(response, "invalid_response", `E answered the status of job ${jobId} with job ${answer.data.jobId}`);
  }
  if (status === "succeeded") {
    // spec E: images are under result.outputs[].image.url, never at the top level.
    const result = SucceededResult.safeParse(answer.data.result);
    if (!result.success) {
      throw http.errorFrom(response, "invalid_response", `E reported job ${jobId} succeeded without result.outputs[].image.url`, { retryable: true });
    }
    const altText = result.data.altText ?? null;
    const outputs: OutputRef[] = result.data.outputs.map((output) => ({
      url: output.image.url,
      // spec E: the seed is needed to reproduce a result; altText is usable as accessibility text.
      metadata: { seed: output.seed ?? null, altText },
    }));
    return { kind: "succeeded", providerStatus: status, outputs, raw };
  }
  if (status === "failed") {
    // spec E: "A failed job returns only status": there is no reason to report.
    return { kind: "failed", providerStatus: status, code: "generation_failed", message: `E reported job ${jobId} failed (E gives no reason)`, raw };
  }
  if (status === "running") return { kind: "pending", providerStatus: status, raw };
  // spec E job status: "A client meeting an unknown status keeps polling as for running, with a bounded attempt count"
  // (a cancelled job's status is not shown either): polled on, marked unrecognised, which the engine bounds.
  return { kind: "pending", providerStatus: status, unrecognised: { said: `E answered status "${status.slice(0, 80)}" for job ${jobId}`, taskUnknown: false }, raw };
}

import type { EContentClass } from "./submit-request.js";

/** spec E status responses: `result` of a succeeded job. */
export interface EJobResult {
  size: { width: number; height: number };
  outputs: { seed: number; image: { url: string } }[];
  contentClass: EContentClass;
  altText: string;
}

/**
 * spec E status responses: running → status, jobId; succeeded → status,
 * jobId, result; failed → status only. Cancelled and injected unknown values
 * answer like running (status, jobId), the sandbox's choice.
 */
export type EStatusBody =
  | { status: string; jobId: string }
  | { status: "succeeded"; jobId: string; result: EJobResult }
  | { status: "failed" };

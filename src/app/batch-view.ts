import type { BatchSummary } from "../store/store.js";

/** A batch as the API answers it (`GET /v1/batches/{id}`) and `batch.completed` carries it. */
export interface ApiBatch {
  batch_id: string;
  jobs: number;
  by_state: BatchSummary["byState"];
  estimate_micro_usd: number;
  unpriced: number;
  charged_micro_usd: number;
  /** The batch on the API: absolute under MEDIAGATE_PUBLIC_URL, else a path on it. */
  href: string;
  /** The batch's page on the dashboard, made absolute the same way. */
  dashboard_href: string;
}

function under(publicUrl: string | null, path: string): string {
  return publicUrl === null ? path : `${publicUrl.replace(/\/+$/, "")}${path}`;
}

export function apiBatch(batchId: string, summary: BatchSummary, publicUrl: string | null): ApiBatch {
  return {
    batch_id: batchId,
    jobs: summary.jobs,
    by_state: summary.byState,
    estimate_micro_usd: summary.estimateMicroUsd,
    unpriced: summary.unpriced,
    charged_micro_usd: summary.chargedMicroUsd,
    href: under(publicUrl, `/v1/batches/${encodeURIComponent(batchId)}`),
    dashboard_href: under(publicUrl, `/batches/${encodeURIComponent(batchId)}`),
  };
}

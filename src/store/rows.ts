import type { Job, JobOutput, JobRoute, JobState } from "../core/job.js";
import type { MediaFacts } from "../core/media-facts.js";
import type { ProviderId } from "../core/provider-id.js";
import type { JobsTable, OutputsTable } from "./schema.js";
import type { JobPatch } from "./store.js";

/** PostgreSQL returns BIGINT as text; SQLite as number. */
export function toNumber(value: unknown): number {
  return typeof value === "number" ? value : Number(value);
}
export function toNumberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : toNumber(value);
}

export function rowToJob(row: JobsTable): Job {
  return rowWithRequestToJob(row, {
    body: JSON.parse(row.body_json) as Record<string, unknown>,
    facts: JSON.parse(row.facts_json) as Record<string, unknown>,
    warnings: JSON.parse(row.warnings_json) as string[],
  });
}

/** A job from its row, with its body, facts and warnings already as objects (a row just written from them: not parsed back). */
export function rowWithRequestToJob(row: JobsTable, request: Pick<Job, "body" | "facts" | "warnings">): Job {
  return {
    id: row.id,
    ref: row.ref,
    batchId: row.batch_id,
    provider: row.provider as ProviderId,
    model: row.model,
    operation: row.operation,
    body: request.body,
    facts: request.facts,
    warnings: request.warnings,
    state: row.state as Job["state"],
    reason: row.reason,
    attempts: toNumber(row.attempts),
    idempotencyKey: row.idempotency_key,
    providerJobId: row.provider_job_id,
    handles: row.handles_json ? (JSON.parse(row.handles_json) as Record<string, unknown>) : null,
    providerStatus: row.provider_status,
    estimateMicroUsd: toNumberOrNull(row.estimate_micro_usd),
    estimateSource: row.estimate_source,
    chargeMicroUsd: toNumberOrNull(row.charge_micro_usd),
    chargeSource: row.charge_source,
    chargeState: row.charge_state as Job["chargeState"],
    error: row.error_code
      ? {
          code: row.error_code,
          message: row.error_message ?? "",
          ...(row.error_detail_json ? { detail: JSON.parse(row.error_detail_json) as unknown } : {}),
        }
      : null,
    outDir: row.out_dir,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: toNumberOrNull(row.lease_expires_at),
    nextAttemptAt: toNumber(row.next_attempt_at),
    createdAt: toNumber(row.created_at),
    updatedAt: toNumber(row.updated_at),
    submittedAt: toNumberOrNull(row.submitted_at),
    submitSentAt: toNumberOrNull(row.submit_sent_at),
    providerDoneAt: toNumberOrNull(row.provider_done_at),
    finishedAt: toNumberOrNull(row.finished_at),
    trackingDeadlineAt: toNumberOrNull(row.tracking_deadline_at),
    deadlineAt: toNumberOrNull(row.deadline_at ?? null),
    queueRank: toNumberOrNull(row.queue_rank ?? null),
    slotsHeld: JSON.parse(row.slots_held_json) as string[],
    lastPendingElapsedMs: toNumberOrNull(row.last_pending_elapsed_ms),
    pollFailures: toNumber(row.poll_failures),
    budgetId: row.budget_id,
    budgetHeldMicroUsd: toNumber(row.budget_held_micro_usd),
    blockedCode: (row.blocked_code as Job["blockedCode"]) ?? null,
    route: row.route_json ? (JSON.parse(row.route_json) as JobRoute) : null,
    tokenId: row.token_id ?? null,
    tenant: row.tenant,
    notifyUrl: row.notify_url ?? null,
    trace: row.trace_id && row.trace_span_id ? { traceId: row.trace_id, spanId: row.trace_span_id, parentSpanId: row.trace_parent_span_id ?? null } : null,
  };
}

/** The columns a patch changes. `undefined` fields are left alone; `null` clears. */
export function patchToRow(patch: JobPatch): Partial<JobsTable> {
  const row: Partial<JobsTable> = {};
  if (patch.reason !== undefined) row.reason = patch.reason;
  if (patch.attempts !== undefined) row.attempts = patch.attempts;
  if (patch.idempotencyKey !== undefined) row.idempotency_key = patch.idempotencyKey;
  if (patch.providerJobId !== undefined) row.provider_job_id = patch.providerJobId;
  if (patch.handles !== undefined) row.handles_json = patch.handles === null ? null : JSON.stringify(patch.handles);
  if (patch.providerStatus !== undefined) row.provider_status = patch.providerStatus;
  if (patch.chargeMicroUsd !== undefined) row.charge_micro_usd = patch.chargeMicroUsd;
  if (patch.chargeSource !== undefined) row.charge_source = patch.chargeSource;
  if (patch.chargeState !== undefined) row.charge_state = patch.chargeState;
  if (patch.error !== undefined) {
    row.error_code = patch.error?.code ?? null;
    row.error_message = patch.error?.message ?? null;
    row.error_detail_json = patch.error?.detail === undefined ? null : JSON.stringify(patch.error.detail);
  }
  if (patch.leaseOwner !== undefined) row.lease_owner = patch.leaseOwner;
  if (patch.leaseExpiresAt !== undefined) row.lease_expires_at = patch.leaseExpiresAt;
  if (patch.nextAttemptAt !== undefined) row.next_attempt_at = patch.nextAttemptAt;
  if (patch.submittedAt !== undefined) row.submitted_at = patch.submittedAt;
  if (patch.submitSentAt !== undefined) row.submit_sent_at = patch.submitSentAt;
  if (patch.providerDoneAt !== undefined) row.provider_done_at = patch.providerDoneAt;
  if (patch.finishedAt !== undefined) row.finished_at = patch.finishedAt;
  if (patch.trackingDeadlineAt !== undefined) row.tracking_deadline_at = patch.trackingDeadlineAt;
  if (patch.lastPendingElapsedMs !== undefined) row.last_pending_elapsed_ms = patch.lastPendingElapsedMs;
  if (patch.pollFailures !== undefined) row.poll_failures = patch.pollFailures;
  if (patch.body !== undefined) row.body_json = JSON.stringify(patch.body);
  if (patch.blockedCode !== undefined) row.blocked_code = patch.blockedCode;
  if (patch.outDir !== undefined) row.out_dir = patch.outDir;
  if (patch.provider !== undefined) row.provider = patch.provider;
  if (patch.queueRank !== undefined) row.queue_rank = patch.queueRank;
  if (patch.model !== undefined) row.model = patch.model;
  if (patch.operation !== undefined) row.operation = patch.operation;
  if (patch.facts !== undefined) row.facts_json = JSON.stringify(patch.facts);
  if (patch.warnings !== undefined) row.warnings_json = JSON.stringify(patch.warnings);
  if (patch.estimateMicroUsd !== undefined) row.estimate_micro_usd = patch.estimateMicroUsd;
  if (patch.estimateSource !== undefined) row.estimate_source = patch.estimateSource;
  if (patch.route !== undefined) row.route_json = patch.route === null ? null : JSON.stringify(patch.route);
  return row;
}

export function rowToOutput(row: OutputsTable): JobOutput {
  return {
    index: toNumber(row.idx),
    path: row.path,
    url: row.url,
    contentType: row.content_type,
    bytes: toNumber(row.bytes),
    sha256: row.sha256,
    metadata: JSON.parse(row.metadata_json) as Record<string, unknown>,
    media: row.media_json ? (JSON.parse(row.media_json) as MediaFacts) : {},
  };
}

/** One line of a job's event log. */
export function eventRow(jobId: string, at: number, fromState: JobState | null, toState: JobState, reason: string, detail?: unknown) {
  return { job_id: jobId, at, from_state: fromState, to_state: toState, reason, detail_json: detail === undefined ? null : JSON.stringify(detail) };
}

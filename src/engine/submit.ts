import { randomUUID } from "node:crypto";
import { fullJitterBackoffMs } from "../core/backoff.js";
import { InputError, MediagateError, OutcomeUnknownError, ProviderError } from "../core/errors.js";
import type { Job } from "../core/job.js";
import { RequestNotSentError, TransportError } from "../providers/http.js";
import { type EngineContext, limitsOf, validatedOf } from "./context.js";

/** Retryable submit failures (5xx, refused connections) give up after this many attempts. */
const MAX_SUBMIT_ATTEMPTS = 8;

/**
 * Sends one claimed job (state `submitting`, slots taken, lease held). The
 * idempotency key, when the provider has one, was stored before this runs.
 */
export async function submitJob(context: EngineContext, claimed: Job): Promise<void> {
  const { store, clock, owner } = context;
  const adapter = context.adapter(claimed.provider);
  const request = validatedOf(claimed);
  const limits = adapter.limits(request);
  let job = claimed;
  if (limits.idempotentSubmit && !job.idempotencyKey) {
    // Stored before the request leaves, so a crash mid-submit resends the same key.
    const keyed = await store.updateJob(job.id, { state: "submitting", leaseOwner: owner }, { idempotencyKey: randomUUID() }, clock.now());
    if (!keyed) return;
    job = keyed;
  }
  try {
    const call = await context.callContext(job, request);
    context.counters(job.provider).submits++;
    const submitted = await adapter.submit(request, call);
    const now = clock.now();
    const firstPoll = await context.polls.nextDelay(job, 0, limits);
    const moved = await store.transition(
      job.id,
      { state: "submitting", leaseOwner: owner },
      "running",
      {
        providerJobId: submitted.providerJobId,
        handles: submitted.handles,
        providerStatus: "submitted",
        submittedAt: now,
        trackingDeadlineAt: now + limits.trackingDeadlineMs,
        nextAttemptAt: now + firstPoll,
        reason: null,
      },
      `provider accepted it as ${submitted.providerJobId}`,
      now,
      { handles: submitted.handles },
    );
    if (moved) context.emit(moved);
  } catch (error) {
    await handleSubmitFailure(context, job, error, limits.idempotentSubmit);
  }
}

async function requeue(context: EngineContext, job: Job, nextAttemptAt: number, reason: string, detail?: unknown, options: { newKey?: boolean } = {}): Promise<void> {
  const moved = await context.store.transition(
    job.id,
    { state: "submitting", leaseOwner: context.owner },
    "queued",
    { nextAttemptAt, leaseOwner: null, leaseExpiresAt: null, reason, submitSentAt: null, ...(options.newKey ? { idempotencyKey: null } : {}) },
    reason,
    context.clock.now(),
    detail,
  );
  if (moved) context.emit(moved);
  context.wake();
}

async function fail(context: EngineContext, job: Job, to: "failed" | "unknown_submission", code: string, message: string, detail?: unknown) {
  const moved = await context.store.transition(
    job.id,
    { state: "submitting", leaseOwner: context.owner },
    to,
    { error: { code, message, ...(detail !== undefined ? { detail } : {}) }, leaseOwner: null, leaseExpiresAt: null, reason: message },
    message,
    context.clock.now(),
    detail,
  );
  if (moved) context.emit(moved);
  context.wake();
}

/** What a failed submit means for the job: back to the queue, failed, or unknown. Never an immediate resend. */
export async function handleSubmitFailure(context: EngineContext, job: Job, error: unknown, idempotent: boolean): Promise<void> {
  const now = context.clock.now();
  const backoff = () => now + fullJitterBackoffMs(job.attempts, { baseMs: 1_000, capMs: 60_000 });

  if (error instanceof InputError) {
    await fail(context, job, "failed", error.code, error.message, { field: error.field });
    return;
  }
  if (error instanceof RequestNotSentError) {
    // Nothing left (the rate-token wait failed or the engine is stopping): queue it again as it was.
    await requeue(context, job, context.stopWaiting.aborted ? now : backoff(), `not sent: ${error.message}`);
    return;
  }
  if (error instanceof TransportError && !error.maybeSent) {
    if (job.attempts >= MAX_SUBMIT_ATTEMPTS) {
      await fail(context, job, "failed", "provider_unreachable", error.message);
      return;
    }
    await requeue(context, job, backoff(), `provider unreachable, retrying later: ${error.message}`);
    return;
  }
  if (error instanceof TransportError || error instanceof OutcomeUnknownError) {
    if (idempotent && job.attempts < MAX_SUBMIT_ATTEMPTS * 2) {
      // The same body with the same idempotency key cannot create a second job.
      await requeue(context, job, backoff(), `submit outcome unknown; will resend with the same idempotency key: ${error.message}`);
      return;
    }
    await fail(
      context,
      job,
      "unknown_submission",
      "submit_outcome_unknown",
      `the submit was sent but its answer was lost (${error.message}); it is not resubmitted automatically because that could charge twice: check the provider, then \`mediagate resubmit ${job.id}\``,
    );
    return;
  }
  if (error instanceof ProviderError) {
    const detail = { httpStatus: error.detail.httpStatus, providerCode: error.detail.providerCode, body: error.detail.rawBody };
    // spec B: a refused request is kept under its key and replayed as such, so a retry after a 4xx (429 included) needs a new key.
    const status = error.detail.httpStatus;
    const newKey = idempotent && status !== undefined && status >= 400 && status < 500;
    if (error.detail.backpressure) {
      // spec D/C: the provider's view of our slots differs from ours; believe it, back off, never resubmit at once.
      context.counters(job.provider).backpressure++;
      const blockedUntil = now + (error.detail.retryAfterMs ?? fullJitterBackoffMs(Math.min(job.attempts, 6), { baseMs: 2_000, capMs: 60_000 }) + 1_000);
      await context.store.slotPushback(job.slotsHeld, blockedUntil, now);
      await requeue(context, job, blockedUntil, `provider at capacity (${error.code}); waiting for a slot`, detail, { newKey });
      return;
    }
    if (error.detail.haltsProvider) {
      await context.store.haltProvider({ provider: job.provider, code: error.code, message: error.message, jobId: job.id, at: now });
      await fail(context, job, "failed", error.code, error.message, detail);
      return;
    }
    if (error.detail.retryable && job.attempts < MAX_SUBMIT_ATTEMPTS) {
      const at = error.detail.retryAfterMs !== undefined ? now + error.detail.retryAfterMs : backoff();
      await requeue(context, job, at, `provider error ${error.code}, retrying later`, detail, { newKey });
      return;
    }
    await fail(context, job, "failed", error.code, error.message, detail);
    return;
  }
  // An unexpected error (a bug, not the provider): we cannot tell whether the request left.
  const message = error instanceof Error ? error.message : String(error);
  if (idempotent && job.attempts < MAX_SUBMIT_ATTEMPTS * 2) {
    await requeue(context, job, backoff(), `unexpected error during submit; will resend with the same idempotency key: ${message}`);
    return;
  }
  context.log.error({ jobId: job.id, err: error instanceof MediagateError ? error.code : message }, "unexpected error during submit");
  await fail(context, job, "unknown_submission", "submit_outcome_unknown", `unexpected error during submit (${message}); not resubmitted automatically`);
}

/**
 * A job found in `submitting` after its engine died: the request may or may
 * not have reached the provider. With an idempotency key it is resent with
 * the same key; otherwise it becomes `unknown_submission`.
 */
export async function recoverInterruptedSubmit(context: EngineContext, job: Job): Promise<void> {
  const limits = limitsOf(context, job);
  if (limits.idempotentSubmit && job.idempotencyKey) {
    context.log.info({ jobId: job.id }, "resuming an interrupted submit with its idempotency key");
    await submitJob(context, job);
    return;
  }
  if (limits.idempotentSubmit) {
    // No key was stored, so no request left before the crash.
    await requeue(context, job, context.clock.now(), "engine stopped before sending; queued again");
    return;
  }
  if (job.submitSentAt === null) {
    // It never got as far as sending (waiting for a rate token, say): nothing can have reached the provider.
    await requeue(context, job, context.clock.now(), "engine stopped before its submit was sent; queued again");
    return;
  }
  await fail(
    context,
    job,
    "unknown_submission",
    "submit_outcome_unknown",
    `the engine stopped while this job's submit was in flight; ${job.provider.toUpperCase()} has no idempotency, so it is not resubmitted automatically (it may or may not have been accepted): check the provider, then \`mediagate resubmit ${job.id}\``,
  );
}

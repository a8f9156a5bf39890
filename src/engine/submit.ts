import { randomUUID } from "node:crypto";
import { fullJitterBackoffMs } from "../core/backoff.js";
import { InputError, MediagateError, OutcomeUnknownError, ProviderError } from "../core/errors.js";
import type { Job } from "../core/job.js";
import type { ProviderLimits, Submitted } from "../providers/adapter.js";
import { RequestNotSentError, TransportError } from "../providers/http.js";
import { type EngineContext, limitsOf, validatedOf } from "./context.js";
import { deadlineWords } from "./deadlines.js";
import { fallOver } from "./fallover.js";

/** Retryable submit failures (5xx, refused connections) give up after this many attempts. */
const MAX_SUBMIT_ATTEMPTS = 8;

/**
 * Sends one claimed job (state `submitting`, slots taken, lease held). The
 * idempotency key, when the provider has one, was stored before this runs.
 */
export async function submitJob(context: EngineContext, claimed: Job): Promise<void> {
  const { store, clock, owner } = context;
  if (claimed.deadlineAt !== null && clock.now() >= claimed.deadlineAt) {
    // Claimed after its deadline passed (between two looks at the queue's deadlines): not sent.
    // The deadline is the event's detail; the error is the sentence alone, as for a queued job cancelled by it.
    await fail(context, claimed, "cancelled", "deadline", deadlineWords(claimed.deadlineAt, false), { deadline_at: new Date(claimed.deadlineAt).toISOString() }, false);
    return;
  }
  const adapter = context.adapter(claimed.provider);
  const request = validatedOf(claimed);
  const limits = adapter.limits(request);
  let job = claimed;
  if (limits.idempotentSubmit && !job.idempotencyKey) {
    // Stored before the request leaves, so a crash mid-submit resends the same key.
    let keyed: Job | null;
    try {
      keyed = await store.updateJob(job.id, { state: "submitting", leaseOwner: owner }, { idempotencyKey: randomUUID() }, clock.now());
    } catch (error) {
      await requeue(context, job, clock.now(), `not sent: the store failed before the idempotency key was saved (${messageOf(error)})`);
      return;
    }
    if (!keyed) return;
    job = keyed;
  }
  let submitted: Submitted;
  let sentAt: number | null;
  try {
    const call = await context.callContext(job, request);
    context.counters(job.provider).submits++;
    submitted = await context.timed(job.provider, "submit", () => adapter.submit(request, call));
    sentAt = call.http.lastSentAt;
  } catch (error) {
    await handleSubmitFailure(context, job, error, limits.idempotentSubmit);
    return;
  }
  // From here the provider has the job: nothing below may be taken for a failed submit.
  await recordAccepted(context, job, submitted, limits, sentAt);
}

/**
 * `sentAt` is when the accepted request left (`ProviderHttp.lastSentAt`): the
 * provider took the job after it, so polls learn the render time from it (see
 * `PollScheduler.answered`). The note written before the send (its rate token,
 * the store write that notes it) comes earlier, by as much as a busy loop
 * makes it; it is replaced.
 */
async function recordAccepted(context: EngineContext, job: Job, submitted: Submitted, limits: ProviderLimits, sentAt: number | null): Promise<void> {
  const { store, clock, owner } = context;
  const now = clock.now();
  let firstPoll: number;
  try {
    firstPoll = await context.polls.firstDelay(job, limits, sentAt !== null && sentAt <= now ? now - sentAt : 0);
  } catch {
    // The learned render times live in the store; without them, the provider's own pace will do.
    firstPoll = limits.poll.minIntervalMs;
  }
  const moved = await persist(context, job, `${job.provider.toUpperCase()} accepted it as ${submitted.providerJobId}`, () =>
    store.transition(
      job.id,
      { state: "submitting", leaseOwner: owner },
      "running",
      {
        providerJobId: submitted.providerJobId,
        handles: submitted.handles,
        providerStatus: "submitted",
        submittedAt: now,
        ...(sentAt !== null && sentAt <= now ? { submitSentAt: sentAt } : {}),
        trackingDeadlineAt: now + limits.trackingDeadlineMs,
        nextAttemptAt: now + firstPoll,
        reason: null,
      },
      `provider accepted it as ${submitted.providerJobId}`,
      now,
      { handles: submitted.handles },
    ),
  );
  if (moved) context.emit(moved);
  else {
    // The lease lapsed while the store was away and another engine settled the job (unknown, or resent under its key).
    context.log.error(
      { jobId: job.id, provider: job.provider, providerJobId: submitted.providerJobId },
      `${job.provider.toUpperCase()} accepted the job as ${submitted.providerJobId}, but it was no longer this engine's to record: check it at the provider`,
    );
  }
}

/**
 * Writes what became of a submit, retrying while the store fails (a database
 * restart, a failover): until it is written, the outcome exists only in this
 * process, and for an accepted job that outcome is a provider job id that
 * will be charged. The first failure is logged at error level with `what`
 * (the provider job id included), so an operator can reconcile even if this
 * process is killed before the store returns. Retries as long as the engine
 * runs: its stop waits for submits, so a stop during a store outage ends when
 * the store is back or when the command's stop timeout gives up, and the job
 * stays `submitting` for the next engine to settle from submit_sent_at and
 * the idempotency key. Null when the expectation failed (another engine took
 * the job) or the engine stopped first. A stop given up on (a library close
 * past its timeout) leaves it trying with waits that do not keep the process
 * alive: a store back while the process lives still gets the answer.
 */
async function persist<T>(context: EngineContext, job: Job, what: string, write: () => Promise<T | null>): Promise<T | null> {
  for (let failures = 1; ; failures++) {
    try {
      return await write();
    } catch (error) {
      // A stop given up on aborts everything else, but this answer keeps being offered to the store while the process lives.
      const givenUp = context.givenUp();
      if (context.signal.aborted && !givenUp) {
        context.log.error({ jobId: job.id, err: messageOf(error) }, `the engine stopped before the store recorded that ${what}`);
        return null;
      }
      const retryInMs = fullJitterBackoffMs(failures, { baseMs: 250, capMs: 10_000 });
      const fields = { jobId: job.id, provider: job.provider, err: messageOf(error), failures, retryInMs };
      if (failures === 1) context.log.error(fields, `the store failed while recording that ${what}; retrying until it answers`);
      else context.log.warn(fields, `still recording that ${what}`);
      await context.clock.sleep(retryInMs, givenUp ? undefined : context.signal, { unref: givenUp }).catch(() => undefined);
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function requeue(context: EngineContext, job: Job, nextAttemptAt: number, reason: string, detail?: unknown, options: { newKey?: boolean; route?: Job["route"] } = {}): Promise<void> {
  const moved = await persist(context, job, `it goes back to the queue (${reason})`, () =>
    context.store.transition(
      job.id,
      { state: "submitting", leaseOwner: context.owner },
      "queued",
      {
        nextAttemptAt,
        leaseOwner: null,
        leaseExpiresAt: null,
        reason,
        submitSentAt: null,
        ...(options.newKey ? { idempotencyKey: null } : {}),
        ...(options.route !== undefined ? { route: options.route } : {}),
      },
      reason,
      context.clock.now(),
      detail,
    ),
  );
  if (moved) context.emit(moved);
  context.wake();
}

async function fail(context: EngineContext, job: Job, to: "failed" | "unknown_submission" | "cancelled", code: string, message: string, detail?: unknown, detailInError = true) {
  const moved = await persist(context, job, `it ended ${to} (${code}: ${message})`, () =>
    context.store.transition(
      job.id,
      { state: "submitting", leaseOwner: context.owner },
      to,
      { error: { code, message, ...(detail !== undefined && detailInError ? { detail } : {}) }, leaseOwner: null, leaseExpiresAt: null, reason: message },
      message,
      context.clock.now(),
      detail,
    ),
  );
  if (moved) context.emit(moved);
  context.wake();
}

/**
 * A routed job whose target failed before accepting it, again: moved to the
 * next target once the failures have lasted the fallback bound (an outage),
 * or once the target is given up on (`givenUp`: tries exhausted). Otherwise
 * the route's record of when the failures started, for the caller's requeue.
 * Undefined for a job without a target left.
 */
async function outageFallover(context: EngineContext, job: Job, now: number, why: string, givenUp: boolean): Promise<{ movedOn: boolean; route?: Job["route"] }> {
  if (!job.route || job.route.next.length === 0) return { movedOn: false };
  const failingSince = job.route.failingSince ?? now;
  if (givenUp || now - failingSince >= context.fallbackAfterMs) {
    const lasted = Math.round((now - failingSince) / 1000);
    if (await fallOver(context, job, "submitting", givenUp ? why : `${why} (failing for ${lasted} s, longer than the fallback bound of ${Math.round(context.fallbackAfterMs / 1000)} s)`)) {
      return { movedOn: true };
    }
  }
  return { movedOn: false, route: { ...job.route, failingSince } };
}

/** What a failed submit means for the job: back to the queue, failed, unknown, or (routed, refused before accepting) the next target. Never an immediate resend. */
export async function handleSubmitFailure(context: EngineContext, job: Job, error: unknown, idempotent: boolean): Promise<void> {
  const now = context.clock.now();
  const backoff = () => now + fullJitterBackoffMs(job.attempts, { baseMs: 1_000, capMs: 60_000 });

  if (error instanceof InputError) {
    await fail(context, job, "failed", error.code, error.message, { field: error.field });
    return;
  }
  if (error instanceof RequestNotSentError && error.permanent) {
    // fetch refuses the address itself (a blocked port, a malformed URL): no later try can reach the provider.
    await fail(context, job, "failed", error.code, `not sent, not charged: ${error.message}`);
    return;
  }
  if (error instanceof RequestNotSentError) {
    // Nothing left (the rate-token wait failed or the engine is stopping): queue it again as it was.
    await requeue(context, job, context.stopWaiting.aborted ? now : backoff(), `not sent: ${error.message}`);
    return;
  }
  if (error instanceof TransportError && !error.maybeSent) {
    const provider = job.provider.toUpperCase();
    const outage = await outageFallover(context, job, now, `${provider} unreachable (${error.message}), nothing sent`, job.attempts >= MAX_SUBMIT_ATTEMPTS);
    if (outage.movedOn) return;
    if (job.attempts >= MAX_SUBMIT_ATTEMPTS) {
      await fail(context, job, "failed", "provider_unreachable", `not sent, not charged: ${provider} could not be reached in ${job.attempts} tries (last: ${error.message})`);
      return;
    }
    // Said in the job's reason (progress bars, `mediagate show`, worker lines) and in the log: a silent wait looks like a hang.
    const nextTryAt = backoff();
    const reason = `${provider} unreachable (${error.message}); try ${job.attempts} of ${MAX_SUBMIT_ATTEMPTS} failed, next try in ${Math.max(1, Math.round((nextTryAt - now) / 1000))} s, at ${new Date(nextTryAt).toISOString().slice(11, 19)} UTC`;
    context.log.warn({ jobId: job.id, provider: job.provider, attempt: job.attempts, nextTryAt: new Date(nextTryAt).toISOString() }, reason);
    await requeue(context, job, nextTryAt, reason, undefined, outage.route ? { route: outage.route } : {});
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
      await persist(context, job, `${job.provider.toUpperCase()} pushed back on its slots`, async () => {
        await context.store.slotPushback(job.slotsHeld, blockedUntil, now);
        return true;
      });
      await requeue(context, job, blockedUntil, `provider at capacity (${error.code}); waiting for a slot`, detail, { newKey });
      return;
    }
    if (error.detail.haltsProvider) {
      await persist(context, job, `${job.provider.toUpperCase()} must be halted (${error.code})`, async () => {
        await context.store.haltProvider({ provider: job.provider, code: error.code, message: error.message, jobId: job.id, at: now });
        context.haltsChanged();
        return true;
      });
      // Refused before accepting (no credits, a refused key): nothing was charged, so the next target may take it.
      if (await fallOver(context, job, "submitting", `${job.provider.toUpperCase()} refused it before accepting (${error.code}: ${error.message})`, detail)) return;
      await fail(context, job, "failed", error.code, error.message, detail);
      return;
    }
    if (error.detail.retryable) {
      const outage = await outageFallover(context, job, now, `${job.provider.toUpperCase()} answered ${error.code} before accepting`, job.attempts >= MAX_SUBMIT_ATTEMPTS);
      if (outage.movedOn) return;
      if (job.attempts < MAX_SUBMIT_ATTEMPTS) {
        const at = error.detail.retryAfterMs !== undefined ? now + error.detail.retryAfterMs : backoff();
        await requeue(context, job, at, `provider error ${error.code}, retrying later`, detail, { newKey, ...(outage.route ? { route: outage.route } : {}) });
        return;
      }
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

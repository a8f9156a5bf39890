import { fullJitterBackoffMs } from "../core/backoff.js";
import { deadlineWords } from "./deadlines.js";
import { ProviderError } from "../core/errors.js";
import type { Job } from "../core/job.js";
import { redactDeep } from "../core/redact.js";
import type { ProviderStatus, Submitted } from "../providers/adapter.js";
import { TransportError } from "../providers/http.js";
import { captureOutputs } from "./capture.js";
import { chargeAtEnd } from "./charge.js";
import { fallOver } from "./fallover.js";
import { type EngineContext, limitsOf, validatedOf } from "./context.js";

/**
 * Consecutive failed polls after which a job is given up as `tracking_failed`
 * when it has no tracking deadline. With one, failures that say nothing about
 * the job (the provider unreachable, 5xx, 429) never end it before the
 * deadline: a provider outage must not lose a job that was accepted and paid.
 */
const MAX_POLL_FAILURES = 8;
/** The longest wait between polls while the provider keeps failing. */
const POLL_FAILURE_BACKOFF_CAP_MS = 60_000;

/**
 * The charge of a job the provider accepted but that was never seen to end:
 * not recorded (nothing says what it cost), yet its budget keeps holding the
 * estimate, and summaries count it apart as possibly charged.
 */
export const UNKNOWN_CHARGE = "unknown: the provider accepted the job and may charge it; it was not seen to finish";

/**
 * Answers that are not a status the spec shows (or that say the provider does
 * not know the task) end a running job once they have come in a row for this
 * long, at least `UNRECOGNISED_MIN_READS` times: a provider that restarted and
 * lost its tasks must not hold their slots until the tracking deadline.
 */
const UNRECOGNISED_LIMIT_MS = 90_000;
const UNRECOGNISED_MIN_READS = 3;
/** How often such a job is read meanwhile (so the job ends within two minutes of the first such answer). */
const UNRECOGNISED_READ_EVERY_MS = 10_000;

/** When this engine first saw each running job answer unrecognised, and how often since: in memory (a restart starts the count again). */
const unrecognisedByEngine = new WeakMap<EngineContext, Map<string, { since: number; reads: number }>>();

function unrecognisedOf(context: EngineContext): Map<string, { since: number; reads: number }> {
  let seen = unrecognisedByEngine.get(context);
  if (!seen) unrecognisedByEngine.set(context, (seen = new Map()));
  return seen;
}

/**
 * Counts one unrecognised answer for a running job and ends the job when they
 * have lasted the bound: failed (`task_lost` or `unrecognised_status`), its
 * slot freed, never resubmitted, its charge unknown (it may have been paid:
 * its budget keeps holding the estimate). True when the job was ended.
 */
async function endIfLost(context: EngineContext, job: Job, seen: { said: string; taskUnknown: boolean }, providerStatus: string | null, now: number): Promise<boolean> {
  const tally = unrecognisedOf(context);
  const entry = tally.get(job.id) ?? { since: now, reads: 0 };
  entry.reads++;
  tally.set(job.id, entry);
  if (entry.reads < UNRECOGNISED_MIN_READS || now - entry.since < UNRECOGNISED_LIMIT_MS) return false;
  tally.delete(job.id);
  const name = job.provider.toUpperCase();
  const message =
    `${seen.said} on ${entry.reads} reads over ${Math.round((now - entry.since) / 1_000)} s: ` +
    `${seen.taskUnknown ? `${name} no longer knows the task` : `not a status ${name}'s documentation shows`}; ` +
    "ended without sending it again (it may have been paid: its estimate stays counted against its budget)";
  const moved = await context.store.transition(
    job.id,
    { state: "running", leaseOwner: context.owner },
    "failed",
    {
      ...(providerStatus !== null ? { providerStatus } : {}),
      error: { code: seen.taskUnknown ? "task_lost" : "unrecognised_status", message },
      leaseOwner: null,
      leaseExpiresAt: null,
      reason: message,
      chargeSource: UNKNOWN_CHARGE,
    },
    message,
    now,
  );
  if (moved) context.emit(moved);
  context.wake();
  return true;
}

export function submittedOf(job: Job): Submitted {
  return { providerJobId: job.providerJobId ?? "", handles: job.handles ?? {} };
}

/** One poll of a running job (or of a capturing job whose result links must be fetched again). */
/**
 * A running job past its deadline (`cancel_after_s`), at a provider that
 * publishes a cancel (E): cancelled there, then here, so no more polls are
 * spent on it. A cancel that fails leaves it tracked to its end (it may be
 * paid; its result is kept), tried again at its next read. Where the
 * provider publishes no cancel, the job runs to its end; its view says
 * `deadline_missed`.
 */
async function cancelAtProviderPastDeadline(context: EngineContext, job: Job, request: ReturnType<typeof validatedOf>): Promise<boolean> {
  const { store, clock, owner } = context;
  const provider = job.provider.toUpperCase();
  const words = deadlineWords(job.deadlineAt!, true);
  try {
    const call = await context.callContext(job, request, { step: "cancel" });
    await context.adapter(job.provider).cancel!(submittedOf(job), call);
  } catch (error) {
    context.log.warn({ jobId: job.id, provider: job.provider, err: error instanceof Error ? error.message : String(error) }, `${words}; its cancel at ${provider} failed, so it is tracked on and tried again at its next read`);
    return false;
  }
  const reason = `${words}: cancelled at ${provider}`;
  const moved = await store.transition(job.id, { state: "running", leaseOwner: owner }, "cancelled", { error: { code: "deadline", message: reason }, reason, leaseOwner: null, leaseExpiresAt: null }, reason, clock.now(), {
    deadline_at: new Date(job.deadlineAt!).toISOString(),
  });
  if (moved) context.emit(moved);
  context.wake();
  return true;
}

export async function trackJob(context: EngineContext, job: Job): Promise<void> {
  const { store, clock, owner } = context;
  const adapter = context.adapter(job.provider);
  const request = validatedOf(job);
  const limits = limitsOf(context, job);
  const now = clock.now();

  if (job.state === "running" && job.trackingDeadlineAt !== null && now > job.trackingDeadlineAt) {
    const message = `still not finished ${Math.round((now - (job.submittedAt ?? now)) / 1000)} s after submit (last status ${job.providerStatus ?? "unknown"}); giving up tracking`;
    const moved = await store.transition(job.id, { state: "running", leaseOwner: owner }, "failed",
      { error: { code: "tracking_deadline_exceeded", message }, leaseOwner: null, leaseExpiresAt: null, reason: message, chargeSource: UNKNOWN_CHARGE }, message, now);
    if (moved) context.emit(moved);
    context.wake();
    return;
  }

  if (job.state === "running" && job.deadlineAt !== null && now >= job.deadlineAt && adapter.cancel && job.providerJobId) {
    if (await cancelAtProviderPastDeadline(context, job, request)) return;
  }

  // A verified webhook's status stands in for one poll; otherwise ask the provider.
  let status: ProviderStatus | undefined = job.state === "running" ? context.takeKnownStatus(job.id) : undefined;
  if (!status) {
    try {
      const call = await context.callContext(job, request);
      context.counters(job.provider).polls++;
      const startedAt = clock.now();
      // The answer is kept (error detail, event log): a secret the provider quotes in it is removed first.
      status = redactDeep(await context.timed(job.provider, "poll", () => adapter.poll(submittedOf(job), call)), (text) => call.http.redact(text));
      // What is learned is when the poll left (after its rate token), not when its step started: a busy loop or a
      // wait for the token sends it later, and a job found done only because its poll went out late must not pull
      // the first poll earlier than the render takes.
      const sentAt = call.http.lastSentAt ?? startedAt;
      context.polls.answered(job.id, status.kind === "pending", sentAt - (job.submittedAt ?? sentAt), sentAt - (job.submitSentAt ?? job.submittedAt ?? sentAt));
    } catch (error) {
      await handlePollFailure(context, job, error);
      return;
    }
  }
  const after = clock.now();
  const elapsed = after - (job.submittedAt ?? after);

  switch (status.kind) {
    case "pending": {
      if (job.state === "capturing") {
        // Resumed capture, yet the provider says it is not done: wait and read again.
        await store.updateJob(job.id, { state: "capturing", leaseOwner: owner }, { nextAttemptAt: after + limits.poll.maxIntervalMs, providerStatus: status.providerStatus }, after);
        return;
      }
      if (status.unrecognised) {
        if (await endIfLost(context, job, status.unrecognised, status.providerStatus, after)) return;
      } else {
        unrecognisedOf(context).delete(job.id);
      }
      if (status.holdsSlot === false && job.slotsHeld.length > 0) {
        // The provider released the slot while the job keeps working (C after ten minutes).
        await store.releaseSlots(job.id, after);
        context.wake();
      }
      const delay = status.unrecognised ? UNRECOGNISED_READ_EVERY_MS : await context.polls.nextDelay(job, elapsed, limits);
      const updated = await store.updateJob(
        job.id,
        { state: "running", leaseOwner: owner },
        {
          providerStatus: status.providerStatus,
          lastPendingElapsedMs: elapsed,
          nextAttemptAt: after + delay,
          pollFailures: 0,
          reason: `provider status ${status.providerStatus}`,
        },
        after,
      );
      if (updated && updated.providerStatus !== job.providerStatus) context.emit(updated);
      return;
    }
    case "succeeded": {
      let capturing = job;
      if (job.state === "running") {
        context.polls.record(job.provider, job.model, { doneElapsedMs: elapsed, pendingElapsedMs: job.lastPendingElapsedMs });
        const moved = await store.transition(
          job.id,
          { state: "running", leaseOwner: owner },
          "capturing",
          // This answer ends any run of failed polls: the capture's own attempts count from zero.
          { providerStatus: status.providerStatus, providerDoneAt: after, pollFailures: 0, reason: "saving results" },
          `provider reported ${status.providerStatus}`,
          after,
          { outputs: status.outputs.length, usage: status.usage },
        );
        if (!moved) return;
        capturing = moved;
        context.emit(moved);
        context.wake(); // its slot is free
      }
      await captureOutputs(context, capturing, status);
      return;
    }
    case "failed":
    case "cancelled":
    case "expired": {
      const to = status.kind === "failed" ? "failed" : status.kind;
      const code = status.kind === "failed" ? status.code : status.kind === "expired" ? "provider_expired" : "provider_cancelled";
      let message = status.kind === "failed" ? status.message : `provider reported ${status.providerStatus}`;
      // A capturing job was reported done, so it was charged as a success: a later read that says otherwise
      // (the task expired or was removed before its result was saved) does not undo that charge.
      const charged = job.state === "capturing" ? await succeededOutcome(context, job, status.raw) : status;
      if (status.kind === "failed" && job.state === "running" && job.route?.fallbackOnFailure && job.route.next.length > 0) {
        // fallback_on_failure: the generation failed after the provider accepted it. The job counts one charge and its
        // budget holds this attempt's estimate until its charge is known, so it moves on only when this attempt is known
        // to have cost nothing (no settlement to wait for, charge 0); otherwise the next target could pass the budget.
        const cost = adapter.settle ? null : adapter.charge(request, status).microUsd;
        if (cost === 0 && (await fallOver(context, job, "running", `${job.provider.toUpperCase()} failed the generation (${code}: ${message}), which cost nothing; fallback_on_failure`, { raw: status.raw }))) {
          return;
        }
        message = `${message}; not moved to ${job.route.next[0]!.name}: ${adapter.settle ? `${job.provider.toUpperCase()} settles its charge later` : `whether ${job.provider.toUpperCase()} charges a failed generation is not known`}, and a second attempt could be paid on top of it`;
      }
      const charge = chargeAtEnd(adapter, request, charged, job, after);
      const target = job.state === "capturing" ? "failed" : to;
      const moved = await store.transition(
        job.id,
        { state: job.state, leaseOwner: owner },
        target,
        {
          providerStatus: status.providerStatus,
          providerDoneAt: after,
          error: { code, message, detail: status.raw },
          ...charge.patch,
          leaseOwner: null,
          leaseExpiresAt: null,
          reason: message,
        },
        message,
        after,
        { raw: status.raw },
        charge.extras,
      );
      if (moved) context.emit(moved);
      context.wake();
      return;
    }
  }
}

/**
 * The success a capturing job was moved on, rebuilt from its `capturing`
 * event (the outputs' count and the usage the provider reported then): what
 * its charge is computed from when the result can no longer be read.
 */
async function succeededOutcome(context: EngineContext, job: Job, raw: unknown): Promise<ProviderStatus> {
  const events = await context.store.events(job.id);
  const reported = events.findLast((event) => event.toState === "capturing")?.detail as { usage?: unknown } | null | undefined;
  return { kind: "succeeded", providerStatus: job.providerStatus ?? "succeeded", outputs: [], usage: reported?.usage, raw };
}

async function handlePollFailure(context: EngineContext, job: Job, error: unknown): Promise<void> {
  const { store, clock, owner } = context;
  if (context.signal.aborted) return; // stopping: the next engine polls again
  const now = clock.now();
  if (job.state === "running" && error instanceof ProviderError && error.detail.taskUnknown) {
    // Not a failed poll: an answer, saying the task is unknown. Counted apart, and bounded in time.
    if (await endIfLost(context, job, { said: error.message, taskUnknown: true }, null, now)) return;
    const reading = await store.updateJob(
      job.id,
      { state: "running", leaseOwner: owner },
      { nextAttemptAt: now + UNRECOGNISED_READ_EVERY_MS, reason: `${error.message}; reading again` },
      now,
    );
    if (reading) context.emit(reading);
    return;
  }
  const failures = job.pollFailures + 1;
  const retryable =
    error instanceof TransportError || (error instanceof ProviderError && (error.detail.retryable || error.detail.backpressure === true));
  const message = error instanceof Error ? error.message : String(error);
  const withinDeadline = job.trackingDeadlineAt !== null && now < job.trackingDeadlineAt;
  if ((!retryable && failures >= 3) || (retryable && !withinDeadline && failures >= MAX_POLL_FAILURES)) {
    const code = error instanceof ProviderError ? error.code : "tracking_failed";
    // A running job was never seen to end: its charge is unknown. A capturing one was reported done: charged as a success.
    const charge = job.state === "capturing"
      ? chargeAtEnd(context.adapter(job.provider), validatedOf(job), await succeededOutcome(context, job, null), job, now)
      : { patch: { chargeSource: UNKNOWN_CHARGE }, extras: {} };
    const moved = await store.transition(
      job.id,
      { state: job.state, leaseOwner: owner },
      "failed",
      {
        ...charge.patch,
        error: { code, message: `tracking failed after ${failures} attempts: ${message}`, ...(error instanceof ProviderError ? { detail: error.detail } : {}) },
        leaseOwner: null,
        leaseExpiresAt: null,
      },
      `tracking failed: ${message}`,
      now,
      undefined,
      charge.extras,
    );
    if (moved) context.emit(moved);
    context.wake();
    return;
  }
  const wait = error instanceof ProviderError && error.detail.retryAfterMs !== undefined
    ? error.detail.retryAfterMs
    : fullJitterBackoffMs(failures, { baseMs: 1_000, capMs: POLL_FAILURE_BACKOFF_CAP_MS });
  const retrying = await store.updateJob(
    job.id,
    { state: job.state, leaseOwner: owner },
    { nextAttemptAt: now + wait, pollFailures: failures, reason: `poll failed (${message}); retrying` },
    now,
  );
  // Listeners (progress, the server) see the failed poll and when the next one is, not only the store.
  if (retrying) context.emit(retrying);
}

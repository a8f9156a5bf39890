import type { Job, JobRoute } from "../core/job.js";
import type { EngineContext } from "./context.js";

/**
 * Moves a routed job to the next target of its route (issue 11): a new
 * attempt, with the body, facts and estimate that target was validated and
 * estimated with before anything was sent, and the target left recorded in
 * the route's `tried` and in the job's event log with why. Returns false when
 * the job has no target left (the caller ends it as it would without a route)
 * or when another engine moved it first.
 *
 * Only called where nothing was accepted (a refusal before accepting: no
 * credits, a halt, an outage, 5xx after retries), or after a generation failed
 * whose attempt is known to have cost nothing (`fallback_on_failure`): the job
 * row counts one charge, and an attempt that charged must keep it.
 */
export async function fallOver(context: EngineContext, job: Job, from: "queued" | "submitting" | "running", why: string, detail?: unknown): Promise<boolean> {
  const route = job.route;
  const next = route?.next[0];
  if (!route || !next) return false;
  const now = context.clock.now();
  const moved: JobRoute = {
    ...route,
    current: next.name,
    next: route.next.slice(1),
    tried: [...route.tried, { name: route.current, provider: job.provider, model: job.model, providerJobId: job.providerJobId, reason: why, at: now }],
    failingSince: null,
  };
  const reason = `handed from ${route.current} to ${next.name}: ${why}`;
  // It joins the end of its tenant's line at the next target (its queue position, issue 37).
  const queueRank = await context.store.nextQueueRank(next.provider, job.tenant);
  const updated = await context.store.transition(
    job.id,
    // A queued job has no lease that tells another engine moved it meanwhile (two engines rerouting one halted
    // provider's page): the target it is still on does, so a stale copy never moves it back.
    { ...(from === "queued" ? { state: "queued", leaseOwner: null } : { state: from, leaseOwner: context.owner }), target: { provider: job.provider, model: job.model } },
    "queued",
    {
      provider: next.provider,
      model: next.model,
      operation: next.operation,
      body: next.body,
      facts: next.facts,
      warnings: next.warnings,
      estimateMicroUsd: next.estimateMicroUsd,
      estimateSource: next.estimateSource,
      route: moved,
      attempts: 0,
      idempotencyKey: null,
      providerJobId: null,
      handles: null,
      providerStatus: null,
      submittedAt: null,
      submitSentAt: null,
      trackingDeadlineAt: null,
      lastPendingElapsedMs: null,
      pollFailures: 0,
      error: null,
      blockedCode: null,
      leaseOwner: null,
      leaseExpiresAt: null,
      nextAttemptAt: now,
      queueRank,
      reason,
    },
    reason,
    now,
    { fallover: { from: route.current, to: next.name, why, ...(detail !== undefined ? { detail } : {}) } },
  );
  if (!updated) return false;
  context.log.warn({ jobId: job.id, from: route.current, to: next.name }, reason);
  context.emit(updated);
  context.wake();
  return true;
}

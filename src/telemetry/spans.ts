import type { Attributes } from "@opentelemetry/api";
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
} from "@opentelemetry/semantic-conventions";
import type { JobEvent } from "../core/job.js";
import type { JobEnd, ProviderStep, TracedJob } from "../core/tracing.js";

/**
 * What each span of a job says: names and attributes (issue 37, part 3; the
 * README's "Traces" lists them). Never a secret: no key, token, notify URL,
 * store address or request body, and a URL only as origin and path (signed
 * result links carry their signature in the query string).
 */

export const JOB_SPAN = "mediagate.job";
export const STATE_EVENT = "mediagate.job.state";

// The GenAI conventions are still in development, so their names are written here rather than imported from the
// package's unstable entry point (its own advice). `image_generation` and `video_generation` are not among the
// conventions' `gen_ai.operation.name` values yet: they are ours, named in the conventions' style.
const GEN_AI_PROVIDER_NAME = "gen_ai.provider.name";
const GEN_AI_REQUEST_MODEL = "gen_ai.request.model";
const GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
const GEN_AI_OUTPUT_TYPE = "gen_ai.output.type";

/** The span name of a provider request made for `step`. */
export function requestSpanName(step: ProviderStep): string {
  return `mediagate.provider.${step}`;
}

export function requestAttributes(job: TracedJob, step: ProviderStep, method: string, url: string): Attributes {
  const attributes: Attributes = {
    [ATTR_HTTP_REQUEST_METHOD]: method,
    "mediagate.job.id": job.id,
    "mediagate.provider.step": step,
    [GEN_AI_PROVIDER_NAME]: job.provider,
  };
  if (URL.canParse(url)) {
    const parsed = new URL(url);
    attributes[ATTR_SERVER_ADDRESS] = parsed.hostname;
    attributes[ATTR_SERVER_PORT] = Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
    attributes[ATTR_URL_FULL] = `${parsed.origin}${parsed.pathname}`;
  }
  return attributes;
}

export function answerAttributes(outcome: { status: number } | { error: unknown }): Attributes {
  if ("status" in outcome) {
    return { [ATTR_HTTP_RESPONSE_STATUS_CODE]: outcome.status, ...(outcome.status >= 400 ? { [ATTR_ERROR_TYPE]: String(outcome.status) } : {}) };
  }
  // The error's stable code or class name, never its message (which may quote an address).
  const error = outcome.error as { code?: unknown; name?: unknown } | null;
  const type = typeof error?.code === "string" ? error.code : typeof error?.name === "string" ? error.name : "_OTHER";
  return { [ATTR_ERROR_TYPE]: type };
}

export function webhookAttributes(job: TracedJob, delivery: { method: string; host: string | null; path: string; status: number; outcome: string }): Attributes {
  return {
    [ATTR_HTTP_REQUEST_METHOD]: delivery.method,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: delivery.status,
    ...(delivery.host ? { [ATTR_SERVER_ADDRESS]: delivery.host.replace(/:\d+$/, "") } : {}),
    [ATTR_URL_PATH]: delivery.path.split("?")[0]!,
    "mediagate.job.id": job.id,
    "mediagate.webhook.outcome": delivery.outcome,
    [GEN_AI_PROVIDER_NAME]: job.provider,
  };
}

/** The job span's attributes, read from the job at its end and its event log. */
export function jobAttributes({ job, events, outputType }: JobEnd): Attributes {
  const attributes: Attributes = {
    "mediagate.job.id": job.id,
    "mediagate.job.ref": job.ref,
    "mediagate.job.state": job.state,
    [GEN_AI_PROVIDER_NAME]: job.provider,
    [GEN_AI_REQUEST_MODEL]: job.model,
    "mediagate.queue.wait_ms": queueWaitMs(job.createdAt, job.finishedAt ?? job.updatedAt, events),
  };
  if (job.batchId !== null) attributes["mediagate.batch.id"] = job.batchId;
  if (outputType) {
    attributes[GEN_AI_OPERATION_NAME] = `${outputType}_generation`;
    attributes[GEN_AI_OUTPUT_TYPE] = outputType;
  }
  // The charge once known (computed, or settled by the provider), else the estimate made at admission.
  const cost = job.chargeMicroUsd ?? job.estimateMicroUsd;
  if (cost === null) attributes["mediagate.cost.unpriced"] = true;
  else {
    attributes["mediagate.cost.micro_usd"] = cost;
    attributes["mediagate.cost.source"] = job.chargeMicroUsd !== null ? "charge" : "estimate";
  }
  if (job.error) attributes[ATTR_ERROR_TYPE] = job.error.code;
  return attributes;
}

/** How long the job waited in the queue: from its admission until it was first claimed to be sent (or ended, never sent). */
export function queueWaitMs(createdAt: number, endedAt: number, events: readonly JobEvent[]): number {
  const claimed = events.find((event) => event.fromState === "queued" && event.toState !== "queued");
  return Math.max(0, (claimed?.at ?? endedAt) - createdAt);
}

/** One span event per change of state, at the time it was stored: the event log's transitions (not its notes). */
export function stateEvents(events: readonly JobEvent[]): Array<{ at: number; attributes: Attributes }> {
  return events
    .filter((event) => event.fromState !== event.toState)
    .map((event) => ({
      at: event.at,
      attributes: { "mediagate.job.state": event.toState, ...(event.fromState ? { "mediagate.job.previous_state": event.fromState } : {}) },
    }));
}

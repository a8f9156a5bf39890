import { describe, expect, it } from "vitest";
import type { Job, JobEvent } from "../../src/core/job.js";
import { answerAttributes, jobAttributes, queueWaitMs, requestAttributes, stateEvents } from "../../src/telemetry/spans.js";

const TRACE = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", parentSpanId: null };

/** An A video that failed after it was sent, unpriced (A publishes no price): the fields the job span reads. */
function failedAJob(overrides: Partial<Job> = {}): Job & { trace: typeof TRACE } {
  return {
    id: "job_1",
    ref: "kite",
    batchId: "batch_7",
    provider: "a",
    model: "vidgen-2-0-250601",
    state: "failed",
    estimateMicroUsd: null,
    chargeMicroUsd: null,
    error: { code: "generation_failed", message: "the provider said no" },
    createdAt: 1_000,
    updatedAt: 9_000,
    finishedAt: 9_000,
    trace: TRACE,
    ...overrides,
  } as Job & { trace: typeof TRACE };
}

const event = (at: number, fromState: JobEvent["fromState"], toState: JobEvent["toState"]): JobEvent => ({ id: at, jobId: "job_1", at, fromState, toState, reason: "", detail: null });

describe("what a job's spans say (src/telemetry/spans.ts)", () => {
  it("a job with neither charge nor estimate is mediagate.cost.unpriced, with no amount; its error code is error.type; its batch is named", () => {
    const attributes = jobAttributes({ job: failedAJob(), events: [], outputType: "video" });
    expect(attributes["mediagate.cost.unpriced"]).toBe(true);
    expect(attributes["mediagate.cost.micro_usd"]).toBeUndefined();
    expect(attributes["error.type"]).toBe("generation_failed");
    expect(attributes["mediagate.batch.id"]).toBe("batch_7");
    expect(attributes["gen_ai.operation.name"]).toBe("video_generation");
  });

  it("the cost is the charge once known, else the estimate, and says which", () => {
    expect(jobAttributes({ job: failedAJob({ estimateMicroUsd: 30_000 }), events: [], outputType: null })).toMatchObject({ "mediagate.cost.micro_usd": 30_000, "mediagate.cost.source": "estimate" });
    expect(jobAttributes({ job: failedAJob({ estimateMicroUsd: 30_000, chargeMicroUsd: 28_000 }), events: [], outputType: null })).toMatchObject({ "mediagate.cost.micro_usd": 28_000, "mediagate.cost.source": "charge" });
  });

  it("a job whose output type is not known has no gen_ai.operation.name rather than a guess", () => {
    const attributes = jobAttributes({ job: failedAJob(), events: [], outputType: null });
    expect(attributes["gen_ai.operation.name"]).toBeUndefined();
    expect(attributes["gen_ai.output.type"]).toBeUndefined();
  });

  it("queue wait: admission to the first claim; a job never sent waited until its end", () => {
    expect(queueWaitMs(1_000, 9_000, [event(1_000, null, "queued"), event(1_400, "queued", "submitting"), event(2_000, "submitting", "queued"), event(3_000, "queued", "submitting")])).toBe(400);
    expect(queueWaitMs(1_000, 5_000, [event(1_000, null, "queued"), event(5_000, "queued", "cancelled")])).toBe(4_000);
    expect(queueWaitMs(1_000, 1_000, [])).toBe(0);
  });

  it("one state event per transition of the log, none for its notes (a delivery attempt is an event without a change of state)", () => {
    const events = stateEvents([event(1_000, null, "queued"), event(1_400, "queued", "submitting"), event(1_500, "submitting", "submitting"), event(2_000, "submitting", "failed")]);
    expect(events).toEqual([
      { at: 1_000, attributes: { "mediagate.job.state": "queued" } },
      { at: 1_400, attributes: { "mediagate.job.state": "submitting", "mediagate.job.previous_state": "queued" } },
      { at: 2_000, attributes: { "mediagate.job.state": "failed", "mediagate.job.previous_state": "submitting" } },
    ]);
  });

  it("a request's URL is kept as origin and path: no query string, no user or password", () => {
    const attributes = requestAttributes({ id: "job_1", provider: "d", trace: TRACE }, "download", "GET", "https://user:pw@results.example:8443/sample/abc.png?expires=1&sig=deadbeef#frag");
    expect(attributes).toMatchObject({ "url.full": "https://results.example:8443/sample/abc.png", "server.address": "results.example", "server.port": 8443, "http.request.method": "GET" });
    expect(JSON.stringify(attributes)).not.toMatch(/sig=|pw|user/);
  });

  it("a failed request's error.type is its stable code or class name, never its message", () => {
    expect(answerAttributes({ status: 503 })).toEqual({ "http.response.status_code": 503, "error.type": "503" });
    expect(answerAttributes({ status: 200 })).toEqual({ "http.response.status_code": 200 });
    expect(answerAttributes({ error: Object.assign(new Error("connect ECONNREFUSED 10.0.0.7:443 key=abc"), { code: "ECONNREFUSED" }) })).toEqual({ "error.type": "ECONNREFUSED" });
    expect(answerAttributes({ error: new DOMException("no answer within 30000 ms", "TimeoutError") })).toEqual({ "error.type": "TimeoutError" });
  });
});

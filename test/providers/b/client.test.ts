import { describe, expect, it } from "vitest";
import { OutcomeUnknownError, ProviderError } from "../../../src/core/errors.js";
import type { ValidatedRequest } from "../../../src/providers/adapter.js";
import { createBAdapter } from "../../../src/providers/b/index.js";
import { TransportError } from "../../../src/providers/http.js";
import { providerError } from "../../helpers/errors.js";
import { IMAGE_TO_VIDEO, IMAGE_URL, imageToVideo, KEY, QUEUE_MS, RENDER_MS, startB, thrown, type BBed } from "./bed.js";

const submits = (bed: BBed) => bed.requests().filter((entry) => entry.method === "POST" && entry.url.startsWith("/b/v1/media/"));
const finishRendering = (bed: BBed) => bed.advance(QUEUE_MS + RENDER_MS + 1);

/** A body the catalog refuses, sent as if validated: what B does with it is B's rule, not ours. */
function unchecked(body: Record<string, unknown>): ValidatedRequest {
  return { provider: "b", model: "vendorx/video-2.5", operation: "image-to-video", body, warnings: [], facts: {} };
}

describe("B authentication and paths", () => {
  it("B: every keyed call sends X-API-Key and no other vendor's header style", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    finishRendering(bed);
    await bed.adapter.poll(submitted, context);
    const keyed = bed.requests().filter((entry) => entry.url.startsWith("/b/v1/"));
    expect(keyed.map((entry) => `${entry.method} ${entry.url.split("/").slice(0, 5).join("/")}`)).toEqual([
      "POST /b/v1/media/vendorx",
      "GET /b/v1/media/jobs",
      "GET /b/v1/media/jobs",
    ]);
    for (const entry of keyed) {
      expect(entry.headers["x-api-key"]).toBe(KEY);
      // spec B Authentication 3: never in a URL.
      expect(entry.url).not.toContain(KEY);
      expect(entry.headers.authorization).toBeUndefined();
      expect(Object.keys(entry.headers).filter((name) => /^x-.+-(api-)?key$/.test(name) && name !== "x-api-key")).toEqual([]);
    }
  });

  it("B: submit POSTs the validated JSON body to /v1/media/{vendor}/{model}/{function}", async () => {
    const bed = await startB();
    const { validated, submitted, context } = await bed.submitted(imageToVideo({ seed: 3 }));
    const [submit] = submits(bed);
    expect(submit).toMatchObject({ method: "POST", url: `/b/v1/media/${IMAGE_TO_VIDEO}`, statusCode: 200 });
    expect(submit!.headers["content-type"]).toBe("application/json");
    expect(submit!.headers["idempotency-key"]).toBe(context.job!.idempotencyKey);
    expect(bed.emulator.job(submitted.providerJobId)).toMatchObject({ apiId: IMAGE_TO_VIDEO, body: validated.body, idempotencyKey: context.job!.idempotencyKey, webhookUrl: null });
    expect(submitted.handles).toEqual({ id: submitted.providerJobId, status: "queued", apiId: IMAGE_TO_VIDEO });
  });

  it("B: slashes inside a model are sent literally, never as %2F", async () => {
    const bed = await startB();
    const { submitted } = await bed.submitted({ model: "kestrel/motion/v3", operation: "video-to-video", input: { video: "https://videos.example/a.mp4", prompt: "slow" } });
    expect(submits(bed)[0]!.url).toBe("/b/v1/media/kestrel/motion/v3/video-to-video");
    expect(bed.emulator.job(submitted.providerJobId)!.apiId).toBe("kestrel/motion/v3/video-to-video");
  });

  it("B: a job id handed back is encoded into one path segment", async () => {
    const bed = await startB();
    const error = await providerError(() => bed.adapter.poll({ providerJobId: "a/../b?x=1", handles: {} }, bed.jobContext()));
    expect(bed.requests()[0]!.url).toBe("/b/v1/media/jobs/a%2F..%2Fb%3Fx%3D1");
    expect(error).toMatchObject({ code: "task_not_found" });
    expect(error.detail).toMatchObject({ httpStatus: 404, providerCode: "job_not_found", retryable: false, taskUnknown: true });
  });
});

describe("B idempotency", () => {
  it("B: a submit without an Idempotency-Key is never sent", async () => {
    const bed = await startB();
    const validated = await bed.validated(imageToVideo());
    const error = await providerError(() => bed.adapter.submit(validated, bed.jobContext({ idempotencyKey: null })));
    expect(error.code).toBe("idempotency_key_missing");
    const noJob = await providerError(() => bed.adapter.submit(validated, bed.context));
    expect(noJob.code).toBe("idempotency_key_missing");
    expect(submits(bed)).toHaveLength(0);
  });

  it("B: the same body with the same Idempotency-Key returns the existing job, creating no second one", async () => {
    const bed = await startB();
    const { validated, submitted, context } = await bed.submitted();
    const again = await bed.adapter.submit(validated, context);
    expect(again.providerJobId).toBe(submitted.providerJobId);
    expect(submits(bed)).toHaveLength(2);
    expect(bed.emulator.jobs).toHaveLength(1);
  });

  it("B: an answer lost after sending is resent with the same key and finds the job created", async () => {
    const bed = await startB();
    const validated = await bed.validated(imageToVideo());
    const context = bed.jobContext();
    bed.sandbox.injectFault({ provider: "b", method: "POST", fault: { kind: "drop_after_handling" }, times: 1 });
    const lost = await thrown(() => bed.adapter.submit(validated, context));
    // The engine resends an idempotent provider's submit with the same key (engine/submit.ts).
    expect(lost).toBeInstanceOf(TransportError);
    expect((lost as TransportError).maybeSent).toBe(true);
    expect(bed.emulator.jobs).toHaveLength(1);
    const resent = await bed.adapter.submit(validated, context);
    expect(resent.providerJobId).toBe(bed.emulator.jobs[0]!.id);
    expect(bed.emulator.jobs).toHaveLength(1);
  });

  it("B: a different body with the same key is refused and creates nothing", async () => {
    const bed = await startB();
    const { context } = await bed.submitted();
    const other = await bed.validated(imageToVideo({ resolution: "720p" }));
    const error = await providerError(() => bed.adapter.submit(other, context));
    expect(error.code).toBe("provider_rejected");
    expect(error.detail.retryable).toBe(false);
    expect(bed.emulator.jobs).toHaveLength(1);
  });

  it("B: a failed job is replayed on its original key, so a retry after failure needs a new key", async () => {
    const bed = await startB({ balanceMicroUsd: 0 });
    const validated = await bed.validated(imageToVideo());
    const context = bed.jobContext();
    const first = await providerError(() => bed.adapter.submit(validated, context));
    expect(first.code).toBe("insufficient_balance");
    bed.emulator.balanceMicroUsd = 10_000_000;
    const replayed = await providerError(() => bed.adapter.submit(validated, context));
    expect(replayed.code).toBe("insufficient_balance");
    expect(replayed.message).toContain(bed.emulator.jobs[0]!.id);
    expect(bed.emulator.jobs).toHaveLength(1);
    const fresh = await bed.adapter.submit(validated, bed.jobContext());
    expect(bed.emulator.job(fresh.providerJobId)!.status).toBe("queued");
  });
});

describe("B submit errors", () => {
  it("B: insufficient_balance fails the job and halts the provider", async () => {
    const bed = await startB({ balanceMicroUsd: 100_000 });
    const validated = await bed.validated(imageToVideo());
    const error = await providerError(() => bed.adapter.submit(validated, bed.jobContext()));
    expect(error.code).toBe("insufficient_balance");
    expect(error.detail).toMatchObject({ providerCode: "insufficient_balance", haltsProvider: true, retryable: false, httpStatus: 200 });
  });

  it("B: a rejected submission (a failed job object) is a ProviderError that branches on error.code", async () => {
    const bed = await startB();
    const error = await providerError(() => bed.adapter.submit(unchecked({ image: IMAGE_URL, resolution: "4k", duration_s: 5 }), bed.jobContext()));
    expect(error.code).toBe("provider_rejected");
    expect(error.detail).toMatchObject({ providerCode: "invalid_request", retryable: false });
    expect(error.detail.haltsProvider).toBeUndefined();
    // The message is diagnostic: kept, never branched on.
    expect(error.message).toContain("resolution");
  });

  it("B: a rejected job object is read whatever the HTTP status it comes with", async () => {
    const bed = await startB({ rejectedSubmitStatus: 402, balanceMicroUsd: 0 });
    const validated = await bed.validated(imageToVideo());
    const error = await providerError(() => bed.adapter.submit(validated, bed.jobContext()));
    expect(error.code).toBe("insufficient_balance");
    expect(error.detail).toMatchObject({ httpStatus: 402, haltsProvider: true });
  });

  it("B: 429 is back-pressure with the wait from Retry-After, never an immediate resend", async () => {
    const bed = await startB({ concurrencyLimit: 1 });
    await bed.submitted();
    const validated = await bed.validated(imageToVideo({ resolution: "720p" }));
    const error = await providerError(() => bed.adapter.submit(validated, bed.jobContext()));
    const answer = submits(bed)[1]!;
    expect(answer.statusCode).toBe(429);
    expect(error.code).toBe("rate_limited");
    expect(error.detail).toMatchObject({ httpStatus: 429, backpressure: true, retryable: true, providerCode: "concurrency_limit_exceeded" });
    // Retry-After is whole seconds until the running job ends (queue + render).
    expect(error.detail.retryAfterMs).toBe(Math.ceil((QUEUE_MS + RENDER_MS) / 1000) * 1000);
    expect(submits(bed)).toHaveLength(2);
    expect(bed.emulator.rejected429Count).toBe(1);
  });

  it("B: a 5xx answer to a submit is retryable: resending with the same key cannot create a second job", async () => {
    const bed = await startB();
    const validated = await bed.validated(imageToVideo());
    const context = bed.jobContext();
    bed.sandbox.injectFault({ provider: "b", method: "POST", fault: { kind: "status", status: 503, body: "busy" }, times: 1 });
    const error = await providerError(() => bed.adapter.submit(validated, context));
    expect(error.code).toBe("provider_unavailable");
    expect(error.detail.retryable).toBe(true);
    // Sent once by the adapter: resending is the engine's decision.
    expect(submits(bed)).toHaveLength(1);
    await bed.adapter.submit(validated, context);
    expect(bed.emulator.jobs).toHaveLength(1);
  });

  it("B: a 2xx answer that is not a job object leaves the outcome unknown (resent with the same key)", async () => {
    const bed = await startB();
    const validated = await bed.validated(imageToVideo());
    bed.sandbox.injectFault({ provider: "b", method: "POST", fault: { kind: "status", status: 200, body: { accepted: true } }, times: 1 });
    expect(await thrown(() => bed.adapter.submit(validated, bed.jobContext()))).toBeInstanceOf(OutcomeUnknownError);
  });

  it("B: a wrong key is refused with a hint to the variable and the header", async () => {
    const bed = await startB({}, { apiKey: "not-the-key" });
    const validated = await bed.validated(imageToVideo());
    const error = await providerError(() => bed.adapter.submit(validated, bed.jobContext()));
    expect(error.detail).toMatchObject({ httpStatus: 401, retryable: false });
    expect(error.message).toContain("MEDIAGATE_B_API_KEY");
    expect(error.message).not.toContain("not-the-key");
  });
});

describe("B webhook_url on submit", () => {
  const SECRET = `whsec_${Buffer.from("a test secret for provider b!!").toString("base64")}`;

  it("B: webhook_url goes at the top level of the submit body when the job has a callback URL", async () => {
    const bed = await startB({ allowLocalWebhookUrls: true }, { webhookSecret: SECRET });
    const callbackUrl = "http://127.0.0.1:9/webhooks/b/job-1";
    const { validated, submitted } = await bed.submitted(imageToVideo(), { callbackUrl });
    expect(bed.emulator.job(submitted.providerJobId)).toMatchObject({ webhookUrl: callbackUrl, body: validated.body });
    expect(validated.body).not.toHaveProperty("webhook_url");
  });

  it("B: no webhook_url is requested when no webhook secret is configured (deliveries could not be verified)", async () => {
    const bed = await startB({ allowLocalWebhookUrls: true });
    expect(bed.adapter.webhooks).toBeUndefined();
    const { submitted } = await bed.submitted(imageToVideo(), { callbackUrl: "http://127.0.0.1:9/webhooks/b/job-1" });
    expect(bed.emulator.job(submitted.providerJobId)!.webhookUrl).toBeNull();
  });

  it("B: a rejected webhook_url answers 400 and fails the submit", async () => {
    const bed = await startB({ allowLocalWebhookUrls: false }, { webhookSecret: SECRET });
    const validated = await bed.validated(imageToVideo());
    const error = await providerError(() => bed.adapter.submit(validated, bed.jobContext({ callbackUrl: "http://127.0.0.1:9/webhooks/b/job-1" })));
    expect(error.code).toBe("webhook_url_rejected");
    expect(error.detail).toMatchObject({ httpStatus: 400, retryable: false });
    expect(bed.emulator.jobs).toHaveLength(0);
  });
});

describe("B job status", () => {
  it("B: queued and running are pending", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    expect(await bed.adapter.poll(submitted, context)).toMatchObject({ kind: "pending", providerStatus: "queued" });
    bed.advance(QUEUE_MS);
    expect(await bed.adapter.poll(submitted, context)).toMatchObject({ kind: "pending", providerStatus: "running" });
  });

  it("B: completed takes the result address from the content call (output.video)", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    finishRendering(bed);
    const status = await bed.adapter.poll(submitted, context);
    if (status.kind !== "succeeded") throw new Error(`expected succeeded, got ${status.kind}`);
    expect(bed.requests().at(-1)!.url).toBe(`/b/v1/media/jobs/${submitted.providerJobId}/content`);
    expect(status.outputs).toHaveLength(1);
    expect(status.outputs[0]!.metadata).toEqual({ mediaType: "video", contentType: "video/mp4" });
    expect(status.usage).toMatchObject({ video_output_tokens: expect.any(Number) });
    const download = await fetch(status.outputs[0]!.url);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("video/mp4");
  });

  it("B: content answering 409 before completion is pending, not an error", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    finishRendering(bed);
    bed.sandbox.injectFault({ provider: "b", method: "GET", path: /\/content$/, fault: { kind: "status", status: 409, body: { error: { code: "job_not_completed" } } }, times: 1 });
    expect(await bed.adapter.poll(submitted, context)).toMatchObject({ kind: "pending", providerStatus: "completed (content not ready)" });
    expect((await bed.adapter.poll(submitted, context)).kind).toBe("succeeded");
  });

  it("B: audio results are read the same way (output.audio)", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted({ model: "vendorx/speech", operation: "text-to-audio", input: { text: "Hello there.", voice: "ember" } });
    finishRendering(bed);
    const status = await bed.adapter.poll(submitted, context);
    expect(status).toMatchObject({ kind: "succeeded", outputs: [{ metadata: { mediaType: "audio" } }] });
  });

  it("B: failed carries error.code; the message is kept as diagnostic text", async () => {
    const bed = await startB();
    bed.emulator.failNextJobs(1, { code: "content_policy", message: "the image was refused" });
    const { submitted, context } = await bed.submitted();
    finishRendering(bed);
    const status = await bed.adapter.poll(submitted, context);
    expect(status).toMatchObject({ kind: "failed", providerStatus: "failed", code: "content_policy", message: "the image was refused" });
    expect(bed.requests().some((entry) => entry.url.endsWith("/content"))).toBe(false);
  });

  it("B: a status the spec does not list is pending, marked unrecognised (issue 36, finding 2), with the raw value kept", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    const raw = { id: submitted.providerJobId, status: "paused", billing: null };
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 200, body: raw }, times: 1 });
    expect(await bed.adapter.poll(submitted, context)).toEqual({
      kind: "pending",
      providerStatus: "paused",
      unrecognised: { said: `B answered status "paused" for job ${submitted.providerJobId}`, taskUnknown: false },
      raw,
    });
  });

  it("B: a 404 on the read of a job B accepted is task_not_found, marked as a task B does not know (issue 36, finding 2)", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 404, body: { error: { code: "job_not_found", message: "no such job" } } }, times: 1 });
    const error = await bed.adapter.poll(submitted, context).then(
      () => expect.fail("expected task_not_found"),
      (thrown: unknown) => thrown as ProviderError,
    );
    expect(error.code).toBe("task_not_found");
    expect(error.detail.taskUnknown).toBe(true);
  });

  it("B: a failed job without an error object is failed, the raw job kept", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    const raw = { id: submitted.providerJobId, status: "failed" };
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 200, body: raw }, times: 1 });
    expect(await bed.adapter.poll(submitted, context)).toMatchObject({ kind: "failed", code: "provider_failed", raw });
  });

  it("B: a job read that is not a job object is an invalid answer", async () => {
    const bed = await startB();
    const { submitted, context } = await bed.submitted();
    bed.sandbox.injectFault({ provider: "b", method: "GET", fault: { kind: "status", status: 200, body: { ok: true } }, times: 1 });
    expect((await providerError(() => bed.adapter.poll(submitted, context))).code).toBe("invalid_response");
  });
});

describe("B limits", () => {
  it("B: submits are idempotent; a conservative slot pool (re-learned from 429); no rate window is published", async () => {
    const bed = await startB();
    const validated = await bed.validated(imageToVideo());
    const limits = bed.adapter.limits(validated);
    expect(limits).toMatchObject({ idempotentSubmit: true, rateWindows: [], slotPools: [{ key: "b:account", capacity: 4 }] });
    expect(limits.poll.minIntervalMs).toBeGreaterThan(0);
    expect(limits.poll.maxIntervalMs).toBeGreaterThanOrEqual(limits.poll.minIntervalMs);
    expect(limits.trackingDeadlineMs).toBe(60 * 60_000);
    const tuned = createBAdapter({ baseUrl: `${bed.sandbox.url}/b`, apiKey: KEY, concurrency: 8, trackingDeadlineMs: 5_000 });
    expect(tuned.limits(validated)).toMatchObject({ slotPools: [{ key: "b:account", capacity: 8 }], trackingDeadlineMs: 5_000 });
  });

  it("B: no cancel operation is published, so none is offered", async () => {
    const bed = await startB();
    expect(bed.adapter.cancel).toBeUndefined();
  });

  it("B: a ProviderError names the provider", async () => {
    const bed = await startB();
    const error = await providerError(() => bed.adapter.poll({ providerJobId: "req_missing", handles: {} }, bed.jobContext()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.detail.provider).toBe("b");
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { OutcomeUnknownError, UnsafeUrlError } from "../../../src/core/errors.js";
import { STRICT_URL_POLICY } from "../../../src/core/url-safety.js";
import type { Submitted } from "../../../src/providers/adapter.js";
import { pngSize, renderPng } from "../../../src/sandbox/media/png.js";
import type { EEmulatorOptions } from "../../../src/sandbox/e/index.js";
import { providerError } from "../../helpers/errors.js";
import { CLIENT_ID, generate, MINUTE, pathOf, RENDER_MS, startE, thrown, type EWorld } from "./world.js";

let world: EWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function start(options: EEmulatorOptions = {}): Promise<EWorld> {
  world = await startE(options);
  return world;
}

async function submittedJob(w: EWorld, request = generate()) {
  const client = w.client();
  const validated = client.adapter.validate(request);
  return { ...client, validated, job: await client.adapter.submit(validated, client.context) };
}

const pngSample = renderPng(32, 32, "sample", 1);
const handlesOf = (job: Submitted) => job.handles as { jobId: string; statusUrl: string; cancelUrl: string };

describe("E client: requests", () => {
  it("E: submit POSTs the JSON body with x-api-key, Bearer token and Content-Type: application/json to /v3/images/generate-async", async () => {
    const w = await start();
    const { validated, job } = await submittedJob(w, generate({ contentClass: "art" }));
    const [submit] = w.submits();
    expect(submit).toMatchObject({ method: "POST", url: "/e/v3/images/generate-async", statusCode: 202 });
    expect(submit!.headers["x-api-key"]).toBe(CLIENT_ID);
    expect(submit!.headers.authorization).toBe(`Bearer ${w.e.tokens()[0]!.accessToken}`);
    expect(submit!.headers["content-type"]).toBe("application/json");
    expect(w.e.job(job.providerJobId)).toMatchObject({ operation: "generate", body: validated.body, contentClass: "art" });
  });

  it("E: model v4 sends generate-image to the newer model's /v4/images/generate-async", async () => {
    const w = await start();
    const { job } = await submittedJob(w, generate({}, { model: "v4" }));
    expect(w.submits()[0]).toMatchObject({ url: "/e/v4/images/generate-async", statusCode: 202 });
    expect(w.e.job(job.providerJobId)?.operation).toBe("generate-v4");
  });

  it("E: the submit answer's jobId, statusUrl and cancelUrl are kept flat and exactly as returned", async () => {
    const w = await start();
    const { job } = await submittedJob(w);
    const view = w.e.job(job.providerJobId)!;
    expect(job).toEqual({ providerJobId: view.jobId, handles: { jobId: view.jobId, statusUrl: view.statusUrl, cancelUrl: view.cancelUrl } });
  });

  it("E: a poll carries x-api-key and Authorization only, no Content-Type", async () => {
    const w = await start();
    const { adapter, context, job } = await submittedJob(w);
    await adapter.poll(job, context);
    const [read] = w.statusReads();
    expect(read!.headers["x-api-key"]).toBe(CLIENT_ID);
    expect(read!.headers.authorization).toBe(`Bearer ${w.e.tokens()[0]!.accessToken}`);
    expect(read!.headers["content-type"]).toBeUndefined();
    expect(w.e.job(job.providerJobId)!.polls[0]!.contentType).toBeUndefined();
  });

  it("E: the statusUrl is requested as given, on its tenant host that differs from the submit host", async () => {
    const w = await start();
    const { adapter, context, job } = await submittedJob(w);
    const { statusUrl } = handlesOf(job);
    expect(new URL(statusUrl).host).not.toBe(new URL(w.sandbox.url).host);
    await adapter.poll(job, context);
    const [read] = w.statusReads();
    // The sandbox answers 404 to a status read that arrives on the submit host.
    expect(read).toMatchObject({ method: "GET", url: pathOf(statusUrl), statusCode: 200 });
    expect(read!.headers.host).toBe(new URL(statusUrl).host);
  });

  it("E: a statusUrl on plain http to a public host is refused under a strict URL policy", async () => {
    const w = await start();
    const { adapter, context } = w.client({}, { urlPolicy: STRICT_URL_POLICY });
    const job: Submitted = { providerJobId: "urn:x", handles: { jobId: "urn:x", statusUrl: "http://status.example.com/v3/status/x" } };
    const error = await thrown(() => adapter.poll(job, context));
    expect(error).toBeInstanceOf(UnsafeUrlError);
    expect((error as Error).message).toMatch(/https only/);
    expect(w.statusReads()).toHaveLength(0);
  });

  it("E: a statusUrl on a private, loopback or metadata address is refused under a strict URL policy", async () => {
    const w = await start();
    const strict = w.client({}, { urlPolicy: STRICT_URL_POLICY });
    for (const statusUrl of ["https://10.1.2.3/v3/status/x", "https://127.0.0.1/v3/status/x", "https://169.254.169.254/latest/meta-data"]) {
      const job: Submitted = { providerJobId: "urn:x", handles: { jobId: "urn:x", statusUrl } };
      expect(await thrown(() => strict.adapter.poll(job, strict.context))).toBeInstanceOf(UnsafeUrlError);
    }
    // The sandbox's own statusUrl (loopback) is refused when only http is allowed, not private addresses.
    const { job } = await submittedJob(w);
    const httpOnly = w.client({}, { urlPolicy: { allowHttp: true, allowPrivate: false } });
    const error = await thrown(() => httpOnly.adapter.poll(job, httpOnly.context));
    expect(error).toBeInstanceOf(UnsafeUrlError);
    expect((error as Error).message).toMatch(/loopback/);
    expect(w.statusReads()).toHaveLength(0);
  });
});

describe("E client: several jobs", () => {
  it("E: several jobs can be submitted before any is polled, each with its own statusUrl", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const jobs = [];
    for (const prompt of ["one", "two", "three"]) jobs.push(await adapter.submit(adapter.validate(generate({ prompt })), context));
    expect(w.statusReads()).toHaveLength(0);
    expect(new Set(jobs.map((job) => handlesOf(job).statusUrl)).size).toBe(3);
    w.advance(RENDER_MS + 1);
    for (const job of jobs) expect((await adapter.poll(job, context)).kind).toBe("succeeded");
  });

  it("E: every request, token and upload included, passes the rate limiter before it leaves", async () => {
    const w = await start();
    let taken = 0;
    const { adapter, context } = w.client({}, { beforeRequest: async () => void taken++ });
    const request = adapter.validate({ provider: "e", model: "v3", operation: "expand-image", input: {}, images: [{ fileName: "a.png", bytes: pngSample }] });
    const job = await adapter.submit(request, context);
    await adapter.poll(job, context);
    await adapter.cancel!(job, context);
    // token, upload, submit, poll, cancel
    expect(taken).toBe(5);
    expect(w.requests()).toHaveLength(5);
  });
});

describe("E client: statuses and outputs", () => {
  it("E: running is pending; succeeded gives each result.outputs[].image.url with its seed and the altText", async () => {
    const w = await start();
    const { adapter, context, http, validated, job } = await submittedJob(w, generate({ numVariations: 2, seeds: [11, 22] }));
    expect(validated.warnings).toEqual(expect.arrayContaining([expect.stringMatching(/^numVariations .*unchecked/), expect.stringMatching(/^seeds .*unchecked/)]));
    expect(await adapter.poll(job, context)).toMatchObject({ kind: "pending", providerStatus: "running" });
    w.advance(RENDER_MS + 1);
    const status = await adapter.poll(job, context);
    if (status.kind !== "succeeded") throw new Error(`expected succeeded, got ${status.kind}`);
    const raw = status.raw as { result: { altText: string; outputs: Array<{ seed: number; image: { url: string } }> } };
    expect(raw.result.altText).toContain("a lighthouse at dawn");
    expect(status.outputs).toEqual([
      { url: raw.result.outputs[0]!.image.url, metadata: { seed: 11, altText: raw.result.altText } },
      { url: raw.result.outputs[1]!.image.url, metadata: { seed: 22, altText: raw.result.altText } },
    ]);
    const download = await http.request({ method: "GET", url: status.outputs[0]!.url, retry: "idempotent", untrustedUrl: true });
    expect(download.status).toBe(200);
    expect(pngSize(download.body)).toEqual({ width: 1024, height: 1024 });
  });

  it("E: failed is a failure with code generation_failed (E returns only the status), raw kept", async () => {
    const w = await start();
    w.e.injectOutcome("failed");
    const { adapter, context, job } = await submittedJob(w);
    w.advance(RENDER_MS + 1);
    const status = await adapter.poll(job, context);
    expect(status).toMatchObject({ kind: "failed", providerStatus: "failed", code: "generation_failed", raw: { status: "failed" } });
  });

  it("E: an unknown status keeps the job pending with the raw value kept", async () => {
    const w = await start();
    w.e.injectUnknownStatus("queued", RENDER_MS - 1);
    const { adapter, context, job } = await submittedJob(w);
    expect(await adapter.poll(job, context)).toMatchObject({ kind: "pending", providerStatus: "queued", raw: { status: "queued", jobId: job.providerJobId } });
  });

  it("E: images are read under result.outputs, never at the top level: a succeeded answer without them is invalid (retryable)", async () => {
    const w = await start();
    const { adapter, context, job } = await submittedJob(w);
    w.sandbox.injectFault({ provider: "e", method: "GET", fault: { kind: "status", status: 200, body: { status: "succeeded", jobId: job.providerJobId, outputs: [] } }, times: 1 });
    const error = await providerError(() => adapter.poll(job, context));
    expect(error).toMatchObject({ code: "invalid_response" });
    expect(error.detail.retryable).toBe(true);
  });
});

describe("E client: cancel", () => {
  it("E: cancel sends PUT to the cancelUrl as given (the method is not shown); the job stops at E", async () => {
    const w = await start();
    const { adapter, context, job } = await submittedJob(w);
    await adapter.cancel!(job, context);
    const cancelUrl = handlesOf(job).cancelUrl;
    const cancel = w.requests().find((entry) => entry.url.includes("/cancel/"));
    expect(cancel).toMatchObject({ method: "PUT", url: pathOf(cancelUrl), statusCode: 200 });
    expect(cancel!.headers.host).toBe(new URL(cancelUrl).host);
    expect(cancel!.headers["x-api-key"]).toBe(CLIENT_ID);
    expect(cancel!.headers["content-type"]).toBeUndefined();
    expect(w.e.job(job.providerJobId)!.cancelledAt).toBeDefined();
    // The cancelled status value is not shown: it is kept raw and the job stays pending for the engine to settle.
    expect(await adapter.poll(job, context)).toMatchObject({ kind: "pending", providerStatus: "canceled" });
  });

  it("E: cancel can be configured to DELETE, and a 405 tries the next method", async () => {
    const w = await start();
    const { adapter, context, job } = await submittedJob(w);
    const byDelete = w.client({ cancelMethod: "DELETE" });
    await byDelete.adapter.cancel!(job, byDelete.context);
    expect(w.requests().filter((entry) => entry.url.includes("/cancel/")).map((entry) => entry.method)).toEqual(["DELETE"]);
    w.sandbox.injectFault({ provider: "e", method: "PUT", path: /\/cancel\//, fault: { kind: "status", status: 405, body: { message: "method not allowed" } }, times: 1 });
    await adapter.cancel!(job, context);
    expect(w.requests().filter((entry) => entry.url.includes("/cancel/")).map((entry) => [entry.method, entry.statusCode])).toEqual([
      ["DELETE", 200],
      ["PUT", 405],
      ["DELETE", 200],
    ]);
  });

  it("E: the cancelUrl is checked against the URL policy before it is requested", async () => {
    const w = await start();
    const { job } = await submittedJob(w);
    const strict = w.client({}, { urlPolicy: STRICT_URL_POLICY });
    expect(await thrown(() => strict.adapter.cancel!(job, strict.context))).toBeInstanceOf(UnsafeUrlError);
    expect(w.requests().filter((entry) => entry.url.includes("/cancel/"))).toHaveLength(0);
  });

  it("E: cancelling a finished job: E's 409 is kept raw and retryable", async () => {
    const w = await start();
    const { adapter, context, job } = await submittedJob(w);
    w.advance(RENDER_MS + 1);
    const error = await providerError(() => adapter.cancel!(job, context));
    expect(error.code).toBe("conflict");
    expect(error.detail).toMatchObject({ httpStatus: 409, retryable: true });
    expect(error.detail.rawBody).toContain("job_already_finished");
  });
});

describe("E client: quota and errors", () => {
  it("E: the fifth request within a minute is 429: rate_limited back-pressure with retry-after surfaced", async () => {
    const w = await start({ requestsPerMinute: 4, renderMs: 10 * MINUTE });
    const { adapter, context, job } = await submittedJob(w);
    const noRetry = w.client({}, { maxAttempts: 1 });
    for (let poll = 0; poll < 3; poll++) await noRetry.adapter.poll(job, noRetry.context);
    const error = await providerError(() => noRetry.adapter.poll(job, noRetry.context));
    expect(error.code).toBe("rate_limited");
    expect(error.detail).toMatchObject({ httpStatus: 429, backpressure: true, retryable: true });
    expect(error.detail.retryAfterMs).toBeGreaterThanOrEqual(1_000);
    expect(error.detail.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(w.e.quota().rejected).toBe(1);
    // After the wait E answers again.
    w.advance(error.detail.retryAfterMs!);
    expect((await adapter.poll(job, context)).kind).toBe("pending");
  });

  it("E: a submit answered 429 is back-pressure with retryAfterMs and is not resent by the adapter", async () => {
    const w = await start({ requestsPerMinute: 4 });
    const { adapter, context } = w.client();
    for (let index = 0; index < 4; index++) await adapter.submit(adapter.validate(generate({ prompt: `job ${index}` })), context);
    const error = await providerError(() => adapter.submit(adapter.validate(generate({ prompt: "one too many" })), context));
    expect(error.detail).toMatchObject({ httpStatus: 429, backpressure: true, retryable: true });
    expect(error.detail.retryAfterMs).toBeGreaterThan(0);
    expect(w.submits()).toHaveLength(5);
  });

  it("E: over 9,000 requests a day is 429 too, with the day's retry-after surfaced", async () => {
    const w = await start();
    w.e.setQuota({ perDay: 2 });
    const { adapter, context, job } = await submittedJob(w);
    await adapter.poll(job, context);
    const error = await providerError(() => adapter.poll(job, context));
    expect(error.detail).toMatchObject({ httpStatus: 429, backpressure: true, retryable: true });
    expect(error.detail.retryAfterMs).toBeGreaterThan(23 * 3_600_000);
  });

  it("E: a 429 without retry-after leaves the wait to the engine's exponential backoff", async () => {
    const w = await start();
    w.sandbox.injectFault({ provider: "e", method: "POST", path: /\/images\//, fault: { kind: "status", status: 429, body: { message: "slow down" } }, times: 1 });
    const { adapter, context } = w.client();
    const error = await providerError(() => adapter.submit(adapter.validate(generate()), context));
    expect(error.detail).toMatchObject({ httpStatus: 429, backpressure: true, retryable: true });
    expect(error.detail.retryAfterMs).toBeUndefined();
  });

  it("E: 409 on submit is retryable with the raw body kept, and the job goes through on the next try", async () => {
    const w = await start();
    w.e.injectV4Error(409);
    const { adapter, context } = w.client();
    const request = adapter.validate(generate({}, { model: "v4" }));
    const error = await providerError(() => adapter.submit(request, context));
    expect(error.code).toBe("conflict");
    expect(error.detail).toMatchObject({ httpStatus: 409, retryable: true });
    expect(error.detail.rawBody).toContain("conflict");
    expect((await adapter.submit(request, context)).providerJobId).toMatch(/^urn:/);
  });

  it("E: 503 on submit is retryable with the raw body and retry-after kept", async () => {
    const w = await start();
    w.e.injectV4Error(503, 1, 7);
    const { adapter, context } = w.client();
    const error = await providerError(() => adapter.submit(adapter.validate(generate({}, { model: "v4" })), context));
    expect(error.code).toBe("provider_unavailable");
    expect(error.detail).toMatchObject({ httpStatus: 503, retryable: true, retryAfterMs: 7_000 });
    expect(error.detail.rawBody).toContain("service_unavailable");
    expect(w.submits()).toHaveLength(1);
  });

  it("E: a poll answered 503 is resent by the HTTP layer (a read is idempotent)", async () => {
    const w = await start();
    const { adapter, context, job } = await submittedJob(w);
    w.sandbox.injectFault({ provider: "e", method: "GET", fault: { kind: "status", status: 503, body: { message: "busy" } }, times: 1 });
    expect((await adapter.poll(job, context)).kind).toBe("pending");
    expect(w.statusReads().map((entry) => entry.statusCode)).toEqual([503, 200]);
  });

  it("E: other 4xx fail provider_rejected with the raw body kept", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    // "sketch" is not a value the spec has seen: mediagate warns and sends it; the sandbox refuses it.
    const request = adapter.validate(generate({ contentClass: "sketch" }));
    expect(request.warnings).toEqual([expect.stringContaining('contentClass "sketch"')]);
    const error = await providerError(() => adapter.submit(request, context));
    expect(error.code).toBe("provider_rejected");
    expect(error.detail).toMatchObject({ httpStatus: 400, retryable: false });
    expect(error.detail.rawBody).toContain("contentClass");
  });

  it("E: a 500 to a submit is outcome unknown: the job may exist, so it is never resent", async () => {
    const w = await start();
    w.sandbox.injectFault({ provider: "e", method: "POST", path: /\/images\//, fault: { kind: "status", status: 500, body: "oops" }, times: 1 });
    const { adapter, context } = w.client();
    expect(await thrown(() => adapter.submit(adapter.validate(generate()), context))).toBeInstanceOf(OutcomeUnknownError);
    expect(w.submits()).toHaveLength(1);
  });

  it("E: a 2xx submit answer without jobId and statusUrl is invalid_response and not resent", async () => {
    const w = await start();
    w.sandbox.injectFault({ provider: "e", method: "POST", path: /\/images\//, fault: { kind: "status", status: 202, body: { result: { jobId: "nested" } } }, times: 1 });
    const { adapter, context } = w.client();
    const error = await providerError(() => adapter.submit(adapter.validate(generate()), context));
    expect(error.code).toBe("invalid_response");
    expect(error.detail.retryable).toBe(false);
    expect(w.submits()).toHaveLength(1);
  });
});

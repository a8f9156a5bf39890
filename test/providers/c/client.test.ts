import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../../src/core/clock.js";
import { OutcomeUnknownError, ProviderError } from "../../../src/core/errors.js";
import type { CallContext, ProviderAdapter, Submitted } from "../../../src/providers/adapter.js";
import { ProviderHttp, TransportError } from "../../../src/providers/http.js";
import { createCAdapter, type CAdapterConfig } from "../../../src/providers/c/index.js";
import { startSandbox, type CEmulator, type CEmulatorOptions, type Sandbox } from "../../../src/sandbox/index.js";

const KEY = "sandbox-c-key";
const MINUTE = 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let sandbox: Sandbox | undefined;
let emulator: CEmulator;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

async function start(options: CEmulatorOptions = {}): Promise<void> {
  sandbox = await startSandbox({ providers: ["c"], emulators: { c: { renderMs: 60_000, ...options } } });
  emulator = sandbox.emulators.c!;
}

const advance = (ms: number) => sandbox!.clock.advance(ms);

function client(config: Partial<CAdapterConfig> = {}): { adapter: ProviderAdapter; context: CallContext } {
  const apiKey = config.apiKey ?? KEY;
  const adapter = createCAdapter({ baseUrl: `${sandbox!.url}/c`, apiKey, tier: "free", ...config });
  const http = new ProviderHttp({ provider: "c", clock: systemClock, secrets: () => [apiKey], urlPolicy: { allowHttp: true, allowPrivate: true }, maxAttempts: 1 });
  // The sandbox's virtual clock, so the ten-minute release can be crossed with advance().
  return { adapter, context: { http, clock: sandbox!.clock } };
}

async function submitted(input: Record<string, unknown> = { prompt: "a paper boat on a river" }, config: Partial<CAdapterConfig> = {}) {
  const { adapter, context } = client(config);
  const request = adapter.validate({ provider: "c", model: "v6", input });
  return { adapter, context, request, submitted: await adapter.submit(request, context) };
}

async function rejection(run: () => Promise<unknown>): Promise<ProviderError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error("expected a ProviderError");
}

const cRequests = () => sandbox!.requests().filter((entry) => entry.provider === "c" && !entry.url.startsWith("/c/results/"));
const submits = () => cRequests().filter((entry) => entry.method === "POST").length;

describe("C client: requests", () => {
  it("C: submit sends API-KEY, Ai-trace-id and JSON to /openapi/v2/video/text/generate", async () => {
    await start();
    const { submitted: task } = await submitted({ prompt: "a paper boat", aspect_ratio: "16:9", duration: 5, quality: "720p", motion_mode: "normal", seed: 0 });
    expect(task.handles).toMatchObject({ video_id: task.providerJobId, submitted_at: expect.any(Number) });
    const [submit] = cRequests();
    expect(submit).toMatchObject({ method: "POST", url: "/c/openapi/v2/video/text/generate", statusCode: 200 });
    expect(submit!.headers["api-key"]).toBe(KEY);
    expect(submit!.headers["content-type"]).toBe("application/json");
    expect(emulator.task(task.providerJobId)).toMatchObject({ prompt: "a paper boat", model: "v6", aspectRatio: "16:9", duration: 5, quality: "720p", motionMode: "normal", seed: 0 });
  });

  it("C: a fresh UUID Ai-trace-id per request", async () => {
    await start();
    const first = await submitted();
    await submitted();
    await first.adapter.poll(first.submitted, first.context);
    await first.adapter.poll(first.submitted, first.context);
    const traceIds = cRequests().map((entry) => entry.headers["ai-trace-id"]);
    expect(traceIds).toHaveLength(4);
    for (const traceId of traceIds) expect(traceId).toMatch(UUID);
    expect(new Set(traceIds).size).toBe(4);
    expect(emulator.traceIds()).toEqual({ seen: 4, reused: [] });
  });

  it("C: a poll answered 5xx is resent with a fresh Ai-trace-id, never the same one", async () => {
    await start();
    const { adapter, submitted: task } = await submitted();
    // The default HTTP layer resends idempotent requests (here at once, no jitter wait).
    const http = new ProviderHttp({ provider: "c", clock: systemClock, secrets: () => [KEY], urlPolicy: { allowHttp: true, allowPrivate: true }, random: () => 0 });
    const context = { http, clock: sandbox!.clock };
    sandbox!.injectFault({ provider: "c", method: "GET", fault: { kind: "status", status: 503, body: "busy" }, times: 1 });
    expect((await adapter.poll(task, context)).kind).toBe("pending");
    const reads = cRequests().filter((entry) => entry.method === "GET");
    expect(reads).toHaveLength(2);
    expect(reads[0]!.headers["ai-trace-id"]).not.toBe(reads[1]!.headers["ai-trace-id"]);
    expect(emulator.traceIds().reused).toEqual([]);
  });

  it("C: the result is read from /openapi/v2/video/result/{video_id} with API-KEY and no body", async () => {
    await start();
    const { adapter, context, submitted: task } = await submitted();
    await adapter.poll(task, context);
    const read = cRequests()[1]!;
    expect(read).toMatchObject({ method: "GET", url: `/c/openapi/v2/video/result/${task.providerJobId}` });
    expect(read.headers["api-key"]).toBe(KEY);
    expect(read.headers["content-type"]).toBeUndefined();
  });
});

describe("C client: ErrCodes", () => {
  it("C: 500044 is back-pressure, never an immediate resubmit", async () => {
    await start({ tier: "free" });
    for (let index = 0; index < 3; index++) await submitted({ prompt: `boat ${index}` });
    const { adapter, context } = client();
    const error = await rejection(() => adapter.submit(adapter.validate({ provider: "c", model: "v6", input: { prompt: "one too many" } }), context));
    expect(error.code).toBe("slot_limit");
    expect(error.detail).toMatchObject({ providerCode: "500044", backpressure: true, retryable: true });
    // The adapter sent it once; waiting for a slot is the engine's job.
    expect(submits()).toBe(4);
    expect(emulator.stats().concurrentLimitRejections).toBe(1);
    expect(emulator.slotsInUse()).toBe(3);
  });

  it("C: the envelope is decoded whatever the HTTP status", async () => {
    await start({ tier: "free", errorHttpStatus: "by-error" });
    for (let index = 0; index < 3; index++) await submitted({ prompt: `boat ${index}` });
    const { adapter, context } = client();
    const error = await rejection(() => adapter.submit(adapter.validate({ provider: "c", model: "v6", input: { prompt: "x" } }), context));
    // HTTP 429 here, but ErrCode 500044 decides: back-pressure, not a rate limit.
    expect(error.detail).toMatchObject({ httpStatus: 429, providerCode: "500044", backpressure: true });
    const missing = await rejection(() => adapter.poll({ providerJobId: "999", handles: {} }, context));
    // A 404 on a read: C does not know the video (issue 36, finding 2: ended by the engine after a bounded time).
    expect(missing).toMatchObject({ code: "task_not_found" });
    expect(missing.detail).toMatchObject({ httpStatus: 404, providerCode: "400013", retryable: false, taskUnknown: true });
  });

  it("C: 500069 is retried later with a longer delay and jitter", async () => {
    await start();
    emulator.injectRetryLater(2);
    const low = client({ random: () => 0 });
    const high = client({ random: () => 1 });
    const request = low.adapter.validate({ provider: "c", model: "v6", input: { prompt: "x" } });
    const first = await rejection(() => low.adapter.submit(request, low.context));
    expect(first.code).toBe("retry_later");
    expect(first.detail).toMatchObject({ providerCode: "500069", retryable: true, retryAfterMs: 10_000 });
    expect(first.detail.backpressure).toBeUndefined();
    const second = await rejection(() => high.adapter.submit(request, high.context));
    expect(second.detail.retryAfterMs).toBe(30_000);
    expect(submits()).toBe(2);
  });

  it("C: 500090 fails insufficient_balance and halts the provider", async () => {
    await start();
    emulator.setBalance(0);
    const { adapter, context } = client();
    const error = await rejection(() => adapter.submit(adapter.validate({ provider: "c", model: "v6", input: { prompt: "x" } }), context));
    expect(error.code).toBe("insufficient_balance");
    expect(error.detail).toMatchObject({ providerCode: "500090", haltsProvider: true, retryable: false });
  });

  it("C: other ErrCodes fail with the raw code and message kept", async () => {
    await start({ accepted: { durations: [5] } });
    const { adapter, context } = client();
    const error = await rejection(() => adapter.submit(adapter.validate({ provider: "c", model: "v6", input: { prompt: "x", duration: 8 } }), context));
    expect(error.code).toBe("provider_rejected");
    expect(error.detail).toMatchObject({ providerCode: "400012", retryable: false });
    expect(error.message).toMatch(/ErrCode 400012: duration/);
    expect(error.detail.rawBody).toContain("400012");
  });

  it("C: a wrong key is an error envelope too, and the key never appears in it", async () => {
    await start();
    const { adapter, context } = client({ apiKey: "not-a-key" });
    const error = await rejection(() => adapter.submit(adapter.validate({ provider: "c", model: "v6", input: { prompt: "x" } }), context));
    expect(error.detail.providerCode).toBe("400010");
    expect(`${error.message}${error.detail.rawBody}`).not.toContain("not-a-key");
  });

  it("C: an answer that is not an envelope is retryable on 5xx, and of unknown outcome on a 2xx submit", async () => {
    await start();
    const { adapter, context } = client();
    const request = adapter.validate({ provider: "c", model: "v6", input: { prompt: "x" } });
    sandbox!.injectFault({ provider: "c", method: "POST", fault: { kind: "status", status: 502, body: "<html>bad gateway</html>" }, times: 1 });
    const gateway = await rejection(() => adapter.submit(request, context));
    expect(gateway.detail).toMatchObject({ httpStatus: 502, retryable: true });
    sandbox!.injectFault({ provider: "c", method: "POST", fault: { kind: "status", status: 200, body: { ok: true } }, times: 1 });
    await expect(adapter.submit(request, context)).rejects.toBeInstanceOf(OutcomeUnknownError);
  });

  it("C: a submit whose answer is lost is not resent (the transport error reaches the engine)", async () => {
    await start();
    sandbox!.injectFault({ provider: "c", method: "POST", fault: { kind: "drop_after_handling" }, times: 1 });
    const { adapter, context } = client();
    const error = await adapter.submit(adapter.validate({ provider: "c", model: "v6", input: { prompt: "x" } }), context).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).maybeSent).toBe(true);
    expect(submits()).toBe(1);
  });
});

describe("C client: result statuses", () => {
  it("C: status 5 is pending; status 1 succeeds with Resp.url, which downloads", async () => {
    await start();
    const { adapter, context, request, submitted: task } = await submitted();
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "pending", providerStatus: "5 (generating)", holdsSlot: true });
    advance(60_001);
    const done = await adapter.poll(task, context);
    if (done.kind !== "succeeded") throw new Error(`expected succeeded, got ${done.kind}`);
    expect(done.outputs[0]!.url).toMatch(/\/c\/results\//);
    expect(adapter.charge(request, done).microUsd).toBeNull();
    const download = await context.http.request({ method: "GET", url: done.outputs[0]!.url, untrustedUrl: true });
    expect(download.status).toBe(200);
    expect(download.body.length).toBeGreaterThan(1_000);
  });

  it("C: status 7 is a moderation failure with no charge", async () => {
    await start();
    emulator.injectOutcome(7);
    const { adapter, context, request, submitted: task } = await submitted();
    advance(60_001);
    const status = await adapter.poll(task, context);
    expect(status).toMatchObject({ kind: "failed", providerStatus: "7 (moderation failure)", code: "moderation_failed" });
    expect(adapter.charge(request, status).microUsd).toBe(0);
    expect(emulator.task(task.providerJobId)?.refunded).toBe(true);
  });

  it("C: status 8 is a generation failure", async () => {
    await start();
    emulator.injectOutcome(8);
    const { adapter, context, submitted: task } = await submitted();
    advance(60_001);
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "failed", code: "generation_failed" });
  });

  it("C: status 6 is deleted, a terminal failure with its own code", async () => {
    await start();
    const { adapter, context, submitted: task } = await submitted();
    emulator.deleteTask(task.providerJobId);
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "failed", providerStatus: "6 (deleted)", code: "deleted" });
  });

  it("C: an unknown status keeps the job pending", async () => {
    await start();
    const { adapter, context, submitted: task } = await submitted();
    const body = { ErrCode: 0, ErrMsg: "success", Resp: { video_id: task.providerJobId, status: 3 } };
    sandbox!.injectFault({ provider: "c", method: "GET", fault: { kind: "status", status: 200, body }, times: 1 });
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "pending", providerStatus: "3 (unknown status)" });
  });

  it("C: after ten minutes in status 5 the slot is released while the job is still tracked", async () => {
    await start({ renderMs: 20 * MINUTE });
    const { adapter, context, submitted: task } = await submitted();
    advance(9 * MINUTE);
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "pending", holdsSlot: true });
    expect(emulator.slotsInUse()).toBe(1);
    advance(MINUTE);
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "pending", providerStatus: "5 (generating)", holdsSlot: false });
    expect(emulator.slotsInUse()).toBe(0);
    advance(10 * MINUTE + 1);
    expect((await adapter.poll(task, context)).kind).toBe("succeeded");
  });

  it("C: a video_id from the provider is encoded into the path", async () => {
    await start();
    const { adapter, context } = client();
    const odd: Submitted = { providerJobId: "../../x?y", handles: {} };
    await rejection(() => adapter.poll(odd, context));
    expect(cRequests().at(-1)?.url).toBe("/c/openapi/v2/video/result/..%2F..%2Fx%3Fy");
  });
});

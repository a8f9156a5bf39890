import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../../src/core/clock.js";
import { OutcomeUnknownError, ProviderError } from "../../../src/core/errors.js";
import type { CallContext, JobRequest, ProviderAdapter, Submitted } from "../../../src/providers/adapter.js";
import { ProviderHttp } from "../../../src/providers/http.js";
import { createAAdapter, type AAdapterConfig } from "../../../src/providers/a/index.js";
import { startSandbox, type AEmulator, type AEmulatorOptions, type Sandbox } from "../../../src/sandbox/index.js";

const STANDARD_KEY = "sandbox-a-key";
const ENTERPRISE_KEY = "sandbox-a-enterprise-key";
const NEWEST = "vidgen-2-0-250601";
const DAY = 24 * 3_600_000;

let sandbox: Sandbox | undefined;
let emulator: AEmulator;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

/** Fixed queue and render times, so that a clock.advance() lands in a known status. */
async function start(options: AEmulatorOptions = {}): Promise<Sandbox> {
  sandbox = await startSandbox({ providers: ["a"], emulators: { a: { queueMs: 1_000, renderMs: 30_000, ...options } } });
  emulator = sandbox.emulators.a!;
  return sandbox;
}

const advance = (ms: number) => sandbox!.clock.advance(ms);

function client(config: Partial<AAdapterConfig> = {}): { adapter: ProviderAdapter; context: CallContext } {
  const apiKey = config.apiKey ?? (config.enterprise ? ENTERPRISE_KEY : STANDARD_KEY);
  const adapter = createAAdapter({ baseUrl: `${sandbox!.url}/a`, apiKey, enterprise: false, ...config });
  const http = new ProviderHttp({ provider: "a", clock: systemClock, secrets: () => [apiKey], urlPolicy: { allowHttp: true, allowPrivate: true }, maxAttempts: 1 });
  // The adapter reads the sandbox's virtual clock, so the 7-day rule can be crossed with advance().
  return { adapter, context: { http, clock: sandbox!.clock } };
}

function job(input: Record<string, unknown>, extra: Partial<JobRequest> = {}): JobRequest {
  return { provider: "a", model: NEWEST, input, ...extra };
}

async function submitted(config: Partial<AAdapterConfig> = {}, input: Record<string, unknown> = { prompt: "a lighthouse at dusk" }, extra: Partial<JobRequest> = {}) {
  const { adapter, context } = client(config);
  const request = adapter.validate(job(input, extra));
  const result = await adapter.submit(request, context);
  return { adapter, context, request, submitted: result };
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

const aRequests = () => sandbox!.requests().filter((entry) => entry.provider === "a" && !entry.url.startsWith("/a/results/"));

describe("A client: paths and keys", () => {
  it("A: every call carries the Bearer key and Content-Type: application/json on /api/v3", async () => {
    await start();
    const { adapter, context, submitted: task } = await submitted();
    expect(task.providerJobId).toMatch(/^cgt-/);
    expect(task.handles).toMatchObject({ task_id: task.providerJobId, plan: "standard" });
    await adapter.poll(task, context);
    const [create, read] = aRequests();
    expect(create).toMatchObject({ method: "POST", url: "/a/api/v3/contents/generations/tasks", statusCode: 200 });
    expect(read).toMatchObject({ method: "GET", url: `/a/api/v3/contents/generations/tasks/${task.providerJobId}`, statusCode: 200 });
    for (const entry of [create!, read!]) {
      expect(entry.headers.authorization).toBe(`Bearer ${STANDARD_KEY}`);
      expect(entry.headers["content-type"]).toBe("application/json");
    }
  });

  it("A: an enterprise key uses /api/plan/v3", async () => {
    await start();
    const { adapter, context, submitted: task } = await submitted({ enterprise: true });
    expect(task.handles.plan).toBe("enterprise");
    expect((await adapter.poll(task, context)).kind).toBe("pending");
    expect(aRequests().map((entry) => entry.url.split("/").slice(0, 6).join("/"))).toEqual(["/a/api/plan/v3/contents", "/a/api/plan/v3/contents"]);
    expect(emulator.task(task.providerJobId)?.plan).toBe("enterprise");
  });

  it("A: /v1/ and /v2/ paths are never built", async () => {
    await start();
    for (const enterprise of [false, true]) {
      const { adapter, context, submitted: task } = await submitted({ enterprise });
      await adapter.poll(task, context);
    }
    const paths = aRequests().map((entry) => entry.url);
    expect(paths).toHaveLength(4);
    for (const path of paths) {
      expect(path).toMatch(/^\/a\/api\/(plan\/)?v3\/contents\/generations\/tasks/);
      expect(path).not.toMatch(/\/v[12](\/|$)/);
    }
  });

  it("A: a key used with the other plan's base path halts the provider", async () => {
    await start();
    const { adapter, context } = client({ apiKey: ENTERPRISE_KEY, enterprise: false });
    const error = await rejection(() => adapter.submit(adapter.validate(job({ prompt: "x" })), context));
    expect(error.code).toBe("authentication_failed");
    expect(error.detail).toMatchObject({ httpStatus: 403, providerCode: "KeyPlanMismatch", haltsProvider: true, retryable: false });
    expect(error.message).toMatch(/MEDIAGATE_A_ENTERPRISE/);
    expect(error.detail.rawBody).not.toContain(ENTERPRISE_KEY);
  });

  it("A: a task created on one plan is not read with the other plan's key", async () => {
    await start();
    const { submitted: task } = await submitted({ enterprise: true });
    const { adapter, context } = client({ enterprise: false });
    const error = await rejection(() => adapter.poll(task, context));
    expect(error.code).toBe("plan_changed");
    expect(aRequests()).toHaveLength(1);
  });
});

describe("A client: create", () => {
  it("A: the validated body is what arrives: typed items, kind rules, flags and callback_url", async () => {
    await start();
    const { submitted: task } = await submitted(
      { callbackUrl: "https://mediagate.example/hooks/a" },
      { content: [{ type: "text", text: "the sea --rs 480p" }, { type: "image_url", image_url: { url: "https://e.com/f.png" }, role: "first_frame" }], duration: 6 },
    );
    const view = emulator.task(task.providerJobId)!;
    expect(view).toMatchObject({ kind: "first_frame", requestedRatio: "adaptive", resolution: "480p", duration: 6, callbackUrl: "https://mediagate.example/hooks/a" });
    // The flag was also sent as the body field, so A applies the validated value whatever its weak flag parsing does.
    expect(view.ignoredFlags).toEqual(["resolution flag (the body field wins)"]);
  });

  it("A: editing and extension reach A with their declared kind and their rules met", async () => {
    await start();
    const clip = { type: "video_url", video_url: { url: "https://e.com/c.mp4" }, role: "reference_video" };
    const editing = await submitted({}, { content: [{ type: "text", text: "make it night" }, clip] }, { operation: "video_editing" });
    expect(emulator.task(editing.submitted.providerJobId)).toMatchObject({ kind: "video_editing", requestedRatio: "adaptive", duration: -1 });
    const extension = await submitted({}, { content: [{ type: "text", text: "go on" }, clip] }, { operation: "video_extension" });
    expect(emulator.task(extension.submitted.providerJobId)).toMatchObject({ kind: "video_extension", requestedRatio: "adaptive" });
    const audioOnly = await submitted({}, { content: [{ type: "text", text: "dance" }, { type: "audio_url", audio_url: { url: "https://e.com/a.mp3" }, role: "reference_audio" }] });
    expect(emulator.task(audioOnly.submitted.providerJobId)?.kind).toBe("reference_to_video");
  });

  it("A: a refusal is invalid_request with A's code kept, never retried", async () => {
    await start();
    const { adapter, context } = client();
    // A model this sandbox does not serve passes mediagate's checks (with conservative limits) and is refused by A.
    const error = await rejection(() => adapter.submit(adapter.validate(job({ prompt: "x" }, { model: "vidgen-3-0-270101" })), context));
    expect(error.code).toBe("invalid_request");
    expect(error.detail).toMatchObject({ httpStatus: 400, providerCode: "InvalidParameter", retryable: false });
    expect(aRequests()).toHaveLength(1);
  });

  it("A: over the per-minute limit, a 429 is retryable after A's Retry-After", async () => {
    await start({ standardRequestsPerMinute: 1 });
    await submitted();
    const { adapter, context } = client();
    const error = await rejection(() => adapter.submit(adapter.validate(job({ prompt: "again" })), context));
    expect(error.code).toBe("rate_limited");
    expect(error.detail.retryable).toBe(true);
    expect(error.detail.retryAfterMs).toBeGreaterThan(0);
  });

  it("A: a create answered 2xx without a cgt- id has an unknown outcome", async () => {
    await start();
    sandbox!.injectFault({ provider: "a", method: "POST", fault: { kind: "status", status: 200, body: { id: "task-1" } }, times: 1 });
    const { adapter, context } = client();
    await expect(adapter.submit(adapter.validate(job({ prompt: "x" })), context)).rejects.toBeInstanceOf(OutcomeUnknownError);
  });
});

describe("A client: task statuses", () => {
  it("A: queued and running are pending; succeeded gives content.video_url and the usage tokens", async () => {
    await start();
    const { adapter, context, request, submitted: task } = await submitted({ microUsdPerToken: 0.5 }, { prompt: "x", resolution: "720p", ratio: "16:9", duration: 5 });
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "pending", providerStatus: "queued" });
    advance(1_000);
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "pending", providerStatus: "running" });
    advance(30_000);
    const done = await adapter.poll(task, context);
    if (done.kind !== "succeeded") throw new Error(`expected succeeded, got ${done.kind}`);
    expect(done.outputs).toHaveLength(1);
    expect(done.outputs[0]!.url).toMatch(/\/a\/results\//);
    expect(done.outputs[0]!.metadata).toMatchObject({ resolution: "720p", ratio: "16:9", duration: 5, output_format: "mp4" });
    expect(done.usage).toEqual({ tokens: 108_000, raw: { completion_tokens: 108_000, total_tokens: 108_000 } });
    expect(adapter.charge(request, done)).toEqual({ microUsd: 54_000, source: "108000 tokens × 0.5 micro-USD per token (configured rate)" });
    const download = await context.http.request({ method: "GET", url: done.outputs[0]!.url, untrustedUrl: true });
    expect(download.status).toBe(200);
    expect(download.body.length).toBeGreaterThan(1_000);
  });

  it("A: failed, expired and cancelled are terminal", async () => {
    await start();
    emulator.injectOutcome("failed");
    const failed = await submitted();
    emulator.injectOutcome("expired");
    const expired = await submitted();
    const cancelled = await submitted();
    expect(emulator.cancelTask(cancelled.submitted.providerJobId)).toBeTruthy();
    advance(31_001);
    const failedStatus = await failed.adapter.poll(failed.submitted, failed.context);
    expect(failedStatus).toMatchObject({ kind: "failed", providerStatus: "failed", code: "generation_failed" });
    expect(failedStatus.kind === "failed" && failedStatus.message).toMatch(/GenerationFailed/);
    expect(await expired.adapter.poll(expired.submitted, expired.context)).toMatchObject({ kind: "expired", providerStatus: "expired" });
    expect(await cancelled.adapter.poll(cancelled.submitted, cancelled.context)).toMatchObject({ kind: "cancelled", providerStatus: "cancelled" });
  });

  it("A: a status none of the six published values stops polling as a failure", async () => {
    await start();
    const { adapter, context, submitted: task } = await submitted();
    const body = { id: task.providerJobId, status: "paused" };
    sandbox!.injectFault({ provider: "a", method: "GET", fault: { kind: "status", status: 200, body }, times: 1 });
    expect(await adapter.poll(task, context)).toMatchObject({ kind: "failed", providerStatus: "paused", code: "unknown_task_status" });
  });

  it("A: a 404 for a task older than 7 days fails with task_expired_from_lookup", async () => {
    await start();
    const { adapter, context, submitted: task } = await submitted();
    advance(7 * DAY + 60_000);
    const status = await adapter.poll(task, context);
    expect(status).toMatchObject({ kind: "failed", code: "task_expired_from_lookup" });
    expect(aRequests().at(-1)?.statusCode).toBe(404);
  });

  it("A: a 404 for a task younger than 7 days is an error, not an expiry", async () => {
    await start();
    const { adapter, context } = client();
    const unknown: Submitted = { providerJobId: "cgt-20250101-nothere", handles: { submitted_at: sandbox!.clock.now() } };
    const error = await rejection(() => adapter.poll(unknown, context));
    expect(error.code).toBe("task_not_found");
    expect(error.detail.retryable).toBe(false);
  });

  it("A: a task id that does not start with cgt- is never put in a path", async () => {
    await start();
    const { adapter, context } = client();
    const error = await rejection(() => adapter.poll({ providerJobId: "../../admin", handles: {} }, context));
    expect(error.code).toBe("invalid_task_id");
    expect(aRequests()).toHaveLength(0);
  });

  it("A: an answer that is not the task object asked for is invalid_response", async () => {
    await start();
    const { adapter, context, submitted: task } = await submitted();
    sandbox!.injectFault({ provider: "a", method: "GET", fault: { kind: "status", status: 200, body: { id: "cgt-other", status: "succeeded" } }, times: 1 });
    const error = await rejection(() => adapter.poll(task, context));
    expect(error.code).toBe("invalid_response");
    expect(error.detail.retryable).toBe(true);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../../src/core/clock.js";
import { InputError, OutcomeUnknownError, ProviderError, UnsafeUrlError } from "../../../src/core/errors.js";
import { STRICT_URL_POLICY, type UrlPolicy } from "../../../src/core/url-safety.js";
import type { CallContext, JobRequest, ProviderAdapter, Submitted } from "../../../src/providers/adapter.js";
import { createDAdapter, imageSizeOf, type DAdapterConfig } from "../../../src/providers/d/index.js";
import { ProviderHttp, TransportError } from "../../../src/providers/http.js";
import { startSandbox, type DEmulator, type DEmulatorOptions, type Sandbox } from "../../../src/sandbox/index.js";
import { renderPng } from "../../../src/sandbox/media/png.js";

const KEY = "sandbox-d-key";
const RENDER_MS = 5_000;

let sandbox: Sandbox | undefined;
let emulator: DEmulator;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

async function start(options: DEmulatorOptions = {}): Promise<void> {
  sandbox = await startSandbox({ providers: ["d"], emulators: { d: { renderTimeMs: RENDER_MS, ...options } } });
  emulator = sandbox.emulators.d!;
}

/** Moves the sandbox's virtual time past every job's render time. */
const finishRendering = () => sandbox!.clock.advance(RENDER_MS + 1);

function client(config: Partial<DAdapterConfig> = {}, urlPolicy: UrlPolicy = { allowHttp: true, allowPrivate: true }) {
  const apiKey = config.apiKey ?? KEY;
  const adapter = createDAdapter({ baseUrl: `${sandbox!.url}/d`, apiKey, ...config });
  // Resends of idempotent requests wait zero time, so no test sleeps.
  const http = new ProviderHttp({ provider: "d", clock: systemClock, secrets: () => [apiKey], urlPolicy, random: () => 0 });
  const context: CallContext = { http, clock: sandbox!.clock };
  return { adapter, context, http };
}

function pro(input: Record<string, unknown> = {}, extra: Partial<JobRequest> = {}): JobRequest {
  return { provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse at dawn", width: 512, height: 512, ...input }, ...extra };
}

async function submitted(request: JobRequest = pro(), config: Partial<DAdapterConfig> = {}) {
  const { adapter, context, http } = client(config);
  const validated = adapter.validate(request);
  return { adapter, context, http, validated, submitted: await adapter.submit(validated, context) };
}

async function thrown(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw");
}

async function providerError(run: () => Promise<unknown>): Promise<ProviderError> {
  const error = await thrown(run);
  if (error instanceof ProviderError) return error;
  throw error;
}

const dRequests = () => sandbox!.requests().filter((entry) => entry.provider === "d" && !entry.url.startsWith("/d-results/"));
const submits = () => dRequests().filter((entry) => entry.method === "POST");
const polls = () => dRequests().filter((entry) => entry.method === "GET");
const pathOf = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

describe("D client: requests", () => {
  it("D: submit POSTs the validated JSON body to {baseUrl}/v1/{endpoint}", async () => {
    await start();
    const { validated, submitted: job } = await submitted(pro({ seed: 7 }));
    const [submit] = submits();
    expect(submit).toMatchObject({ method: "POST", url: "/d/v1/gen-2-pro", statusCode: 200 });
    expect(submit!.headers["content-type"]).toBe("application/json");
    expect(emulator.job(job.providerJobId)).toMatchObject({ endpoint: "gen-2-pro", body: validated.body, seed: 7, requestedSize: { width: 512, height: 512 } });
  });

  it("D: every call carries x-key and never Authorization: Bearer (submit and poll)", async () => {
    await start();
    const { adapter, context, submitted: job } = await submitted();
    await adapter.poll(job, context);
    expect(dRequests()).toHaveLength(2);
    for (const entry of dRequests()) {
      expect(entry.headers["x-key"]).toBe(KEY);
      expect(entry.headers.authorization).toBeUndefined();
    }
  });

  it("D: the submit answer's id and polling_url are stored exactly as given", async () => {
    await start();
    const { submitted: job } = await submitted();
    const handles = job.handles as { id: string; polling_url: string };
    expect(Object.keys(handles).sort()).toEqual(["id", "polling_url"]);
    expect(handles.id).toBe(job.providerJobId);
    expect(emulator.job(handles.id)).toBeDefined();
    // The sandbox hands back a polling URL on another host name than the one submitted to.
    expect(new URL(handles.polling_url).host).not.toBe(new URL(sandbox!.url).host);
  });

  it("D: poll GETs the polling_url exactly as given, on its own host", async () => {
    await start();
    const { adapter, context, submitted: job } = await submitted();
    const pollingUrl = (job.handles as { polling_url: string }).polling_url;
    await adapter.poll(job, context);
    const [poll] = polls();
    expect(poll).toMatchObject({ method: "GET", url: pathOf(pollingUrl), statusCode: 200 });
    expect(poll!.headers.host).toBe(new URL(pollingUrl).host);
    expect(poll!.headers["content-type"]).toBeUndefined();
  });

  it("D: the polling_url is checked against the URL policy before it is requested", async () => {
    await start();
    const { adapter, submitted: job } = await submitted();
    const strict = client({}, STRICT_URL_POLICY);
    const error = await thrown(() => adapter.poll(job, strict.context));
    expect(error).toBeInstanceOf(UnsafeUrlError);
    expect(polls()).toHaveLength(0);
  });

  it("D: negative prompts are refused before anything is sent", async () => {
    await start();
    const { adapter } = client();
    expect(() => adapter.validate(pro({ negative_prompt: "blurry" }))).toThrow(InputError);
    expect(dRequests()).toHaveLength(0);
  });
});

describe("D client: job status", () => {
  it("D: submit → poll → Ready gives result.sample as the one output, downloadable at once", async () => {
    await start();
    const { adapter, context, http, submitted: job } = await submitted(pro({ width: 640, height: 448 }));
    expect(await adapter.poll(job, context)).toMatchObject({ kind: "pending", providerStatus: "Pending" });
    finishRendering();
    const status = await adapter.poll(job, context);
    expect(status).toMatchObject({ kind: "succeeded", providerStatus: "Ready" });
    if (status.kind !== "succeeded") throw new Error("not succeeded");
    expect(status.outputs).toHaveLength(1);
    expect(status.outputs[0]!.url).toBe((status.raw as { result: { sample: string } }).result.sample);
    const download = await http.request({ method: "GET", url: status.outputs[0]!.url, retry: "idempotent", untrustedUrl: true });
    expect(download.status).toBe(200);
    expect(imageSizeOf(download.body)).toEqual({ width: 640, height: 448 });
  });

  it("D: a status other than Ready, Error and Failed keeps the job pending with the raw value", async () => {
    await start();
    emulator.injectUnknownStatus("Request Moderated", 2);
    const { adapter, context, submitted: job } = await submitted();
    finishRendering();
    expect(await adapter.poll(job, context)).toMatchObject({ kind: "pending", providerStatus: "Request Moderated" });
    expect(await adapter.poll(job, context)).toMatchObject({ kind: "pending", providerStatus: "Request Moderated" });
    expect((await adapter.poll(job, context)).kind).toBe("succeeded");
  });

  it("D: an unknown job id answers Task not found: pending, marked as a task D does not know (the engine ends it after a bounded time; issue 36, finding 2)", async () => {
    await start();
    const { adapter, context, submitted: job } = await submitted();
    const pollingUrl = (job.handles as { polling_url: string }).polling_url.replace(job.providerJobId, "no-such-job");
    const status = await adapter.poll({ providerJobId: "no-such-job", handles: { id: "no-such-job", polling_url: pollingUrl } }, context);
    expect(status).toMatchObject({ kind: "pending", providerStatus: "Task not found", unrecognised: { said: 'D answered status "Task not found" for job no-such-job', taskUnknown: true } });
  });

  for (const outcome of ["Error", "Failed"] as const) {
    it(`D: status ${outcome} fails the job as provider_failed with the raw answer kept`, async () => {
      await start();
      emulator.failNextJobs(outcome);
      const { adapter, context, submitted: job } = await submitted();
      finishRendering();
      const status = await adapter.poll(job, context);
      expect(status).toMatchObject({ kind: "failed", providerStatus: outcome, code: "provider_failed", raw: { id: job.providerJobId, status: outcome } });
      if (status.kind !== "failed") throw new Error("not failed");
      expect(status.message).toContain(outcome);
      expect(status.message).toContain(job.providerJobId);
    });
  }

  it("D: poll tracking limits are D's: 30 minutes by default, configurable", async () => {
    await start();
    const { adapter, validated } = await submitted();
    expect(adapter.limits(validated).trackingDeadlineMs).toBe(30 * 60_000);
    expect(client({ trackingDeadlineMs: 5 * 60_000 }).adapter.limits(validated).trackingDeadlineMs).toBe(5 * 60_000);
  });
});

describe("D client: errors", () => {
  it("D: 402 is insufficient_credits and halts D (not retryable)", async () => {
    await start({ balanceMicroUsd: 0 });
    const error = await providerError(() => submitted());
    expect(error.code).toBe("insufficient_credits");
    expect(error.detail).toMatchObject({ provider: "d", httpStatus: 402, haltsProvider: true, retryable: false });
    expect(error.detail.rawBody).toContain("insufficient_credits");
    expect(emulator.rejected402Count).toBe(1);
    expect(submits()).toHaveLength(1);
  });

  it("D: 429 is slot_limit back-pressure, retryable later, never resent at once", async () => {
    await start({ concurrencyLimit: 1 });
    await submitted();
    const error = await providerError(() => submitted(pro({ prompt: "one too many" })));
    expect(error.code).toBe("slot_limit");
    expect(error.detail).toMatchObject({ httpStatus: 429, backpressure: true, retryable: true });
    expect(submits()).toHaveLength(2);
    expect(emulator.rejected429Count).toBe(1);
  });

  it("D: gen-ctx-max's own 6-slot limit answers 429 as slot_limit too", async () => {
    await start();
    const context = (prompt: string) => pro({ prompt }, { model: "gen-ctx-max" });
    for (let index = 0; index < 6; index++) await submitted(context(`edit ${index}`));
    const error = await providerError(() => submitted(context("the seventh")));
    expect(error.code).toBe("slot_limit");
    expect(emulator.activeCount()).toBe(6);
  });

  it("D: another 4xx is provider_rejected, not retryable, with the raw body kept", async () => {
    await start();
    const error = await providerError(() => submitted(pro({}, { model: "gen-2-max" }), { apiKey: "not-the-key" }));
    expect(error.code).toBe("provider_rejected");
    expect(error.detail).toMatchObject({ httpStatus: 401, retryable: false });
    expect(error.detail.rawBody).toContain("invalid_key");
    expect(error.message).toContain("MEDIAGATE_D_API_KEY");
    expect(error.message).not.toContain("not-the-key");
  });

  for (const status of [502, 503]) {
    it(`D: ${status} on submit is provider_unavailable and retryable`, async () => {
      await start();
      sandbox!.injectFault({ provider: "d", method: "POST", fault: { kind: "status", status, body: { code: "busy" } }, times: 1 });
      const error = await providerError(() => submitted());
      expect(error.code).toBe("provider_unavailable");
      expect(error.detail).toMatchObject({ httpStatus: status, retryable: true });
      expect(submits()).toHaveLength(1);
    });
  }

  for (const status of [500, 504]) {
    it(`D: ${status} on submit is an unknown outcome (the job may have been created)`, async () => {
      await start();
      sandbox!.injectFault({ provider: "d", method: "POST", fault: { kind: "status", status, body: { code: "oops" } }, times: 1 });
      const error = await thrown(() => submitted());
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect((error as OutcomeUnknownError).code).toBe("submit_outcome_unknown");
      expect(submits()).toHaveLength(1);
    });
  }

  it("D: a submit answer without id and polling_url is invalid_response", async () => {
    await start();
    sandbox!.injectFault({ provider: "d", method: "POST", fault: { kind: "status", status: 200, body: { id: "abc" } }, times: 1 });
    const error = await providerError(() => submitted());
    expect(error.code).toBe("invalid_response");
    expect(error.detail).toMatchObject({ httpStatus: 200, retryable: false, rawBody: JSON.stringify({ id: "abc" }) });
  });

  it("D: a 2xx submit answer that is not JSON is invalid_response, saying a job may exist", async () => {
    await start();
    sandbox!.injectFault({ provider: "d", method: "POST", fault: { kind: "status", status: 200, body: "<html>ok</html>", headers: { "content-type": "text/html" } }, times: 1 });
    const error = await providerError(() => submitted());
    expect(error.code).toBe("invalid_response");
    expect(error.message).toMatch(/a job may exist at D, so it is not resent/);
    expect(error.detail.rawBody).toBe("<html>ok</html>");
  });

  it("D: a network failure on submit propagates as the HTTP layer's TransportError", async () => {
    await start();
    sandbox!.injectFault({ provider: "d", method: "POST", fault: { kind: "drop_after_handling" }, times: 1 });
    const error = await thrown(() => submitted());
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).maybeSent).toBe(true);
  });

  it("D: a poll answered 503 is resent by the HTTP layer (polls are idempotent)", async () => {
    await start();
    const { adapter, context, submitted: job } = await submitted();
    sandbox!.injectFault({ provider: "d", method: "GET", fault: { kind: "status", status: 503, body: { code: "busy" } }, times: 1 });
    expect((await adapter.poll(job, context)).kind).toBe("pending");
    expect(polls().map((entry) => entry.statusCode)).toEqual([503, 200]);
  });

  it("D: a poll answer without a status is invalid_response, retryable", async () => {
    await start();
    const { adapter, context, submitted: job } = await submitted();
    sandbox!.injectFault({ provider: "d", method: "GET", fault: { kind: "status", status: 200, body: { id: job.providerJobId } }, times: 1 });
    const error = await providerError(() => adapter.poll(job, context));
    expect(error.code).toBe("invalid_response");
    expect(error.detail.retryable).toBe(true);
  });

  it("D: stored handles without a polling_url cannot be polled", async () => {
    await start();
    const { adapter, context } = client();
    const broken: Submitted = { providerJobId: "abc", handles: { id: "abc" } };
    expect((await providerError(() => adapter.poll(broken, context))).code).toBe("invalid_handle");
    expect(dRequests()).toHaveLength(0);
  });
});

describe("D client: references and price", () => {
  it("D: a local reference file arrives as base64 in input_image", async () => {
    await start();
    const bytes = renderPng(512, 512, "reference", 1);
    const { submitted: job } = await submitted(pro({ width: 1024, height: 768 }, { images: [{ fileName: "reference.png", bytes }] }));
    const received = emulator.job(job.providerJobId)!;
    expect(received.referenceCount).toBe(1);
    expect(received.body.input_image).toBe(bytes.toString("base64"));
  });

  it("D: the estimate equals what the sandbox charged (pricing page view)", async () => {
    await start();
    const cases: JobRequest[] = [
      pro({ width: 1024, height: 768 }),
      pro({ width: 2048, height: 2048 }),
      pro({ width: 1024, height: 1024 }, { images: ["https://images.example/a.png", "https://images.example/b.png"] }),
      pro({ width: 1024, height: 1024 }, { images: [{ fileName: "ref.png", bytes: renderPng(1536, 1024, "ref", 2) }] }),
      pro({ width: 1504, height: 1008 }, { model: "gen-2-max" }),
      pro({ width: 768, height: 1152 }, { model: "gen-2-flex" }),
      pro({ width: 512, height: 512 }, { model: "gen-2-compact-4b" }),
      pro({ width: 2048, height: 1024 }, { model: "gen-2-compact-9b-kv-finetuned" }),
      pro({ width: 1024, height: 1024 }, { model: "gen-2-pro-preview" }),
    ];
    for (const request of cases) {
      const { adapter, validated, submitted: job } = await submitted(request);
      const estimate = await adapter.estimate(validated);
      expect(estimate.microUsd, `${request.model} ${JSON.stringify(request.input)}`).toBe(emulator.chargesMicroUsd[job.providerJobId]);
    }
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { InputError, OutcomeUnknownError } from "../../../src/core/errors.js";
import { checkWebhookUrl } from "../../../src/providers/f/index.js";
import { providerError } from "../../helpers/errors.js";
import { F_KEY, FWorld, RELAXED, STRICT } from "./harness.js";

let world: FWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function start(options: Parameters<typeof FWorld.start>[0] = {}): Promise<FWorld> {
  world = await FWorld.start(options);
  return world;
}

async function thrown(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw");
}

const posts = (w: FWorld) => w.requests().filter((entry) => entry.method === "POST");

describe("F client: generate request", () => {
  it("F: submit POSTs a multipart form to {base}/v1/{model}/async/generate with the Api-Key header", async () => {
    const w = await start();
    const adapter = w.adapter();
    const { validated, submitted } = await w.submit(adapter, { text_prompt: "a red kite over dunes", resolution: "1280x768", rendering_speed: "TURBO" }, { webhook: false });
    const [submit] = posts(w);
    expect(submit).toMatchObject({ method: "POST", url: "/f/v1/img-v3/async/generate", statusCode: 200 });
    expect(submit!.headers["api-key"]).toBe(F_KEY);
    expect(submit!.headers.authorization).toBeUndefined();
    expect(String(submit!.headers["content-type"])).toMatch(/^multipart\/form-data; boundary=/);
    // What the sandbox parsed out of the form: exactly the validated fields, as text.
    expect(w.emulator.generation(submitted.providerJobId)!.fields).toEqual(validated.body);
    expect(w.emulator.generation(submitted.providerJobId)).toMatchObject({ promptKind: "text", resolution: "1280x768", renderingSpeed: "TURBO", model: "img-v3" });
  });

  it("F: json_prompt arrives as one form field carrying the object's JSON text", async () => {
    const w = await start();
    const prompt = { subject: "kite", setting: { place: "dunes", light: "dusk" } };
    const { submitted } = await w.submit(w.adapter(), { json_prompt: prompt }, { webhook: false });
    const generation = w.emulator.generation(submitted.providerJobId)!;
    expect(generation.fields).toEqual({ json_prompt: JSON.stringify(prompt) });
    expect(generation.promptKind).toBe("json");
    expect(JSON.parse(generation.prompt)).toEqual(prompt);
  });

  it("F: fields the spec does not show reach F as text form fields", async () => {
    const w = await start();
    const { submitted } = await w.submit(w.adapter(), { text_prompt: "kite", num_images: 2, seed: 40 }, { webhook: false });
    expect(w.emulator.generation(submitted.providerJobId)).toMatchObject({ fields: { text_prompt: "kite", num_images: "2", seed: "40" }, seeds: [40, 41] });
  });

  it("F: the generation_id is stored exactly as returned", async () => {
    const w = await start();
    const { submitted } = await w.submit(w.adapter(), undefined, { webhook: false });
    expect(submitted.providerJobId).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(submitted.handles).toEqual({ generation_id: submitted.providerJobId, webhook_url: null });
    expect(w.emulator.generations().map((generation) => generation.id)).toEqual([submitted.providerJobId]);
  });

  it("F: text_prompt and json_prompt together are refused before any request", async () => {
    const w = await start();
    const adapter = w.adapter();
    expect(() => adapter.validate({ provider: "f", model: "img-v3", input: { text_prompt: "kite", json_prompt: { subject: "kite" } } })).toThrow(InputError);
    expect(w.requests()).toHaveLength(0);
  });

  it("F: FLASH is refused on this model version without a request", async () => {
    const w = await start();
    const adapter = w.adapter();
    expect(() => adapter.validate({ provider: "f", model: "img-v3", input: { text_prompt: "kite", rendering_speed: "FLASH" } })).toThrow(/FLASH returns 400/);
    expect(w.requests()).toHaveLength(0);
  });

  it("F: F's own 400 for FLASH (when misconfigured as allowed) is provider_rejected, not retried", async () => {
    const w = await start();
    const adapter = w.adapter({ flashAllowedModels: ["img-v3"] });
    const error = await providerError(() => w.submit(adapter, { text_prompt: "kite", rendering_speed: "FLASH" }, { webhook: false }));
    expect(error.code).toBe("provider_rejected");
    expect(error.detail).toMatchObject({ httpStatus: 400, retryable: false });
    expect(error.detail.rawBody).toMatch(/FLASH/);
    expect(posts(w)).toHaveLength(1);
  });

  it("F: FLASH goes through on a model configured as allowing it", async () => {
    const w = await start();
    const adapter = w.adapter({ flashAllowedModels: ["img-v2"] });
    const { submitted } = await w.submit(adapter, { text_prompt: "kite", rendering_speed: "FLASH" }, { webhook: false, model: "img-v2" });
    expect(w.emulator.generation(submitted.providerJobId)).toMatchObject({ renderingSpeed: "FLASH", model: "img-v2" });
  });
});

describe("F client: webhook_url", () => {
  it("F: webhook_url is sent as a query parameter, taken from the job's callback URL", async () => {
    const w = await start();
    const { submitted } = await w.submit(w.adapter());
    const [submit] = posts(w);
    const query = new URL(submit!.url, "http://sandbox").searchParams;
    expect([...query.keys()]).toEqual(["webhook_url"]);
    expect(query.get("webhook_url")).toBe(w.callbackUrl());
    expect(w.emulator.generation(submitted.providerJobId)!.webhookUrl).toBe(w.callbackUrl());
    expect(submitted.handles).toMatchObject({ webhook_url: w.callbackUrl() });
  });

  it("F: without a callback URL no webhook_url is sent (polling only)", async () => {
    const w = await start();
    const { submitted } = await w.submit(w.adapter(), undefined, { webhook: false });
    expect(posts(w)[0]!.url).toBe("/f/v1/img-v3/async/generate");
    expect(w.emulator.generation(submitted.providerJobId)!.webhookUrl).toBeUndefined();
  });

  const refused: Array<[string, string]> = [
    ["http (not https)", "http://hooks.example.com/webhooks/f/job-1"],
    ["loopback 127.0.0.1", "https://127.0.0.1/webhooks/f/job-1"],
    ["private 10.x", "https://10.1.2.3/webhooks/f/job-1"],
    ["private 192.168.x", "https://192.168.0.10/webhooks/f/job-1"],
    ["cloud metadata 169.254.169.254", "https://169.254.169.254/latest/meta-data"],
    ["cloud metadata by name", "https://metadata.google.internal/computeMetadata/v1/"],
    ["localhost (a name for loopback)", "https://localhost/webhooks/f/job-1"],
    ["IPv6 loopback [::1]", "https://[::1]/webhooks/f/job-1"],
    ["IPv4-mapped IPv6 loopback", "https://[::ffff:127.0.0.1]/webhooks/f/job-1"],
    ["a name resolving to loopback", "https://hooks.rebind.test/webhooks/f/job-1"],
    ["a name resolving to a private address", "https://inside.rebind.test/webhooks/f/job-1"],
    ["a host that does not resolve", "https://nowhere.rebind.test/webhooks/f/job-1"],
  ];
  for (const [what, url] of refused) {
    it(`F: webhook_url refused before sending: ${what}`, async () => {
      const w = await start();
      const resolveHost = async (host: string): Promise<string[]> => {
        if (host === "hooks.rebind.test") return ["93.184.216.34", "127.0.0.1"];
        if (host === "inside.rebind.test") return ["10.0.0.7"];
        if (host === "hooks.example.com") return ["93.184.216.34"];
        throw new Error(`ENOTFOUND ${host}`);
      };
      const adapter = w.adapter({ resolveHost });
      const validated = adapter.validate({ provider: "f", model: "img-v3", input: { text_prompt: "kite" } });
      const error = await thrown(() => adapter.submit(validated, w.context({ callbackUrl: url, urlPolicy: STRICT })));
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).field).toBe("webhook_url");
      expect(w.requests()).toHaveLength(0);
    });
  }

  it("F: an https webhook_url on a public host passes the check", async () => {
    const resolveHost = async () => ["93.184.216.34"];
    await expect(checkWebhookUrl("https://hooks.example.com/webhooks/f/job-1", STRICT, resolveHost)).resolves.toBe("https://hooks.example.com/webhooks/f/job-1");
  });

  it("F: the local set-up's relaxed policy admits a loopback http webhook_url, but never a metadata host", async () => {
    await expect(checkWebhookUrl("http://127.0.0.1:9/webhooks/f/job-1", RELAXED)).resolves.toBeDefined();
    await expect(checkWebhookUrl("http://169.254.169.254/latest", RELAXED)).rejects.toThrow(/cloud metadata/);
    await expect(checkWebhookUrl("http://metadata.google.internal/", RELAXED)).rejects.toThrow(/cloud metadata/);
    const toMetadata = async () => ["169.254.169.254"];
    await expect(checkWebhookUrl("https://innocent.test/", RELAXED, toMetadata)).rejects.toThrow(/resolves to a cloud metadata address/);
  });

  it("F (issue 36, finding 11): a metadata address carried inside IPv6 (mapped, NAT64, 6to4) is refused under the relaxed policy too, literal or resolved", async () => {
    for (const carried of ["::ffff:a9fe:a9fe", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "64:ff9b::6464:64c8"]) {
      await expect(checkWebhookUrl(`http://[${carried}]/latest`, RELAXED), carried).rejects.toThrow(/cloud metadata address/);
      await expect(checkWebhookUrl("https://innocent.test/", RELAXED, async () => [carried]), carried).rejects.toThrow(/resolves to a cloud metadata address/);
    }
  });
});

describe("F client: reading a generation", () => {
  it("F: a generation is read with GET {base}/v1/generations/{id} and the Api-Key header; pending while unfinished", async () => {
    const w = await start();
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter, undefined, { webhook: false });
    const status = await adapter.poll(submitted, context);
    expect(status).toEqual({ kind: "pending", providerStatus: "pending", raw: { status: "pending" } });
    const read = w.requests().find((entry) => entry.method === "GET")!;
    expect(read.url).toBe(`/f/v1/generations/${submitted.providerJobId}`);
    expect(read.headers["api-key"]).toBe(F_KEY);
    expect(read.headers["content-type"]).toBeUndefined();
  });

  it("F: a ready generation gives one output per image with seed, prompt, resolution and is_image_safe", async () => {
    const w = await start();
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter, { text_prompt: "two kites", resolution: "512x512", num_images: 2, seed: 7 }, { webhook: false });
    w.advance();
    const status = await adapter.poll(submitted, context);
    if (status.kind !== "succeeded") throw new Error(`expected succeeded, got ${status.kind}`);
    expect(status.outputs.map((output) => output.metadata)).toEqual([
      { seed: 7, prompt: "two kites", resolution: "512x512", is_image_safe: true },
      { seed: 8, prompt: "two kites", resolution: "512x512", is_image_safe: true },
    ]);
    expect(status.providerStatus).toBe("ready");
    expect(status.raw).toEqual(w.emulator.generation(submitted.providerJobId)!.payload);
    // Image links expire (lifetime not shown): they work at once.
    const image = await fetch(status.outputs[0]!.url);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/png");
  });

  it("F: is_image_safe false is kept with the output", async () => {
    const w = await start();
    w.emulator.injectUnsafeImages(1);
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter, undefined, { webhook: false });
    w.advance();
    const status = await adapter.poll(submitted, context);
    expect(status.kind === "succeeded" && status.outputs[0]!.metadata).toMatchObject({ is_image_safe: false });
  });

  it("F: a status other than pending without a result keeps the job pending with the raw value (others are not shown)", async () => {
    const w = await start();
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter, undefined, { webhook: false });
    w.sandbox.injectFault({ provider: "f", method: "GET", fault: { kind: "status", status: 200, body: { status: "queued", eta: 3 } }, times: 1 });
    expect(await adapter.poll(submitted, context)).toEqual({
      kind: "pending",
      providerStatus: "queued",
      unrecognised: { said: `F answered status "queued" for generation ${submitted.providerJobId}`, taskUnknown: false },
      raw: { status: "queued", eta: 3 },
    });
  });

  it("F: a ready payload whose images have no link fails with no_outputs and the raw payload", async () => {
    const w = await start();
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter, undefined, { webhook: false });
    const body = { generation_id: submitted.providerJobId, created: "2025-01-01T00:00:00Z", data: [{ url: null, seed: 1, is_image_safe: false }] };
    w.sandbox.injectFault({ provider: "f", method: "GET", fault: { kind: "status", status: 200, body }, times: 1 });
    expect(await adapter.poll(submitted, context)).toMatchObject({ kind: "failed", code: "no_outputs", raw: body });
  });

  it("F: a payload naming another generation is invalid_response, retryable", async () => {
    const w = await start();
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter, undefined, { webhook: false });
    const body = { generation_id: "someone-else", data: [{ url: "https://x/1.png", seed: 1 }] };
    w.sandbox.injectFault({ provider: "f", method: "GET", fault: { kind: "status", status: 200, body }, times: 1 });
    const error = await providerError(() => adapter.poll(submitted, context));
    expect(error.code).toBe("invalid_response");
    expect(error.detail.retryable).toBe(true);
  });

  it("F: an answer with neither status nor data is invalid_response, retryable", async () => {
    const w = await start();
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter, undefined, { webhook: false });
    w.sandbox.injectFault({ provider: "f", method: "GET", fault: { kind: "status", status: 200, body: { hello: 1 } }, times: 1 });
    expect((await providerError(() => adapter.poll(submitted, context))).detail).toMatchObject({ retryable: true, httpStatus: 200 });
  });

  it("F: a read answered 503 is resent by the HTTP layer (reads are idempotent)", async () => {
    const w = await start();
    const adapter = w.adapter();
    const { submitted, context } = await w.submit(adapter, undefined, { webhook: false });
    w.sandbox.injectFault({ provider: "f", method: "GET", fault: { kind: "status", status: 503, body: "busy" }, times: 1 });
    expect((await adapter.poll(submitted, context)).kind).toBe("pending");
    expect(w.requests().filter((entry) => entry.method === "GET")).toHaveLength(2);
  });

  it("F: an unknown generation id is task_not_found (404), marked as a task F does not know (issue 36, finding 2), and ids are encoded as one path segment", async () => {
    const w = await start();
    const adapter = w.adapter();
    const error = await providerError(() => adapter.poll({ providerJobId: "a/../b", handles: { generation_id: "a/../b" } }, w.context()));
    expect(error).toMatchObject({ code: "task_not_found", detail: { httpStatus: 404, retryable: false, taskUnknown: true } });
    expect(w.requests()[0]!.url).toBe("/f/v1/generations/a%2F..%2Fb");
  });

  it("F: stored handles without a generation_id cannot be read", async () => {
    const w = await start();
    expect((await providerError(() => w.adapter().poll({ providerJobId: "x", handles: {} }, w.context()))).code).toBe("invalid_handle");
  });
});

describe("F client: submit errors", () => {
  it("F: a wrong Api-Key is provider_rejected naming MEDIAGATE_F_API_KEY", async () => {
    const w = await start();
    const error = await providerError(() => w.submit(w.adapter({ apiKey: "not-the-key" }), undefined, { webhook: false }));
    expect(error.code).toBe("provider_rejected");
    expect(error.detail.httpStatus).toBe(401);
    expect(error.message).toMatch(/MEDIAGATE_F_API_KEY/);
    expect(error.message).not.toMatch(/not-the-key/);
  });

  it("F: an unknown model slug answered 404 is provider_rejected", async () => {
    const w = await start();
    const error = await providerError(() => w.submit(w.adapter(), undefined, { webhook: false, model: "img-v9" }));
    expect(error).toMatchObject({ code: "provider_rejected", detail: { httpStatus: 404 } });
  });

  it("F: 429 is back-pressure, retryable later, never resent at once", async () => {
    const w = await start();
    w.sandbox.injectFault({ provider: "f", method: "POST", fault: { kind: "status", status: 429, body: { error: "slow down" }, headers: { "retry-after": "7" } }, times: 1 });
    const error = await providerError(() => w.submit(w.adapter(), undefined, { webhook: false }));
    expect(error.code).toBe("rate_limited");
    expect(error.detail).toMatchObject({ backpressure: true, retryable: true, retryAfterMs: 7_000 });
    expect(posts(w)).toHaveLength(1);
  });

  it("F: 503 is retryable; 500 leaves the outcome unknown (a generation may exist), never resent", async () => {
    const w = await start();
    w.sandbox.injectFault({ provider: "f", method: "POST", fault: { kind: "status", status: 503 }, times: 1 });
    expect((await providerError(() => w.submit(w.adapter(), undefined, { webhook: false }))).detail).toMatchObject({ retryable: true, httpStatus: 503 });
    w.sandbox.injectFault({ provider: "f", method: "POST", fault: { kind: "status", status: 500 }, times: 1 });
    expect(await thrown(() => w.submit(w.adapter(), undefined, { webhook: false }))).toBeInstanceOf(OutcomeUnknownError);
    expect(posts(w)).toHaveLength(2);
  });

  it("F: a 2xx answer without generation_id leaves the outcome unknown", async () => {
    const w = await start();
    w.sandbox.injectFault({ provider: "f", method: "POST", fault: { kind: "status", status: 200, body: { id: "x" } }, times: 1 });
    const error = await thrown(() => w.submit(w.adapter(), undefined, { webhook: false }));
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as OutcomeUnknownError).message).toMatch(/no generation_id/);
  });
});

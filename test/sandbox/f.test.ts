import { createHash, createPublicKey, verify } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createAEmulator } from "../../src/sandbox/a/index.js";
import { pngSize } from "../../src/sandbox/media/png.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createFEmulator, type FEmulator, type FEmulatorOptions, type FJwk } from "../../src/sandbox/f/index.js";
import { until } from "../helpers/until.js";

const API_KEY = "sandbox-f-key";

let sandbox: Sandbox | undefined;
const servers: Server[] = [];
afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function start(options: FEmulatorOptions = {}): Promise<{ sandbox: Sandbox; f: FEmulator }> {
  const f = createFEmulator(options);
  sandbox = await startSandbox({ providers: ["f"], emulators: { f: f } });
  return { sandbox, f };
}

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A webhook receiver on 127.0.0.1 answering the given statuses in turn ("hang": never answer), then 200. */
async function receiver(answers: (number | "hang")[] = []): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks) });
      const answer = answers.shift() ?? 200;
      if (answer !== "hang") response.writeHead(answer).end(answer < 300 ? "ok" : "no");
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/f`, received };
}

function form(fields: Record<string, string>): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  return body;
}

async function generate(
  base: string,
  fields: Record<string, string>,
  query: { webhookUrl?: string; model?: string; apiKey?: string } = {},
): Promise<Response> {
  const search = query.webhookUrl !== undefined ? `?webhook_url=${encodeURIComponent(query.webhookUrl)}` : "";
  return fetch(`${base}/f/v1/${query.model ?? "img-v3"}/async/generate${search}`, {
    method: "POST",
    headers: query.apiKey === "" ? {} : { "Api-Key": query.apiKey ?? API_KEY },
    body: form(fields),
  });
}

const SMALL = { text_prompt: "a lighthouse at dusk", resolution: "256x256" };

async function generationId(response: Response): Promise<string> {
  expect(response.status).toBe(200);
  const body = (await response.json()) as { generation_id: string };
  return body.generation_id;
}

function verifies(jwk: FJwk, headers: IncomingHttpHeaders, raw: Buffer): boolean {
  const digest = createHash("sha256").update(raw).digest("hex");
  const message = [
    headers["x-img-webhook-generation-id"],
    headers["x-img-webhook-user-id"],
    headers["x-img-webhook-timestamp"],
    digest,
  ].join("\n");
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  return verify(null, Buffer.from(message, "utf8"), key, Buffer.from(String(headers["x-img-webhook-signature"]), "hex"));
}

async function jwks(base: string): Promise<FJwk[]> {
  const response = await fetch(`${base}/f/v1/.well-known/jwks.json`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { keys: FJwk[] }).keys;
}

describe("F requests", () => {
  it("F: every call needs the Api-Key header", async () => {
    const { sandbox } = await start();
    expect((await generate(sandbox.url, SMALL, { apiKey: "" })).status).toBe(401);
    expect((await generate(sandbox.url, SMALL, { apiKey: "wrong" })).status).toBe(401);
    expect((await fetch(`${sandbox.url}/f/v1/generations/abc`)).status).toBe(401);
    expect((await generate(sandbox.url, SMALL)).status).toBe(200);
  });

  it("F: text_prompt and json_prompt together are rejected", async () => {
    const { sandbox } = await start();
    const both = await generate(sandbox.url, { ...SMALL, json_prompt: JSON.stringify({ subject: "a lighthouse" }) });
    expect(both.status).toBe(400);
    expect(await both.json()).toMatchObject({ error: { code: "invalid_request" } });
    expect((await generate(sandbox.url, { resolution: "256x256" })).status).toBe(400);
    expect((await generate(sandbox.url, { json_prompt: JSON.stringify({ subject: "a lighthouse" }), resolution: "256x256" })).status).toBe(200);
    expect((await generate(sandbox.url, { json_prompt: "not json", resolution: "256x256" })).status).toBe(400);
  });

  it("F: FLASH rendering_speed answers 400 on this model version", async () => {
    const { sandbox } = await start();
    const refused = await generate(sandbox.url, { ...SMALL, rendering_speed: "FLASH" }, { model: "img-v3" });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { field: "rendering_speed" } });
    expect((await generate(sandbox.url, { ...SMALL, rendering_speed: "FLASH" }, { model: "img-v2" })).status).toBe(200);
    for (const speed of ["TURBO", "DEFAULT", "QUALITY"]) {
      expect((await generate(sandbox.url, { ...SMALL, rendering_speed: speed })).status).toBe(200);
    }
    expect((await generate(sandbox.url, { ...SMALL, rendering_speed: "WARP" })).status).toBe(400);
    expect((await generate(sandbox.url, SMALL, { model: "img-v9" })).status).toBe(404);
  });

  it("F: resolution is WIDTHxHEIGHT, each side a multiple of 16 from 256 to 2048", async () => {
    const { sandbox } = await start();
    for (const resolution of ["1024", "1024*1024", "1000x1000", "128x128", "4096x4096"]) {
      expect((await generate(sandbox.url, { text_prompt: "x", resolution })).status).toBe(400);
    }
    expect((await generate(sandbox.url, { text_prompt: "x", resolution: "512x320" })).status).toBe(200);
  });

  it("F: the request must be a multipart form", async () => {
    const { sandbox } = await start();
    const response = await fetch(`${sandbox.url}/f/v1/img-v3/async/generate`, {
      method: "POST",
      headers: { "Api-Key": API_KEY, "content-type": "application/json" },
      body: JSON.stringify(SMALL),
    });
    expect(response.status).toBe(415);
  });

  it("F: the multipart parser is F's alone; other providers' routes on the shared server do not get it", async () => {
    sandbox = await startSandbox({ providers: ["a", "f"], emulators: { a: createAEmulator(), f: createFEmulator() } });
    const toA = await fetch(`${sandbox.url}/a/api/v3/contents/generations/tasks`, { method: "POST", headers: { authorization: "Bearer sandbox-a-key" }, body: form(SMALL) });
    expect(toA.status).toBe(415);
    expect((await generate(sandbox.url, SMALL)).status).toBe(200);
  });

  it("F: a loopback webhook_url is refused unless allowed", async () => {
    const hook = await receiver();
    const refusing = await start();
    for (const webhookUrl of [hook.url, "https://127.0.0.1/hook", "https://localhost/hook", "https://[::1]/hook"]) {
      expect((await generate(refusing.sandbox.url, SMALL, { webhookUrl })).status).toBe(400);
    }
    await refusing.sandbox.stop();
    const allowing = await start({ allowLoopbackWebhooks: true });
    expect((await generate(allowing.sandbox.url, SMALL, { webhookUrl: hook.url })).status).toBe(200);
    // The deviation covers loopback only.
    expect((await generate(allowing.sandbox.url, SMALL, { webhookUrl: "http://10.0.0.8/hook" })).status).toBe(400);
  });

  it("F: webhook_url must be https and not a private, link-local or metadata host, also after DNS resolution", async () => {
    const names: Record<string, string[]> = {
      "hooks.example.com": ["93.184.216.34"],
      "sneaky.example.com": ["93.184.216.34", "10.1.2.3"],
      "meta.example.com": ["169.254.169.254"],
    };
    const { sandbox } = await start({ resolveHost: async (host) => names[host] ?? [] });
    const status = async (webhookUrl: string) => (await generate(sandbox.url, SMALL, { webhookUrl })).status;
    expect(await status("https://hooks.example.com/f")).toBe(200);
    expect(await status("http://hooks.example.com/f")).toBe(400);
    expect(await status("https://sneaky.example.com/f")).toBe(400);
    expect(await status("https://meta.example.com/f")).toBe(400);
    expect(await status("https://nowhere.example.com/f")).toBe(400);
    for (const literal of ["10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "[fe80::1]", "[fd00:ec2::254]", "[::ffff:127.0.0.1]", "metadata.google.internal"]) {
      expect(await status(`https://${literal}/f`)).toBe(400);
    }
  });
});

describe("F generations", () => {
  it("F: a generation reads pending, then the payload with real PNGs of the resolution whose links expire", async () => {
    const { sandbox, f } = await start({ renderMs: 8_000 });
    const id = await generationId(await generate(sandbox.url, { ...SMALL, resolution: "320x256", num_images: "2", seed: "41" }));
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    const read = async () => fetch(`${sandbox.url}/f/v1/generations/${id}`, { headers: { "Api-Key": API_KEY } });
    expect(await (await read()).json()).toEqual({ status: "pending" });
    sandbox.clock.advance(8_000);
    const payload = (await (await read()).json()) as { created: string; generation_id: string; data: { url: string; prompt: string; resolution: string; seed: number; is_image_safe: boolean }[] };
    expect(payload.generation_id).toBe(id);
    expect(new Date(payload.created).getTime()).toBe(f.generation(id)!.readyAt);
    expect(payload.data.map((item) => [item.prompt, item.resolution, item.seed, item.is_image_safe])).toEqual([
      [SMALL.text_prompt, "320x256", 41, true],
      [SMALL.text_prompt, "320x256", 42, true],
    ]);
    const image = await fetch(payload.data[0]!.url);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(pngSize(Buffer.from(await image.arrayBuffer()))).toEqual({ width: 320, height: 256 });
    sandbox.clock.advance(3_600_000);
    expect((await fetch(payload.data[1]!.url)).status).toBe(403);
  });

  it("F: the JWKS lists Ed25519 keys with x in base64url without padding", async () => {
    const { sandbox } = await start();
    const keys = await jwks(sandbox.url);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ kty: "OKP", crv: "Ed25519", kid: expect.any(String) });
    expect(keys[0]!.x).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(keys[0]!.x, "base64url")).toHaveLength(32);
  });
});

describe("F deliveries", () => {
  it("F: a delivery signature verifies against the JWKS key", async () => {
    const hook = await receiver();
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0 });
    const id = await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await until(() => hook.received.length === 1, "the first delivery at the receiver", 3_000);
    const [delivery] = hook.received;
    const { headers, body } = delivery!;
    expect(headers["content-type"]).toBe("application/json");
    expect(headers["x-img-webhook-generation-id"]).toBe(id);
    expect(headers["x-img-webhook-user-id"]).toBe(Buffer.from("sandbox-f-account").toString("base64"));
    expect(headers["x-img-webhook-timestamp"]).toMatch(/^\d+$/);
    expect(headers["x-img-webhook-signature"]).toMatch(/^[0-9a-f]{128}$/);
    const keys = await jwks(sandbox.url);
    expect(headers["x-img-webhook-key-id"]).toBe(keys[0]!.kid);
    expect(verifies(keys[0]!, headers, body)).toBe(true);
    // The body is the generation result itself, the same bytes the read returns.
    const read = await fetch(`${sandbox.url}/f/v1/generations/${id}`, { headers: { "Api-Key": API_KEY } });
    expect(Buffer.from(await read.arrayBuffer()).equals(body)).toBe(true);
    await until(() => f.generation(id)?.delivery?.state === "acknowledged", "the delivery to be acknowledged", 3_000);
    expect(f.deliveries()[0]!.body.equals(body)).toBe(true);
  });

  it("F: X-Img-Webhook-Timestamp is wall-clock time by default, however far virtual time runs ahead; \"virtual\" follows the sandbox's clock", async () => {
    const hook = await receiver();
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0 });
    sandbox.clock.advance(3_600_000);
    const id = await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await until(() => f.generation(id)?.delivery?.state === "acknowledged", "the delivery to be acknowledged", 3_000);
    const realTimestamp = Number(hook.received[0]!.headers["x-img-webhook-timestamp"]);
    expect(Math.abs(realTimestamp - Date.now() / 1000)).toBeLessThan(5);
    expect(verifies((await jwks(sandbox.url))[0]!, hook.received[0]!.headers, hook.received[0]!.body)).toBe(true);
    await sandbox.stop();

    const virtualHook = await receiver();
    const virtual = await start({ allowLoopbackWebhooks: true, renderMs: 0, webhookTimestampClock: "virtual" });
    virtual.sandbox.clock.advance(3_600_000);
    const virtualId = await generationId(await generate(virtual.sandbox.url, SMALL, { webhookUrl: virtualHook.url }));
    await until(() => virtual.f.generation(virtualId)?.delivery?.state === "acknowledged", "the delivery to be acknowledged", 3_000);
    const virtualTimestamp = Number(virtualHook.received[0]!.headers["x-img-webhook-timestamp"]);
    expect(Math.abs(virtualTimestamp - virtual.sandbox.clock.now() / 1000)).toBeLessThan(5);
    expect(virtualTimestamp - realTimestamp).toBeGreaterThan(3_500);
  });

  it("F: a delivery is retried when not answered 2xx", async () => {
    const hook = await receiver([500, 404]);
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0, retryDelaysMs: [10_000, 10_000, 10_000] });
    const id = await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await until(() => hook.received.length === 1 && f.generation(id)?.delivery?.state === "waiting", "one refused delivery, a retry waiting", 3_000);
    sandbox.clock.advance(10_000);
    await until(() => hook.received.length === 2 && f.generation(id)?.delivery?.state === "waiting", "two refused deliveries, a retry waiting", 3_000);
    sandbox.clock.advance(10_000);
    await until(() => f.generation(id)?.delivery?.state === "acknowledged", "the delivery to be acknowledged", 3_000);
    expect(f.deliveries().map((attempt) => [attempt.attempt, attempt.statusCode, attempt.outcome])).toEqual([
      [1, 500, "rejected"],
      [2, 404, "rejected"],
      [3, 200, "acknowledged"],
    ]);
    // Each attempt is re-signed and still verifies.
    const [key] = await jwks(sandbox.url);
    for (const received of hook.received) expect(verifies(key!, received.headers, received.body)).toBe(true);
  });

  it("F: a delivery that times out is retried, and retries are limited", async () => {
    const hook = await receiver(["hang", 503]);
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0, retryDelaysMs: [1_000], deliveryTimeoutMs: 150 });
    const id = await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await until(() => f.generation(id)?.delivery?.state === "waiting" && f.deliveries().length === 1, "one failed attempt, a retry waiting", 3_000);
    expect(f.deliveries()[0]!.outcome).toBe("timeout");
    sandbox.clock.advance(1_000);
    await until(() => f.generation(id)?.delivery?.state === "exhausted", "the delivery attempts to be exhausted", 3_000);
    expect(f.deliveries().map((attempt) => attempt.outcome)).toEqual(["timeout", "rejected"]);
  });

  it("F: a dropped delivery is silent and the generation can still be read", async () => {
    const hook = await receiver();
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0 });
    f.injectDeliveryFault({ kind: "drop" });
    const dropped = await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    const delivered = await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await until(() => hook.received.length === 1, "the first delivery at the receiver", 3_000);
    expect(hook.received[0]!.headers["x-img-webhook-generation-id"]).toBe(delivered);
    expect(f.generation(dropped)?.delivery?.state).toBe("dropped");
    const read = await fetch(`${sandbox.url}/f/v1/generations/${dropped}`, { headers: { "Api-Key": API_KEY } });
    expect(((await read.json()) as { generation_id: string }).generation_id).toBe(dropped);
  });

  it("F: a duplicated delivery repeats the same generation id", async () => {
    const hook = await receiver();
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0 });
    f.injectDeliveryFault({ kind: "duplicate" });
    const id = await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await until(() => hook.received.length === 2, "the second delivery at the receiver", 3_000);
    expect(hook.received.map((received) => received.headers["x-img-webhook-generation-id"])).toEqual([id, id]);
    expect(hook.received[0]!.body.equals(hook.received[1]!.body)).toBe(true);
    expect(f.deliveries().map((attempt) => attempt.duplicate)).toEqual([false, true]);
  });

  it("F: a delayed delivery arrives only after the delay", async () => {
    const hook = await receiver();
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0 });
    f.injectDeliveryFault({ kind: "delay", ms: 60_000 });
    const id = await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hook.received).toHaveLength(0);
    sandbox.clock.advance(60_000);
    await until(() => hook.received.length === 1, "the first delivery at the receiver", 3_000);
    // The receiver has the body before the sandbox has read its answer: acknowledged follows.
    await until(() => f.generation(id)?.delivery?.state === "acknowledged", "the delivery to be acknowledged", 3_000);
    expect(hook.received).toHaveLength(1);
  });

  it("F: re-serialised bodies and foreign keys fail verification; an old timestamp is signed but old", async () => {
    const hook = await receiver();
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0 });
    f.injectDeliveryFault({ kind: "reserialize" });
    f.injectDeliveryFault({ kind: "wrong_key" });
    f.injectDeliveryFault({ kind: "old_timestamp", ageSeconds: 7_200 });
    for (let i = 0; i < 3; i++) await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await until(() => hook.received.length === 3, "the third delivery at the receiver", 3_000);
    const [key] = await jwks(sandbox.url);
    const byId = (id: string) => hook.received.find((received) => received.headers["x-img-webhook-generation-id"] === id)!;
    const [reserialised, foreign, old] = f.generations().map((generation) => byId(generation.id));
    expect(verifies(key!, reserialised!.headers, reserialised!.body)).toBe(false);
    expect(JSON.parse(reserialised!.body.toString("utf8"))).toEqual(JSON.parse(f.deliveries().find((a) => a.body.equals(reserialised!.body))!.signedBody.toString("utf8")));
    expect(verifies(key!, foreign!.headers, foreign!.body)).toBe(false);
    expect(verifies(key!, old!.headers, old!.body)).toBe(true);
    const age = Date.now() / 1000 - Number(old!.headers["x-img-webhook-timestamp"]);
    expect(age).toBeGreaterThanOrEqual(7_200);
  });

  it("F: after a key rotation deliveries use the new key and the old one stays listed for a while", async () => {
    const hook = await receiver();
    const { sandbox, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0, rotatedKeyListedMs: 3_600_000 });
    const [oldKey] = await jwks(sandbox.url);
    const newKey = f.rotateKey();
    const listed = await jwks(sandbox.url);
    expect(listed.map((key) => key.kid).sort()).toEqual([oldKey!.kid, newKey.kid].sort());
    await generationId(await generate(sandbox.url, SMALL, { webhookUrl: hook.url }));
    await until(() => hook.received.length === 1, "the first delivery at the receiver", 3_000);
    const { headers, body } = hook.received[0]!;
    expect(headers["x-img-webhook-key-id"]).toBe(newKey.kid);
    expect(verifies(newKey.jwk, headers, body)).toBe(true);
    expect(verifies(oldKey!, headers, body)).toBe(false);
    sandbox.clock.advance(3_600_000);
    expect((await jwks(sandbox.url)).map((key) => key.kid)).toEqual([newKey.kid]);
    const dropped = f.rotateKey({ keepOldListed: false });
    expect((await jwks(sandbox.url)).map((key) => key.kid)).toEqual([dropped.kid]);
  });

  it("F: closing the sandbox stops pending deliveries", async () => {
    const hook = await receiver([500]);
    const { sandbox: running, f } = await start({ allowLoopbackWebhooks: true, renderMs: 0, retryDelaysMs: [1_000] });
    await generationId(await generate(running.url, SMALL, { webhookUrl: hook.url }));
    await until(() => f.deliveries().length === 1 && f.deliveries()[0]!.statusCode === 500, "one attempt answered 500", 3_000);
    running.clock.advance(1_000);
    await running.stop();
    sandbox = undefined;
    const attempts = f.deliveries().length;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(f.deliveries().length).toBe(attempts);
  });
});

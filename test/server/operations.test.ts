import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import type { Engine } from "../../src/engine/engine.js";
import { createLogger } from "../../src/engine/logger.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { SANDBOX_B_WEBHOOK_SECRET } from "../../src/sandbox/b/index.js";
import { buildServer } from "../../src/server/app.js";
import { metrics } from "../../src/server/metrics.js";
import { createToken } from "../../src/app/tokens.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";
import { cliPostgresStore } from "../helpers/pg-cli-store.js";
import { until } from "../helpers/until.js";
import { startWorld, type World } from "../helpers/world.js";

interface Served {
  world: World;
  runtime: Runtime;
  engine: Engine;
  app: FastifyInstance;
  emulators: ReturnType<typeof createAllEmulators>;
  /** Every line the server's logger wrote. */
  logLines: string[];
  call(method: string, path: string, options?: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> }): Promise<{ status: number; body: any; text: string; headers: Headers }>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `mediagate serve`'s server over real HTTP on loopback with the sandbox behind it; its engine running unless `engine: false` (`--no-engine`). */
async function serve(options: { engine?: boolean; env?: Record<string, string>; readyTimeoutMs?: number } = {}): Promise<Served> {
  const emulators = createAllEmulators({ d: { renderTimeMs: { minMs: 100, maxMs: 200 } } });
  const world = await startWorld(emulators.list, options.env ? { env: options.env } : {});
  cleanups.push(() => world.close());
  const runtime = createRuntime({ overrides: world.env });
  cleanups.push(() => runtime.close().catch(() => undefined));
  const store = await runtime.store();
  const engine = await runtime.engine();
  const logLines: string[] = [];
  const log = createLogger({ level: "info", secrets: runtime.secrets, destination: new Writable({ write: (chunk, _encoding, done) => (logLines.push(String(chunk)), done()) }) });
  const runsEngine = options.engine !== false;
  const app = await buildServer(
    { store, engine, providers: runtime.providers, log, now: () => Date.now() },
    { runtime, log },
    { engine: runsEngine ? engine : null, ...(options.readyTimeoutMs !== undefined ? { readyTimeoutMs: options.readyTimeoutMs } : {}) },
  );
  cleanups.push(() => app.close());
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  if (runsEngine) engine.start();
  const call: Served["call"] = async (method, path, { token, body, raw, headers } = {}) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : raw !== undefined ? { body: raw } : {}),
    });
    const text = await response.text();
    const parsed: unknown = (response.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text;
    return { status: response.status, body: parsed, text, headers: response.headers };
  };
  return { world, runtime, engine, app, emulators, logLines, call };
}

/** One sample of a Prometheus text exposition: the metric with exactly these labels, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1]!, pair[2]!]));
    const same = Object.keys(found).length === Object.keys(labels).length && Object.entries(labels).every(([key, value]) => found[key] === value);
    if (same) return Number(match[3]);
  }
  return undefined;
}

async function jobDone(served: Served, id: string): Promise<any> {
  let job: any;
  await until(async () => {
    job = (await served.call("GET", `/v1/jobs/${id}`)).body;
    return ["succeeded", "failed"].includes(job.state);
  }, `job ${id} to end`, 20_000);
  return job;
}

const lighthouse = { provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 512, height: 512 } };

describe("mediagate serve: operations (/metrics, /readyz, request logs)", () => {
  it("/metrics after a D job succeeds: the job counted as succeeded, one submit, its polls and one capture timed, the ledger's charge, the slot given back", async () => {
    const served = await serve();
    const created = await served.call("POST", "/v1/jobs", { body: { ref: "metrics-1", ...lighthouse } });
    expect(created.status).toBe(201);
    const job = await jobDone(served, created.body.id);
    expect(job.state).toBe("succeeded");

    const scrape = await served.call("GET", "/metrics");
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = scrape.text;
    expect(sample(text, "mediagate_jobs", { provider: "d", state: "succeeded" })).toBe(1);
    expect(sample(text, "mediagate_jobs", { provider: "d", state: "queued" })).toBe(0);
    expect(sample(text, "mediagate_jobs", { provider: "e", state: "succeeded" })).toBe(0);
    const steps = (step: string, outcome = "ok") => sample(text, "mediagate_provider_step_duration_seconds_count", { provider: "d", step, outcome });
    expect(steps("submit")).toBe(1);
    expect(steps("capture")).toBe(1);
    // Every poll the engine counted, each timed once.
    const polls = served.engine.stats().d!.polls;
    expect(polls).toBeGreaterThan(0);
    expect(steps("poll")).toBe(polls);
    expect(steps("submit", "error")).toBeUndefined();
    expect(sample(text, "mediagate_provider_requests_total", { provider: "d" })).toBe(served.engine.stats().d!.requests);
    expect(sample(text, "mediagate_provider_http_429_total", { provider: "d" })).toBe(0);
    expect(sample(text, "mediagate_ledger_micro_usd", { provider: "d" })).toBe(job.cost.charge_micro_usd);
    expect(job.cost.charge_micro_usd).toBeGreaterThan(0);
    expect(sample(text, "mediagate_ledger_micro_usd", { provider: "b" })).toBe(0);
    expect(sample(text, "mediagate_slots_in_use", { provider: "d", pool: "d:account" })).toBe(0);
    expect(sample(text, "mediagate_slots_capacity", { provider: "d", pool: "d:account" })).toBe(24);
    expect(sample(text, "mediagate_provider_halted", { provider: "d" })).toBe(0);
  });

  it("/metrics counts D's 429 on a submit as a 429 and a back-pressure, the refused submit timed as an error beside the accepted one", async () => {
    const served = await serve();
    // spec D: 429 is "too many active tasks"; Retry-After 0 so the job is sent again at once.
    served.world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "status", status: 429, headers: { "retry-after": "0" } }, times: 1 });
    const created = await served.call("POST", "/v1/jobs", { body: { ref: "pushed-back", ...lighthouse } });
    expect((await jobDone(served, created.body.id)).state).toBe("succeeded");
    const text = (await served.call("GET", "/metrics")).text;
    expect(sample(text, "mediagate_provider_http_429_total", { provider: "d" })).toBe(1);
    expect(sample(text, "mediagate_provider_backpressure_total", { provider: "d" })).toBe(1);
    expect(sample(text, "mediagate_provider_step_duration_seconds_count", { provider: "d", step: "submit", outcome: "error" })).toBe(1);
    expect(sample(text, "mediagate_provider_step_duration_seconds_count", { provider: "d", step: "submit", outcome: "ok" })).toBe(1);
  });

  it("/metrics counts webhook requests by outcome (unmatched, duplicate, rejected, a stray route's under provider unknown) and notifications by the result the notifier counts", async () => {
    const served = await serve({ engine: false });
    const body = "{}";
    const id = "msg_metrics_1";
    const at = new Date();
    const signed = { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(SANDBOX_B_WEBHOOK_SECRET).sign(id, at, body), "content-type": "application/json" };
    expect((await served.call("POST", "/webhooks/b", { raw: body, headers: signed })).status).toBe(202);
    expect((await served.call("POST", "/webhooks/b", { raw: body, headers: signed })).status).toBe(200);
    expect((await served.call("POST", "/webhooks/b", { raw: body, headers: { ...signed, "webhook-signature": "v1,bm90IGl0" } })).status).toBe(401);
    expect((await served.call("POST", "/webhooks/nowhere", { raw: body })).status).toBe(404);
    const before = sample((await served.call("GET", "/metrics")).text, "mediagate_notifications_total", { result: "delivered" }) ?? 0;
    metrics.notificationsOut.inc({ result: "delivered" });
    metrics.notificationsOut.inc({ result: "delivered" });
    const text = (await served.call("GET", "/metrics")).text;
    expect(sample(text, "mediagate_webhook_deliveries_total", { provider: "b", outcome: "unmatched" })).toBe(1);
    expect(sample(text, "mediagate_webhook_deliveries_total", { provider: "b", outcome: "duplicate" })).toBe(1);
    expect(sample(text, "mediagate_webhook_deliveries_total", { provider: "b", outcome: "rejected" })).toBe(1);
    expect(sample(text, "mediagate_webhook_deliveries_total", { provider: "unknown", outcome: "rejected" })).toBe(1);
    expect(sample(text, "mediagate_notifications_total", { result: "delivered" })).toBe(before + 2);
    // An API-only server times no engine steps: the histogram has no series.
    expect(text).not.toMatch(/mediagate_provider_step_duration_seconds_count\{/);
  });

  it("/metrics answers anyone while no token exists (serve is then on loopback only); once one exists it needs an admin token: 401 without or with an unknown one, 403 for a token that is not admin", async () => {
    const served = await serve({ engine: false });
    expect((await served.call("GET", "/metrics")).status).toBe(200);
    const store = await served.runtime.store();
    const reader = await createToken(store, { name: "reader", now: Date.now() });
    const ops = await createToken(store, { name: "ops", admin: true, now: Date.now() });
    const anonymous = await served.call("GET", "/metrics");
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe("unauthorized");
    expect((await served.call("GET", "/metrics", { token: "mg_unknown" })).status).toBe(401);
    const notAdmin = await served.call("GET", "/metrics", { token: reader.secret });
    expect(notAdmin.status).toBe(403);
    expect(notAdmin.body.error).toMatchObject({ code: "admin_token_required" });
    const admin = await served.call("GET", "/metrics", { token: ops.secret });
    expect(admin.status).toBe(200);
    expect(sample(admin.text, "mediagate_jobs", { provider: "d", state: "queued" })).toBe(0);
  });

  it("/readyz: 200 while the store answers and the engine runs; 503 with the reasons once the engine is stopped, and once the store is closed; /healthz still answers", async () => {
    const served = await serve();
    const ready = await served.call("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ ready: true, store: "ok", engine: "running", reasons: [] });
    await served.engine.stop();
    const stopped = await served.call("GET", "/readyz");
    expect(stopped.status).toBe(503);
    expect(stopped.body).toEqual({ ready: false, store: "ok", engine: "stopped", reasons: ["the engine is not running"], error: { code: "not_ready", message: "the engine is not running" } });
    await (await served.runtime.store()).close();
    const closed = await served.call("GET", "/readyz");
    expect(closed.status).toBe(503);
    expect(closed.body).toMatchObject({ ready: false, store: "error", engine: "stopped" });
    expect(closed.body.reasons).toContain("the store failed a trivial query (the server's log says why)");
    expect(served.logLines.some((line) => /readiness: the store failed a trivial query/.test(line))).toBe(true);
    expect((await served.call("GET", "/healthz")).status).toBe(200);
  });

  it("/readyz of an API-only server (--no-engine) needs only the store: 200 with engine none, whatever its unstarted engine object", async () => {
    const served = await serve({ engine: false });
    const ready = await served.call("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ ready: true, store: "ok", engine: "none", reasons: [] });
  });

  it.runIf(process.env.DATABASE_URL)("/readyz: 503 while the PostgreSQL store is unreachable, 200 again once it is back", async () => {
    const target = new URL(process.env.DATABASE_URL!);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    cleanups.push(() => proxy.close());
    const database = await cliPostgresStore(process.env.DATABASE_URL!, { viaPort: proxy.port });
    cleanups.push(() => database.cleanup());
    const served = await serve({ engine: false, env: { MEDIAGATE_STORE: database.address }, readyTimeoutMs: 1_000 });
    expect((await served.call("GET", "/readyz")).status).toBe(200);
    await proxy.cut();
    const away = await served.call("GET", "/readyz");
    expect(away.status).toBe(503);
    expect(away.body.ready).toBe(false);
    expect(["error", "timeout"]).toContain(away.body.store);
    // The answer names no address or credential: the probe is unauthenticated.
    expect(away.text).not.toContain(String(proxy.port));
    await proxy.restore();
    await until(async () => (await served.call("GET", "/readyz")).status === 200, "readyz to be 200 once the store is back");
  });

  it("request log: one line per /v1 request with method, path without its query, status, duration and the token's name; never the secret or the Authorization header", async () => {
    const served = await serve({ engine: false });
    const store = await served.runtime.store();
    const alice = await createToken(store, { name: "alice", now: Date.now() });
    expect((await served.call("GET", "/v1/jobs?limit=2&cursor=abc", { token: alice.secret })).status).toBe(422);
    expect((await served.call("POST", "/v1/jobs", { token: alice.secret, body: { ref: "logged", ...lighthouse } })).status).toBe(201);
    expect((await served.call("GET", "/v1/jobs", { token: `${alice.secret}x` })).status).toBe(401);
    expect((await served.call("GET", "/healthz")).status).toBe(200);
    const lines = served.logLines.map((line) => JSON.parse(line)).filter((line) => line.msg === "api request");
    expect(lines.map(({ method, path, status, caller }) => ({ method, path, status, caller }))).toEqual([
      { method: "GET", path: "/v1/jobs", status: 422, caller: "alice" },
      { method: "POST", path: "/v1/jobs", status: 201, caller: "alice" },
      { method: "GET", path: "/v1/jobs", status: 401, caller: null },
    ]);
    for (const line of lines) expect(typeof line.durationMs).toBe("number");
    const written = served.logLines.join("");
    expect(written).not.toContain(alice.secret.slice("mg_".length));
    expect(written.toLowerCase()).not.toContain("authorization");
    expect(written).not.toContain("cursor");
  });
});

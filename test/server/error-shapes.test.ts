import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import { REFUSAL_BURST } from "../../src/server/refusal-limiter.js";
import { serveSandbox, type Served } from "../helpers/dashboard.js";
import { untilJob } from "../helpers/until.js";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * One request over node:http, sent as written: the path is not normalised
 * (`/v1/../x` arrives as such), any method and header goes out as given.
 */
function send(url: string, method: string, path: string, options: { headers?: Record<string, string>; body?: string | Buffer; localAddress?: string } = {}): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      // A connection of its own (no agent): a kept-alive socket the server closed after its last answer would hang up this one.
      { host: hostname, port: Number(port), method, path, agent: false, headers: { connection: "close", ...options.headers }, ...(options.localAddress ? { localAddress: options.localAddress } : {}) },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, text: Buffer.concat(chunks).toString("utf8") }));
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(options.body);
  });
}

const lighthouse = { provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 512, height: 512 } };
const json = (value: unknown) => ({ headers: { "content-type": "application/json" }, body: JSON.stringify(value) });

interface World {
  served: Served;
  admin: string;
  reader: string;
  tight: string;
  doneJobId: string;
}

interface Row {
  status: number;
  code: string;
  what: string;
  send(world: World): Promise<Answer>;
  /** Anything else the answer must carry (a header). */
  also?(answer: Answer): void;
}

const bearer = (token: string, more: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...more });

/** Every error status the server sends, each provoked over real HTTP; all must answer `{"error": {"code", "message"}}` as JSON. */
const ROWS: Row[] = [
  { status: 400, code: "invalid_json", what: "a body that is not JSON", send: ({ served, admin }) => send(served.url, "POST", "/v1/jobs", { headers: bearer(admin, { "content-type": "application/json" }), body: "{" }) },
  { status: 400, code: "invalid_path", what: "a raw .. path under /v1", send: ({ served }) => send(served.url, "GET", "/v1/../../etc/passwd") },
  { status: 400, code: "invalid_path", what: "a raw .. path outside /v1", send: ({ served }) => send(served.url, "GET", "/../etc/passwd") },
  { status: 400, code: "invalid_path", what: "a percent-encoding that is not UTF-8", send: ({ served }) => send(served.url, "GET", "/v1/jobs/%E0%A4%A") },
  { status: 400, code: "bad_request", what: "a method Node's parser does not know", send: ({ served }) => send(served.url, "BREW", "/v1/jobs") },
  { status: 401, code: "unauthorized", what: "the API without a token once tokens exist", send: ({ served }) => send(served.url, "GET", "/v1/jobs") },
  { status: 401, code: "unauthorized", what: "/metrics without a token", send: ({ served }) => send(served.url, "GET", "/metrics") },
  { status: 401, code: "missing_headers", what: "a webhook delivery without its signature headers", send: ({ served }) => send(served.url, "POST", "/webhooks/b/job_x", json({})) },
  { status: 401, code: "unauthorized", what: "a dashboard stream without a session", send: ({ served }) => send(served.url, "GET", "/events") },
  { status: 402, code: "over_budget", what: "a job dearer than the token's budget", send: ({ served, tight }) => send(served.url, "POST", "/v1/jobs", { ...json({ ref: "dear", ...lighthouse }), headers: bearer(tight, { "content-type": "application/json" }) }) },
  { status: 403, code: "read_only_token", what: "a read-only token submitting", send: ({ served, reader }) => send(served.url, "POST", "/v1/jobs", { ...json({ ref: "ro", ...lighthouse }), headers: bearer(reader, { "content-type": "application/json" }) }) },
  { status: 403, code: "admin_token_required", what: "/metrics with a token that is not admin", send: ({ served, reader }) => send(served.url, "GET", "/metrics", { headers: bearer(reader) }) },
  { status: 404, code: "not_found", what: "a job that does not exist", send: ({ served, admin }) => send(served.url, "GET", "/v1/jobs/job_nope", { headers: bearer(admin) }) },
  { status: 404, code: "not_found", what: "no API route", send: ({ served, admin }) => send(served.url, "GET", "/v1/nothing-here", { headers: bearer(admin) }) },
  { status: 404, code: "unknown_route", what: "no route at all", send: ({ served }) => send(served.url, "GET", "/admin") },
  { status: 404, code: "no_webhook_route", what: "a webhook for no provider", send: ({ served }) => send(served.url, "POST", "/webhooks/zz", json({})) },
  {
    status: 405,
    code: "method_not_allowed",
    what: "DELETE on the API's job list",
    send: ({ served, admin }) => send(served.url, "DELETE", "/v1/jobs", { headers: bearer(admin) }),
    also: (answer) => expect(answer.headers.allow).toBe("GET, HEAD, POST"),
  },
  { status: 405, code: "method_not_allowed", what: "PUT on /healthz", send: ({ served }) => send(served.url, "PUT", "/healthz"), also: (answer) => expect(answer.headers.allow).toBe("GET, HEAD") },
  { status: 405, code: "method_not_allowed", what: "GET on a webhook route", send: ({ served }) => send(served.url, "GET", "/webhooks/b"), also: (answer) => expect(answer.headers.allow).toBe("POST") },
  {
    status: 409,
    code: "ref_conflict",
    what: "another request under a stored ref",
    send: ({ served, admin }) => send(served.url, "POST", "/v1/jobs", { ...json({ ref: "done", ...lighthouse, input: { ...lighthouse.input, prompt: "a harbour" } }), headers: bearer(admin, { "content-type": "application/json" }) }),
  },
  { status: 409, code: "not_cancellable", what: "cancelling a job that succeeded", send: ({ served, admin, doneJobId }) => send(served.url, "POST", `/v1/jobs/${doneJobId}/cancel`, { headers: bearer(admin) }) },
  {
    status: 413,
    code: "payload_too_large",
    what: "a job body over 1 MiB",
    send: ({ served, admin }) => send(served.url, "POST", "/v1/jobs", { ...json({ ...lighthouse, input: { prompt: "x".repeat(2 * 1024 * 1024) } }), headers: bearer(admin, { "content-type": "application/json" }) }),
  },
  { status: 413, code: "too_large", what: "a webhook delivery over 1 MiB", send: ({ served }) => send(served.url, "POST", "/webhooks/b/job_x", { headers: { "content-type": "application/json" }, body: "x".repeat(2 * 1024 * 1024) }) },
  { status: 414, code: "path_too_long", what: "an id longer than any id", send: ({ served, admin }) => send(served.url, "GET", `/v1/jobs/${"x".repeat(150)}`, { headers: bearer(admin) }) },
  { status: 415, code: "unsupported_media_type", what: "a content type that cannot be read", send: ({ served, admin }) => send(served.url, "POST", "/v1/jobs", { headers: bearer(admin, { "content-type": ";;;" }), body: "{}" }) },
  { status: 416, code: "range_not_satisfiable", what: "a byte range past an output's end", send: ({ served, admin, doneJobId }) => send(served.url, "GET", `/v1/jobs/${doneJobId}/outputs/0`, { headers: bearer(admin, { range: "bytes=99999999-" }) }) },
  { status: 422, code: "invalid_input", what: "a request for no provider", send: ({ served, admin }) => send(served.url, "POST", "/v1/jobs", { ...json({ provider: "zz", model: "m", input: {} }), headers: bearer(admin, { "content-type": "application/json" }) }) },
  {
    status: 431,
    code: "headers_too_large",
    what: "headers over Node's limit",
    send: ({ served }) => send(served.url, "GET", "/v1/jobs", { headers: { "x-padding": "a".repeat(20_000) } }),
  },
  {
    status: 503,
    code: "not_configured",
    what: "a job for a provider without its key",
    send: ({ served, admin }) => send(served.url, "POST", "/v1/jobs", { ...json({ provider: "c", model: "v6", input: { prompt: "a kite" } }), headers: bearer(admin, { "content-type": "application/json" }) }),
  },
];

describe("mediagate serve: one error shape for every answer (real HTTP, SQLite)", () => {
  let world: World;
  beforeAll(async () => {
    // C without its key: a C job is 503 not_configured.
    const served = await serveSandbox({ env: { MEDIAGATE_C_API_KEY: "" }, emulators: { d: { renderTimeMs: { minMs: 50, maxMs: 100 } } } });
    const store = await served.runtime.store();
    const now = Date.now();
    const admin = (await createToken(store, { name: "ops", admin: true, now })).secret;
    const reader = (await createToken(store, { name: "reader", readOnly: true, now })).secret;
    const tight = (await createToken(store, { name: "tight", budgetMicroUsd: 10_000, now })).secret;
    const created = await send(served.url, "POST", "/v1/jobs", { ...json({ ref: "done", ...lighthouse }), headers: bearer(admin, { "content-type": "application/json" }) });
    expect(created.status, created.text).toBe(201);
    const doneJobId = (JSON.parse(created.text) as { id: string }).id;
    await untilJob(await served.runtime.engine(), store, doneJobId, (job) => job.state === "succeeded");
    world = { served, admin, reader, tight, doneJobId };
  });
  afterAll(async () => world?.served.close());

  for (const row of ROWS) {
    it(`${row.status} ${row.code}: ${row.what} is answered {"error": {"code", "message"}} as JSON`, async () => {
      const answer = await row.send(world);
      expect(answer.status, answer.text).toBe(row.status);
      expect(answer.headers["content-type"]).toMatch(/^application\/json/);
      const body = JSON.parse(answer.text) as { error: { code: string; message: string } };
      expect(body.error.code).toBe(row.code);
      expect(typeof body.error.message).toBe("string");
      expect(body.error.message.length).toBeGreaterThan(0);
      row.also?.(answer);
    });
  }

  it('429 throttled: one address past its bound of refused requests is answered {"error": {"code", "message"}} with Retry-After', async () => {
    // Its own source address: the other rows' refusals count against 127.0.0.1.
    let answer: Answer | undefined;
    for (let index = 0; index <= REFUSAL_BURST; index++) answer = await send(world.served.url, "GET", `/stray-${index}`, { localAddress: "127.0.0.77" });
    expect(answer!.status).toBe(429);
    expect(answer!.headers["content-type"]).toMatch(/^application\/json/);
    expect(Number(answer!.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(answer!.text)).toMatchObject({ error: { code: "throttled", message: expect.stringContaining("unknown_route") }, outcome: "throttled" });
  });

  it('500 internal_error and 503 not_ready: with its store failing, the API answers {"error": {"code", "message"}} (the cause in the log only), and /readyz carries one beside its reasons', async () => {
    const served = await serveSandbox({ engine: false });
    try {
      await (await served.runtime.engine()).stop();
      await (await served.runtime.store()).close();
      const failed = await send(served.url, "GET", "/v1/jobs");
      expect(failed.status).toBe(500);
      expect(JSON.parse(failed.text)).toEqual({ error: { code: "internal_error", message: "the request could not be handled; it was logged" } });
      const ready = await send(served.url, "GET", "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.headers["content-type"]).toMatch(/^application\/json/);
      expect(JSON.parse(ready.text)).toMatchObject({ ready: false, store: "error", error: { code: "not_ready", message: expect.stringContaining("the store failed") } });
    } finally {
      await served.close();
    }
  });
});

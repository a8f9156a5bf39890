import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import { createToken } from "../../src/app/tokens.js";
import { createLogger } from "../../src/engine/logger.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { buildServer } from "../../src/server/app.js";
import { finishedDJob, tempDir } from "../helpers/stores.js";

/**
 * Each route of the REST API over real HTTP on loopback, read field by
 * field: the answers' names and values, the refusals' exact words, the
 * hook that decides who calls. The server runs no engine (nothing is sent),
 * so every answer is what intake and the store say; the routes that need a
 * job to run (outputs, ranges) are in api.test.ts.
 */

const folder = tempDir();
let sandbox: Sandbox;
let runtime: Runtime;
let app: FastifyInstance;
let url: string;
const logLines: string[] = [];

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function call(method: string, path: string, options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers };
  if (options.body !== undefined || options.raw !== undefined) headers["content-type"] ??= "application/json";
  const response = await fetch(`${url}${path}`, { method, headers, ...(options.raw !== undefined ? { body: options.raw } : options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (response.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text };
}

/** A GET sent with its own Host header (fetch sends the URL's). */
function getWithHost(path: string, host: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(`${url}${path}`, { headers: { host } }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, headers: new Headers(), body: JSON.parse(text) }));
    });
    sent.on("error", reject);
    sent.end();
  });
}

/** A D image of 512×512 on gen-2-pro: $0.03. */
const image = (ref?: string) => ({ ...(ref !== undefined ? { ref } : {}), provider: "d", model: "gen-2-pro", input: { prompt: `an image ${ref ?? ""}`, width: 512, height: 512 } });

beforeAll(async () => {
  sandbox = await startSandbox({ providers: ["d", "e"] });
  runtime = createRuntime({ overrides: { ...sandbox.environment, MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`, MEDIAGATE_OUTPUT_DIR: join(folder.path, "out") } });
  const store = await runtime.store();
  const log = createLogger({ level: "info", secrets: runtime.secrets, destination: new Writable({ write: (chunk, _encoding, done) => (logLines.push(String(chunk)), done()) }) });
  app = await buildServer({ store, engine: await runtime.engine(), providers: runtime.providers, log, now: () => Date.now() }, { runtime, log });
  url = await app.listen({ port: 0, host: "127.0.0.1" });
});

afterAll(async () => {
  await app.close();
  // The last test closed the store under the server: the engine's stop cannot release its (no) leases there.
  await runtime.close().catch(() => undefined);
  await sandbox.stop();
  folder.remove();
});

describe("without tokens in the store: the local user, from loopback only", () => {
  it("a request addressed to a loopback name is the local user's; one addressed to another name is 401 saying why", async () => {
    expect((await call("GET", "/v1/jobs")).status).toBe(200);
    expect((await getWithHost("/v1/jobs", "localhost:9")).status).toBe(200);
    const elsewhere = await getWithHost("/v1/jobs", "mediagate.example:8080");
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body.error).toEqual({ code: "unauthorized", message: "without API tokens the API answers only requests addressed to a loopback name (localhost, 127.0.0.1, [::1])" });
  });

  it("the local user's job: 201 with the API's fields, no server path; the same ref and request 200; GET answers it", async () => {
    const created = await call("POST", "/v1/jobs", { body: image("local-1") });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ref: "local-1", state: "queued", provider: "d", model: "gen-2-pro", batch_id: null, notify_url: null, finished_at: null, outputs: [] });
    expect(created.body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(JSON.stringify(created.body)).not.toContain(folder.path);
    expect((await call("POST", "/v1/jobs", { body: image("local-1") })).status).toBe(200);
    const read = await call("GET", `/v1/jobs/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: created.body.id, ref: "local-1" });
    // What was asked (issue 37, part 4): the fields sent, with no files and no route here.
    expect(read.body.request).toEqual({ provider: "d", model: "gen-2-pro", operation: null, input: { prompt: "an image local-1", width: 512, height: 512 }, files: [], route: null });
    // A listing's jobs do not carry it.
    expect((await call("GET", "/v1/jobs")).body.jobs[0]).not.toHaveProperty("request");
    const events = await call("GET", `/v1/jobs/${created.body.id}/events`);
    expect(events.body.events[0]).toMatchObject({ from: null, to: "queued" });
    expect(events.body.events[0].at).toMatch(/Z$/);
  });
});

describe("bodies and routes refused, in the one error shape", () => {
  it("a body that is not JSON is 400 invalid_json; an empty body 422 naming the body; a body over 1 MB 413", async () => {
    const broken = await call("POST", "/v1/jobs", { raw: "{nope" });
    expect(broken.status).toBe(400);
    expect(broken.body.error).toEqual({ code: "invalid_json", message: "the body is not valid JSON" });
    const empty = await call("POST", "/v1/jobs", { raw: "" });
    expect(empty.status).toBe(422);
    expect(empty.body.error).toMatchObject({ code: "invalid_input", field: "body" });
    const huge = await call("POST", "/v1/jobs", { raw: JSON.stringify({ ...image("big"), pad: "x".repeat(2 * 1024 * 1024) }) });
    expect(huge.status).toBe(413);
    expect(huge.body.error).toEqual({ code: "payload_too_large", message: "the body is larger than the API takes" });
  });

  it("cancel_after_s or Cancel-After set the job's deadline; both at once, or a value it does not take, are 422 naming the field", async () => {
    const before = Date.now();
    const byBody = await call("POST", "/v1/jobs", { body: { ...image("deadline-body"), cancel_after_s: 90 } });
    expect(byBody.status, JSON.stringify(byBody.body)).toBe(201);
    expect(Date.parse(byBody.body.deadline_at) - before).toBeGreaterThanOrEqual(90_000);
    expect(Date.parse(byBody.body.deadline_at) - Date.now()).toBeLessThanOrEqual(90_000);
    const byHeader = await call("POST", "/v1/jobs", { body: image("deadline-header"), headers: { "cancel-after": "5m" } });
    expect(byHeader.status).toBe(201);
    expect(Date.parse(byHeader.body.deadline_at) - before).toBeGreaterThanOrEqual(300_000);
    expect((await call("POST", "/v1/jobs", { body: image("no-deadline") })).body.deadline_at).toBeNull();
    const both = await call("POST", "/v1/jobs", { body: { ...image("deadline-both"), cancel_after_s: 60 }, headers: { "cancel-after": "1h" } });
    expect(both.status).toBe(422);
    expect(both.body.error.field).toBe("Cancel-After");
    for (const [header, value] of [["cancel-after", "soon"], ["cancel-after", "0s"], ["cancel-after", "31d"]] as const) {
      const refused = await call("POST", "/v1/jobs", { body: image("deadline-bad"), headers: { [header]: value } });
      expect(refused.status).toBe(422);
      expect(refused.body.error.field).toBe("Cancel-After");
    }
    for (const value of [0, 1.5, "60", 2_592_001]) {
      const refused = await call("POST", "/v1/jobs", { body: { ...image("deadline-bad"), cancel_after_s: value } });
      expect(refused.status).toBe(422);
      expect(refused.body.error.field).toBe("cancel_after_s");
    }
    // A batch: the header for the lines without their own; a line with its own beside the header is refused naming the header.
    const batch = await call("POST", "/v1/batches", { body: [image("dl-1"), { ...image("dl-2") }], headers: { "cancel-after": "120" } });
    expect(batch.status, JSON.stringify(batch.body)).toBe(201);
    expect(batch.body.jobs.every((job: { deadline_at: string }) => Date.parse(job.deadline_at) - before >= 120_000)).toBe(true);
    const mixed = await call("POST", "/v1/batches", { body: [{ ...image("dl-3"), cancel_after_s: 30 }], headers: { "cancel-after": "120" } });
    expect(mixed.status).toBe(422);
    expect(mixed.body.error.targets[0].target).toBe("line 1");
    const perLine = await call("POST", "/v1/batches", { body: [{ ...image("dl-4"), cancel_after_s: 30 }, image("dl-5")] });
    expect(perLine.body.jobs.map((job: { deadline_at: string | null }) => job.deadline_at === null)).toEqual([false, true]);
  });

  it("an unknown route is 404 naming the method and the path (at most 80 characters, without the query)", async () => {
    const unknown = await call("GET", "/v1/nope?x=1");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toEqual({ code: "not_found", message: "no route GET /v1/nope" });
    const long = await call("GET", `/v1/${"a".repeat(90)}/b`);
    expect(long.body.error.message).toBe(`no route GET ${`/v1/${"a".repeat(90)}/b`.slice(0, 80)}`);
  });

  it("a quote answers the estimate, its source and warnings; a plan the waves per provider; nothing is stored", async () => {
    const quote = await call("POST", "/v1/quote", { body: image() });
    expect(quote.status).toBe(200);
    expect(quote.body).toMatchObject({ provider: "d", model: "gen-2-pro", estimate_micro_usd: 30_000, warnings: [] });
    expect(typeof quote.body.source).toBe("string");
    const plan = await call("POST", "/v1/plan", { raw: `${JSON.stringify(image("p-1"))}\n${JSON.stringify(image("p-2"))}\n`, headers: { "content-type": "application/x-ndjson" } });
    expect(plan.status).toBe(200);
    expect(plan.body.providers).toEqual(expect.arrayContaining([expect.objectContaining({ provider: "d" })]));
    expect((await call("GET", "/v1/jobs?ref=p-1")).body.jobs).toEqual([]);
  });
});

describe("when will it finish (issue 37, part 1): queue position and expected times on every job the API answers", () => {
  it("a queued job has its position among the caller's jobs waiting at D, and, once D's model has a pace, its expected start and finish; admission warns when that finish is past the deadline; an ended job has none", async () => {
    const store = await runtime.store();
    // A pace for gen-2-pro: three jobs that rendered 10 s and were saved 2 s later (nothing runs here: no engine).
    const at = Date.now() - 600_000;
    for (const ref of ["paced-1", "paced-2", "paced-3"]) await finishedDJob(store, ref, at, 10_000, 2_000, { outDir: folder.path });
    const before = Date.now();
    const first = await call("POST", "/v1/jobs", { body: image("eta-1") });
    const second = await call("POST", "/v1/jobs", { body: image("eta-2") });
    expect(first.body.queue_position).toBeGreaterThanOrEqual(1);
    expect(second.body.queue_position).toBe(first.body.queue_position + 1);
    // D's 24 slots are free (nothing runs): it starts at once, and is done after the 12 s its model takes.
    const start = Date.parse(second.body.expected_start_at);
    expect(start).toBeGreaterThanOrEqual(before);
    expect(Date.parse(second.body.expected_finish_at) - start).toBe(12_000);
    expect(second.body.warnings).toEqual([]);
    const read = await call("GET", `/v1/jobs/${second.body.id}`);
    expect(read.body).toMatchObject({ queue_position: second.body.queue_position, expected_finish_at: expect.stringMatching(/Z$/) });
    const listed = (await call("GET", "/v1/jobs?limit=200")).body.jobs;
    expect(listed.find((job: { ref: string }) => job.ref === "eta-2")).toMatchObject({ queue_position: second.body.queue_position });
    expect(listed.find((job: { ref: string }) => job.ref === "paced-1")).toMatchObject({ queue_position: null, expected_start_at: null, expected_finish_at: null });
    // 12 s of work cannot be done in 5.
    const late = await call("POST", "/v1/jobs", { body: { ...image("eta-late"), cancel_after_s: 5 } });
    expect(late.status).toBe(201);
    expect(late.body.warnings).toEqual([expect.stringMatching(/^expected to finish at \d{4}-\d\d-\d\dT[\d:.]+Z, after its deadline \d{4}-\d\d-\d\dT[\d:.]+Z \(cancel_after_s\): not sent by then it is cancelled, and sent it may run past it$/)]);
    const batch = await call("POST", "/v1/batches", { body: [{ ...image("eta-b1"), cancel_after_s: 3_600 }, { ...image("eta-b2"), cancel_after_s: 5 }] });
    expect(batch.body.jobs.map((job: { warnings: string[] }) => job.warnings.length)).toEqual([0, 1]);
    expect(batch.body.jobs[1].queue_position).toBe(batch.body.jobs[0].queue_position + 1);
    // The warning is the answer's, not stored with the job.
    expect((await call("GET", `/v1/jobs/${late.body.id}`)).body.warnings).toEqual([]);
  });
});

describe("with tokens: who calls, and what each may do", () => {
  let alice: string;
  let reader: string;
  let aliceJob: string;

  beforeAll(async () => {
    const store = await runtime.store();
    alice = (await createToken(store, { name: "alice", budgetMicroUsd: 150_000, now: Date.now() })).secret;
    reader = (await createToken(store, { name: "auditor", readOnly: true, now: Date.now() })).secret;
  });

  it("no Authorization is 401 asking for a token; another scheme 401 naming the form; an unknown token 401; the scheme's case does not matter", async () => {
    const none = await call("GET", "/v1/jobs");
    expect(none.status).toBe(401);
    expect(none.body.error).toEqual({ code: "unauthorized", message: "send an API token as Authorization: Bearer mg_… (`mediagate token create`)" });
    const basic = await call("GET", "/v1/jobs", { headers: { authorization: "Basic YWxpY2U6eA==" } });
    expect(basic.body.error).toEqual({ code: "unauthorized", message: "the Authorization header must be Bearer <token>" });
    const unknown = await call("GET", "/v1/jobs", { token: "mg_not_a_token" });
    expect(unknown.status).toBe(401);
    expect((await call("GET", "/v1/jobs", { headers: { authorization: `bearer ${alice}` } })).status).toBe(200);
  });

  it("a read-only token reads but cannot write: 403 naming the token and the route", async () => {
    expect((await call("GET", "/v1/jobs", { token: reader })).status).toBe(200);
    const refused = await call("POST", "/v1/jobs", { token: reader, body: image("ro") });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toEqual({ code: "read_only_token", message: "token auditor is read-only: it cannot POST /v1/jobs" });
  });

  it("jobs page newest first with a cursor; a repeated query parameter takes its last value", async () => {
    for (const ref of ["a-1", "a-2", "a-3"]) expect((await call("POST", "/v1/jobs", { token: alice, body: image(ref) })).status).toBe(201);
    const first = await call("GET", "/v1/jobs?limit=2", { token: alice });
    expect(first.body.jobs.map((job: { ref: string }) => job.ref)).toEqual(["a-3", "a-2"]);
    expect(typeof first.body.next_cursor).toBe("string");
    const second = await call("GET", `/v1/jobs?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`, { token: alice });
    expect(second.body).toMatchObject({ jobs: [{ ref: "a-1" }], next_cursor: null });
    expect((await call("GET", "/v1/jobs?provider=e&provider=d", { token: alice })).body.jobs).toHaveLength(3);
    aliceJob = first.body.jobs[0].id;
  });

  it("cancel: a queued job is cancelled (200, the job as it is now); again is 409 not_cancellable; another tenant's is 404", async () => {
    expect((await call("POST", `/v1/jobs/${aliceJob}/cancel`, { token: reader })).status).toBe(403);
    const cancelled = await call("POST", `/v1/jobs/${aliceJob}/cancel`, { token: alice });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: aliceJob, state: "cancelled", outputs: [] });
    const again = await call("POST", `/v1/jobs/${aliceJob}/cancel`, { token: alice });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("not_cancellable");
    const store = await runtime.store();
    const bob = (await createToken(store, { name: "bob", now: Date.now() })).secret;
    expect((await call("POST", `/v1/jobs/${aliceJob}/cancel`, { token: bob })).status).toBe(404);
  });

  it("a batch: 201 with its id, what it created and its jobs; its summary by state with estimate and charges; posted again 200 with nothing created", async () => {
    const lines = [image("b-1"), image("b-2")];
    const posted = await call("POST", "/v1/batches", { token: alice, body: lines });
    expect(posted.status).toBe(201);
    expect(posted.body).toMatchObject({ created: 2, jobs: [{ ref: "b-1", state: "queued" }, { ref: "b-2", state: "queued" }] });
    const summary = await call("GET", `/v1/batches/${posted.body.batch_id}`, { token: alice });
    expect(summary.body).toEqual({
      batch_id: posted.body.batch_id,
      jobs: 2,
      by_state: { queued: 2 },
      estimate_micro_usd: 60_000,
      unpriced: 0,
      charged_micro_usd: 0,
      href: `/v1/batches/${posted.body.batch_id}`,
      dashboard_href: `/batches/${posted.body.batch_id}`,
    });
    const again = await call("POST", "/v1/batches", { token: alice, body: lines });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ batch_id: posted.body.batch_id, created: 0 });
    // The budget ($0.15) holds $0.12 of queued jobs now (the cancelled one gave its $0.03 back): a further batch of two is refused whole.
    const over = await call("POST", "/v1/batches", { token: alice, body: [image("b-3"), image("b-4")] });
    expect(over.status).toBe(402);
    expect(over.body.error.code).toBe("over_budget");
  });

  it("spend: the caller's lines and sums for the period asked", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const spend = await call("GET", `/v1/spend?from=${today}&to=${today}`, { token: alice });
    expect(spend.status).toBe(200);
    expect(spend.body).toMatchObject({ from: `${today}T00:00:00.000Z`, settled_micro_usd: 0, unpriced_jobs: 0 });
    expect(spend.body.lines).toEqual([{ provider: "d", model: "gen-2-pro", token: "alice", settled_micro_usd: 0, estimated_micro_usd: spend.body.estimated_micro_usd, jobs: 5, unpriced_jobs: 0 }]);
  });
});

describe("GET /v1/providers: each provider's configuration, slots, rate windows, halt and recent errors", () => {
  it("answers every provider with its fields; a halt with its code, message and time; a rate window's use and what is left", async () => {
    const store = await runtime.store();
    const secret = (await createToken(store, { name: "ops", admin: true, now: Date.now() })).secret;
    await store.haltProvider({ provider: "d", code: "out_of_credits", message: "D says the account has no credits", jobId: null, at: Date.UTC(2026, 10, 29, 12) });
    const answer = await call("GET", "/v1/providers", { token: secret });
    await store.clearHalt("d");
    expect(answer.status).toBe(200);
    const byId = new Map(answer.body.providers.map((provider: { id: string }) => [provider.id, provider]));
    expect([...byId.keys()]).toEqual(["a", "b", "c", "d", "e", "f"]);
    const d = byId.get("d") as any;
    expect(d).toMatchObject({ id: "d", configured: true, missing: [], halt: { code: "out_of_credits", message: "D says the account has no credits", at: "2026-11-29T12:00:00.000Z" }, recent_errors: [] });
    expect(typeof d.name).toBe("string");
    expect(d.slots.length).toBeGreaterThan(0);
    for (const slot of d.slots) expect(slot).toMatchObject({ in_use: 0, paused_until: null, capacity: expect.any(Number), pool: expect.stringMatching(/^d:/) });
    const a = byId.get("a") as any;
    expect(a).toMatchObject({ configured: false, halt: null });
    expect(a.missing.length).toBeGreaterThan(0);
    const e = byId.get("e") as any;
    expect(e.rate_windows.length).toBeGreaterThan(0);
    for (const window of e.rate_windows) {
      expect(window).toMatchObject({ key: expect.any(String), limit: expect.any(Number), window_ms: expect.any(Number), used: 0 });
      expect(window.left).toBe(window.limit);
    }
  });
});

describe("an unexpected failure", () => {
  it("is 500 internal_error in a fixed sentence, and the log says which route failed and why", async () => {
    const store = await runtime.store();
    await store.close();
    const failed = await call("GET", "/v1/spend");
    expect(failed.status).toBe(500);
    expect(failed.body.error).toEqual({ code: "internal_error", message: "the request could not be handled; it was logged" });
    const line = logLines.map((each) => JSON.parse(each)).find((each) => each.msg === "API request failed");
    // The store failed before the caller was known.
    expect(line).toMatchObject({ method: "GET", path: "/v1/spend", caller: null });
  });
});

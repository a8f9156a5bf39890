import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRuntime } from "../../src/app/runtime.js";
import { createLogger } from "../../src/engine/logger.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { buildServer } from "../../src/server/app.js";
import { createToken } from "../../src/app/tokens.js";
import { postgresServed, serveSandbox, servedStores, type Served, type ServedStore } from "../helpers/dashboard.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";

interface Api extends Served {
  call(method: string, path: string, options?: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers; bytes: Buffer }>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `mediagate serve`'s server over real HTTP on loopback, its engine running (unless told not to), the sandbox behind it, on `store`. */
async function startApi(store: ServedStore, options: { engine?: boolean; emulators?: Parameters<typeof createAllEmulators>[0] } = {}): Promise<Api> {
  const served = await serveSandbox({
    store,
    ...(options.engine !== undefined ? { engine: options.engine } : {}),
    emulators: { d: { renderTimeMs: { minMs: 200, maxMs: 300 } }, ...options.emulators },
  });
  cleanups.push(() => served.close());
  return { ...served, call: caller(served.url) };
}

/** Requests to the server at `url`, the answer's body parsed when it is JSON. */
function caller(url: string): Api["call"] {
  return async (method, path, { token, body, raw, headers } = {}) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : raw !== undefined ? { body: raw } : {}),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = bytes.toString("utf8");
    let parsed: unknown = text;
    if ((response.headers.get("content-type") ?? "").includes("json")) parsed = JSON.parse(text);
    return { status: response.status, body: parsed, headers: response.headers, bytes };
  };
}

const lighthouse = { provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 512, height: 512 } };

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let tries = 0; tries < 300; tries++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

for (const kind of servedStores) {
  describe(`mediagate serve: the REST API (real HTTP, real sandbox, ${kind.name})`, () => {
    // One job run to the end, then each guarantee checked on its own (a failed one does not hide the others).
    describe("one job through the API", () => {
      let api: Api;
      let created: { status: number; body: any };
      let done: { body: any };
      let file: Buffer;
      let own: Array<() => Promise<void>> = [];
      beforeAll(async () => {
        const served = await serveSandbox({ store: kind, emulators: { d: { renderTimeMs: { minMs: 200, maxMs: 300 } } } });
        own = [() => served.close()];
        api = { ...served, call: caller(served.url) };
        created = await api.call("POST", "/v1/jobs", { body: { ref: "lh", ...lighthouse } });
        done = await until(() => api.call("GET", `/v1/jobs/${created.body.id}`), (answer) => answer.body.state === "succeeded", "the job to succeed");
        const [saved] = await (await api.runtime.store()).outputs(created.body.id);
        file = readFileSync(saved!.path);
      });
      afterAll(async () => {
        for (const cleanup of own.splice(0).reverse()) await cleanup();
      });

      it("API: POST /v1/jobs queues a job (201); the same ref and request answer it again (200); another request under the ref is 409 ref_conflict", async () => {
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        expect(created.body).toMatchObject({ ref: "lh", provider: "d", state: "queued" });
        const again = await api.call("POST", "/v1/jobs", { body: { ref: "lh", ...lighthouse } });
        expect(again.status).toBe(200);
        expect(again.body.id).toBe(created.body.id);
        const other = await api.call("POST", "/v1/jobs", { body: { ref: "lh", ...lighthouse, input: { ...lighthouse.input, prompt: "a harbour" } } });
        expect(other.status).toBe(409);
        expect(other.body.error).toMatchObject({ code: "ref_conflict", field: "ref" });
        expect(api.emulators.d.submitCount).toBe(1);
      });

      it("API: a succeeded job's output is served whole with its sha256 as ETag (304 on If-None-Match) and by byte ranges; a range past the end is capped at the file's size; one starting past it is 416", async () => {
        expect(done.body.outputs).toHaveLength(1);
        const output = done.body.outputs[0];
        expect(output).toMatchObject({ content_type: "image/png", width: 512, height: 512, href: `/v1/jobs/${created.body.id}/outputs/0` });
        expect(output.sha256).toBe(createHash("sha256").update(file).digest("hex"));
        const whole = await api.call("GET", output.href);
        expect(whole.status).toBe(200);
        expect(whole.bytes.equals(file)).toBe(true);
        expect(whole.headers.get("etag")).toBe(`"${createHash("sha256").update(file).digest("hex")}"`);
        expect(whole.headers.get("content-type")).toBe("image/png");
        expect((await api.call("GET", output.href, { headers: { "if-none-match": whole.headers.get("etag")! } })).status).toBe(304);
        const part = await api.call("GET", output.href, { headers: { range: "bytes=0-7" } });
        expect(part.status).toBe(206);
        expect(part.headers.get("content-range")).toBe(`bytes 0-7/${file.length}`);
        expect(part.bytes.equals(file.subarray(0, 8))).toBe(true);
        const tail = await api.call("GET", output.href, { headers: { range: "bytes=-4" } });
        expect(tail.bytes.equals(file.subarray(file.length - 4))).toBe(true);
        // Issue 36, finding 12: a range ending past the file is answered up to its last byte (RFC 9110 §14.1.2), never past it.
        const overlong = await api.call("GET", output.href, { headers: { range: `bytes=4-${file.length + 10_000}` } });
        expect(overlong.status).toBe(206);
        expect(overlong.headers.get("content-range")).toBe(`bytes 4-${file.length - 1}/${file.length}`);
        expect(overlong.headers.get("content-length")).toBe(String(file.length - 4));
        expect(overlong.bytes.equals(file.subarray(4))).toBe(true);
        const outside = await api.call("GET", output.href, { headers: { range: `bytes=${file.length}-` } });
        expect(outside.status).toBe(416);
        expect(outside.body.error.code).toBe("range_not_satisfiable");
        expect((await api.call("GET", `/v1/jobs/${created.body.id}/outputs/7`)).body.error.code).toBe("not_found");
      });

      it("API: a job's events list its states in order, the last with its output's size and sha256", async () => {
        const events = await api.call("GET", `/v1/jobs/${created.body.id}/events`);
        expect(events.body.events.map((event: { to: string }) => event.to)).toEqual(["queued", "submitting", "running", "capturing", "succeeded"]);
        expect(events.body.events.at(-1).detail).toEqual({ outputs: [{ bytes: file.length, sha256: done.body.outputs[0].sha256 }] });
      });

      it("API: no answer about the job names the server's folder: not the job, its listing, its events, nor its page on the dashboard", async () => {
        expect(done.body.outputs[0]).not.toHaveProperty("path");
        const folder = api.env.MEDIAGATE_OUTPUT_DIR!;
        const listing = await api.call("GET", "/v1/jobs");
        const events = await api.call("GET", `/v1/jobs/${created.body.id}/events`);
        const page = await fetch(`${api.url}/jobs/${created.body.id}`);
        for (const text of [JSON.stringify(done.body), JSON.stringify(listing.body), JSON.stringify(events.body), await page.text()]) expect(text).not.toContain(folder);
      });
    });

    it("API: with MEDIAGATE_PUBLIC_URL an output's href is absolute under it, in the job and its listing", async () => {
      const served = await serveSandbox({ store: kind, env: { MEDIAGATE_PUBLIC_URL: "https://mediagate.example/base" }, emulators: { d: { renderTimeMs: { minMs: 200, maxMs: 300 } } } });
      cleanups.push(() => served.close());
      const api: Api = { ...served, call: caller(served.url) };
      const created = await api.call("POST", "/v1/jobs", { body: { ref: "lh-public", ...lighthouse } });
      const done = await until(() => api.call("GET", `/v1/jobs/${created.body.id}`), (answer) => answer.body.state === "succeeded", "the job to succeed");
      const href = `https://mediagate.example/base/v1/jobs/${created.body.id}/outputs/0`;
      expect(done.body.outputs[0].href).toBe(href);
      expect((await api.call("GET", "/v1/jobs")).body.jobs[0].outputs[0].href).toBe(href);
    });

    it("API: one error shape with stable codes: invalid JSON 400, a bad field 422 naming it, a request no target can take 422 with one entry per target, an unknown route or job 404; nothing is sent", async () => {
      const api = await startApi(kind, { engine: false });
      const broken = await api.call("POST", "/v1/jobs", { raw: "{not json", headers: { "content-type": "application/json" } });
      expect(broken.status).toBe(400);
      expect(broken.body).toEqual({ error: { code: "invalid_json", message: "the body is not valid JSON" } });
      const bad = await api.call("POST", "/v1/jobs", { body: { ...lighthouse, input: { ...lighthouse.input, width: 500 } } });
      expect(bad.status).toBe(422);
      expect(bad.body.error).toMatchObject({ code: "invalid_input", field: "width" });
      const none = await api.call("POST", "/v1/jobs", { body: { task: "image", prompt: "a fox", n: 3, route: ["c/v6", "d/gen-2-pro"] } });
      expect(none.status).toBe(422);
      expect(none.body.error.code).toBe("no_eligible_target");
      expect(none.body.error.targets.map((target: { target: string }) => target.target)).toEqual(["c/v6", "d/gen-2-pro"]);
      const path = await api.call("POST", "/v1/jobs", { body: { task: "image", prompt: "a fox", size: "512x512", model: "d/gen-2-pro", images: ["/etc/passwd"] } });
      expect(path.body.error).toMatchObject({ code: "invalid_input", field: "images[0]" });
      expect(path.body.error.message).toMatch(/reads no file of its server/);
      const unsafe = await api.call("POST", "/v1/jobs", { body: { ...lighthouse, notify_url: "http://169.254.169.254/latest" } });
      expect(unsafe.body.error).toMatchObject({ code: "invalid_input", field: "notify_url" });
      expect((await api.call("GET", "/v1/nowhere")).body.error.code).toBe("not_found");
      expect((await api.call("GET", "/v1/jobs/job_missing")).status).toBe(404);
      expect(api.world.sandbox.requests().filter((entry) => entry.provider !== null).length).toBe(0);
      expect((await api.call("GET", "/v1/jobs")).body.jobs).toEqual([]);
      // Without tokens, a request addressed to another name (a page elsewhere rebinding its name to 127.0.0.1) is refused.
      const rebound = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpRequest(`${api.url}/v1/jobs`, { headers: { host: "evil.example" } }, (response) => {
          let body = "";
          response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => resolve({ status: response.statusCode!, body }));
        });
        request.on("error", reject).end();
      });
      expect(rebound.status).toBe(401);
      expect(JSON.parse(rebound.body).error.message).toMatch(/only requests addressed to a loopback name/);
    });

    it("API: a job for a provider that is not configured is refused before it is stored (503 not_configured, naming the variable); a body over the limit is 413 payload_too_large", async () => {
      const api = await startApi(kind, { engine: false });
      // The same server and store without C's key, in place of the first one.
      await api.app.close();
      await api.runtime.close();
      const env = { ...api.env };
      delete env.MEDIAGATE_C_API_KEY;
      const keyless = createRuntime({ overrides: env });
      cleanups.push(() => keyless.close());
      const store = await keyless.store();
      const engine = await keyless.engine();
      const log = createLogger({ level: "silent", secrets: keyless.secrets });
      const app = await buildServer({ store, engine, providers: keyless.providers, log, now: () => Date.now() }, { runtime: keyless, log });
      cleanups.push(() => app.close());
      const url = await app.listen({ port: 0, host: "127.0.0.1" });
      const refused = await fetch(`${url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ provider: "c", model: "v6", input: { prompt: "a kite" } }) });
      expect(refused.status).toBe(503);
      const body = (await refused.json()) as { error: { code: string; field: string; message: string } };
      expect(body.error).toMatchObject({ code: "not_configured", field: "MEDIAGATE_C_API_KEY" });
      expect(await store.listJobs({})).toEqual([]);
      const huge = await fetch(`${url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...lighthouse, input: { ...lighthouse.input, prompt: "x".repeat(2 * 1024 * 1024) } }) });
      expect(huge.status).toBe(413);
      expect(((await huge.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
    });

    it("API: with tokens in the store every request needs one; a token sees only its own jobs (another's is 404), a read-only token cannot write (403), a revoked one is refused (401)", async () => {
      const api = await startApi(kind, { engine: false });
      const store = await api.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      const reader = await createToken(store, { name: "reader", readOnly: true, now: Date.now() });
      const admin = await createToken(store, { name: "ops", admin: true, now: Date.now() });
      expect((await api.call("GET", "/v1/jobs")).body.error.code).toBe("unauthorized");
      expect((await api.call("GET", "/v1/jobs", { token: "mg_not-a-real-one" })).status).toBe(401);
      const job = await api.call("POST", "/v1/jobs", { token: alice.secret, body: { ref: "alice-1", ...lighthouse } });
      expect(job.status).toBe(201);
      expect((await api.call("GET", `/v1/jobs/${job.body.id}`, { token: alice.secret })).status).toBe(200);
      expect((await api.call("GET", `/v1/jobs/${job.body.id}`, { token: bob.secret })).status).toBe(404);
      expect((await api.call("GET", `/v1/jobs/${job.body.id}/outputs/0`, { token: bob.secret })).status).toBe(404);
      expect((await api.call("POST", `/v1/jobs/${job.body.id}/cancel`, { token: bob.secret })).status).toBe(404);
      expect((await api.call("GET", "/v1/jobs", { token: bob.secret })).body.jobs).toEqual([]);
      expect((await api.call("GET", `/v1/jobs/${job.body.id}`, { token: admin.secret })).status).toBe(200);
      // A ref is unique per tenant: the same ref under another token is another job, and says nothing of the first.
      const own = await api.call("POST", "/v1/jobs", { token: bob.secret, body: { ref: "alice-1", ...lighthouse } });
      expect(own.status).toBe(201);
      expect(own.body.id).not.toBe(job.body.id);
      expect((await api.call("POST", "/v1/jobs", { token: alice.secret, body: { ref: "alice-1", ...lighthouse } })).body.id).toBe(job.body.id);
      const readOnly = await api.call("POST", "/v1/jobs", { token: reader.secret, body: lighthouse });
      expect(readOnly.status).toBe(403);
      expect(readOnly.body.error.code).toBe("read_only_token");
      await store.revokeToken("alice", Date.now());
      const revoked = await api.call("GET", "/v1/jobs", { token: alice.secret });
      expect(revoked.status).toBe(401);
      expect(revoked.body.error.message).toBe("token alice was revoked");
    });

    it("API: a token's budget is a ceiling checked before anything is stored or sent: an estimate over what is left is 402 over_budget", async () => {
      const api = await startApi(kind, { engine: false });
      const store = await api.runtime.store();
      const small = await createToken(store, { name: "small", budgetMicroUsd: 50_000, now: Date.now() });
      // gen-2-max at 1 MP is $0.07 on D's pricing page.
      const over = await api.call("POST", "/v1/jobs", { token: small.secret, body: { provider: "d", model: "gen-2-max", input: { prompt: "x", width: 1024, height: 1024 } } });
      expect(over.status).toBe(402);
      expect(over.body.error.code).toBe("over_budget");
      const within = await api.call("POST", "/v1/jobs", { token: small.secret, body: lighthouse });
      expect(within.status).toBe(201);
      const stored = await store.getJob(within.body.id);
      expect(stored!.budgetId).toBe(small.token.budgetId);
      expect(await store.listJobs({})).toHaveLength(1);
    });

    it("API: the same ref and request sent by many clients at once is one job: one answer 201, every other 200 with its id; a batch sent twice at once is one batch (201, then 200 under the same id)", async () => {
      const api = await startApi(kind, { engine: false });
      const answers = await Promise.all(Array.from({ length: 8 }, () => api.call("POST", "/v1/jobs", { body: { ref: "together", ...lighthouse } })));
      expect(answers.map((answer) => answer.status).sort(), JSON.stringify(answers.map((answer) => answer.body))).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
      expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
      const lines = ["t-1", "t-2", "t-3"].map((ref) => ({ ref, ...lighthouse }));
      const batches = await Promise.all([api.call("POST", "/v1/batches", { body: lines }), api.call("POST", "/v1/batches", { body: lines })]);
      // The one that created the jobs answers 201; the other found them stored: 200, the same batch.
      expect(batches.map((batch) => batch.status).sort(), JSON.stringify(batches.map((batch) => batch.body))).toEqual([200, 201]);
      expect(batches.map((batch) => batch.body.created).sort()).toEqual([0, 3]);
      expect(new Set(batches.map((batch) => batch.body.batch_id)).size).toBe(1);
      const store = await api.runtime.store();
      expect((await store.listJobs({})).map((job) => job.ref).sort()).toEqual(["t-1", "t-2", "t-3", "together"]);
    });

    it("API: GET /v1/jobs pages newest first with a cursor that neither repeats nor skips a job when new ones arrive between pages; filters by state, provider and ref", async () => {
      const api = await startApi(kind, { engine: false });
      const ids: string[] = [];
      for (let index = 0; index < 7; index++) ids.push((await api.call("POST", "/v1/jobs", { body: { ref: `page-${index}`, ...lighthouse } })).body.id);
      const first = await api.call("GET", "/v1/jobs?limit=3");
      expect(first.body.jobs.map((job: { ref: string }) => job.ref)).toEqual(["page-6", "page-5", "page-4"]);
      // A job created between two pages is newer than all: it never appears in the later pages.
      await api.call("POST", "/v1/jobs", { body: { ref: "late", ...lighthouse } });
      const second = await api.call("GET", `/v1/jobs?limit=3&cursor=${first.body.next_cursor}`);
      expect(second.body.jobs.map((job: { ref: string }) => job.ref)).toEqual(["page-3", "page-2", "page-1"]);
      const third = await api.call("GET", `/v1/jobs?limit=3&cursor=${second.body.next_cursor}`);
      expect(third.body.jobs.map((job: { ref: string }) => job.ref)).toEqual(["page-0"]);
      expect(third.body.next_cursor).toBeNull();
      expect((await api.call("GET", "/v1/jobs?ref=page-2")).body.jobs.map((job: { id: string }) => job.id)).toEqual([ids[2]]);
      expect((await api.call("GET", "/v1/jobs?state=succeeded")).body.jobs).toEqual([]);
      expect((await api.call("GET", "/v1/jobs?provider=d&limit=200")).body.jobs).toHaveLength(8);
      expect((await api.call("GET", "/v1/jobs?state=done")).body.error).toMatchObject({ code: "invalid_input", field: "state" });
      expect((await api.call("GET", "/v1/jobs?cursor=xyz")).body.error).toMatchObject({ code: "invalid_input", field: "cursor" });
      expect((await api.call("GET", "/v1/jobs?limit=0")).body.error.field).toBe("limit");
    });

    it("API: GET /v1/jobs?ref_prefix= finds the caller's jobs whose ref starts with it, character for character (% and _ are plain, case matters), paged by the same cursor; an empty or overlong prefix is 422", async () => {
      const api = await startApi(kind, { engine: false });
      const store = await api.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      for (const ref of ["batch-7-001", "batch-7-002", "batch-7-003", "batch-70", "batch-8-001", "Batch-7-x", "batch_7", "50%-off", "500"]) {
        expect((await api.call("POST", "/v1/jobs", { token: alice.secret, body: { ref, ...lighthouse } })).status).toBe(201);
      }
      expect((await api.call("POST", "/v1/jobs", { token: bob.secret, body: { ref: "batch-7-bob", ...lighthouse } })).status).toBe(201);
      const refs = async (query: string, token = alice.secret) => (await api.call("GET", `/v1/jobs?${query}`, { token })).body.jobs.map((job: { ref: string }) => job.ref);
      expect(await refs("ref_prefix=batch-7")).toEqual(["batch-70", "batch-7-003", "batch-7-002", "batch-7-001"]);
      expect(await refs("ref_prefix=batch-7-")).toEqual(["batch-7-003", "batch-7-002", "batch-7-001"]);
      expect(await refs("ref_prefix=batch-7-001")).toEqual(["batch-7-001"]);
      expect(await refs("ref_prefix=batch_")).toEqual(["batch_7"]);
      expect(await refs(`ref_prefix=${encodeURIComponent("50%")}`)).toEqual(["50%-off"]);
      expect(await refs("ref_prefix=batch-7", bob.secret)).toEqual(["batch-7-bob"]);
      const first = await api.call("GET", "/v1/jobs?ref_prefix=batch-7-&limit=2", { token: alice.secret });
      expect(first.body.jobs.map((job: { ref: string }) => job.ref)).toEqual(["batch-7-003", "batch-7-002"]);
      expect(await refs(`ref_prefix=batch-7-&limit=2&cursor=${first.body.next_cursor}`)).toEqual(["batch-7-001"]);
      expect((await api.call("GET", "/v1/jobs?ref_prefix=", { token: alice.secret })).body.error).toMatchObject({ code: "invalid_input", field: "ref_prefix" });
      expect((await api.call("GET", `/v1/jobs?ref_prefix=${"x".repeat(201)}`, { token: alice.secret })).body.error).toMatchObject({ code: "invalid_input", field: "ref_prefix" });
    });

    it("API: POST /v1/batches (JSON lines) is validated whole: one bad line refuses it all with an entry per line and queues nothing; a good one is queued and counted by GET /v1/batches/{id}", async () => {
      const api = await startApi(kind, { engine: false });
      const line = (ref: string, width = 512) => JSON.stringify({ ref, ...lighthouse, input: { ...lighthouse.input, width } });
      const refused = await api.call("POST", "/v1/batches", { raw: [line("b-1"), line("b-2", 500), line("b-1")].join("\n"), headers: { "content-type": "application/x-ndjson" } });
      expect(refused.status).toBe(422);
      expect(refused.body.error.targets).toEqual([
        { target: "line 2", reasons: [expect.stringMatching(/width: must be a multiple of 16/)] },
        { target: "line 3", reasons: [expect.stringMatching(/"b-1" repeats line 1/)] },
      ]);
      expect((await api.call("GET", "/v1/jobs")).body.jobs).toEqual([]);
      const batch = await api.call("POST", "/v1/batches", { raw: [line("b-1"), line("b-2"), line("b-3")].join("\n"), headers: { "content-type": "application/x-ndjson" } });
      expect(batch.status).toBe(201);
      expect(batch.body.created).toBe(3);
      const summary = await api.call("GET", `/v1/batches/${batch.body.batch_id}`);
      expect(summary.body).toMatchObject({ batch_id: batch.body.batch_id, jobs: 3, by_state: { queued: 3 }, estimate_micro_usd: 90_000, charged_micro_usd: 0 });
      // The same body again is the same batch, resumed: nothing new.
      const resent = await api.call("POST", "/v1/batches", { body: [JSON.parse(line("b-1")), JSON.parse(line("b-2")), JSON.parse(line("b-3"))] });
      expect(resent.body).toMatchObject({ batch_id: batch.body.batch_id, created: 0 });
    });

    it("API: quote, plan, providers, spend and cancel answer as the CLI would; a cancelled job cannot be cancelled again (409)", async () => {
      const api = await startApi(kind, { engine: false });
      const quote = await api.call("POST", "/v1/quote", { body: { task: "image", prompt: "a fox", size: "1000x750", route: ["e/v3", "d/gen-2-pro"] } });
      expect(quote.body).toMatchObject({ provider: "d", estimate_micro_usd: 30_000, target: "d/gen-2-pro" });
      expect(quote.body.ineligible[0]).toMatchObject({ target: "e/v3" });
      const plan = await api.call("POST", "/v1/plan", { body: [{ ref: "p-1", ...lighthouse }, { ref: "p-2", ...lighthouse }] });
      expect(plan.body.providers[0]).toMatchObject({ provider: "d", jobs: 2, slots: 24, waves: 1 });
      const providers = await api.call("GET", "/v1/providers");
      expect(providers.body.providers.map((provider: { id: string; configured: boolean }) => [provider.id, provider.configured])).toEqual([
        ["a", true], ["b", true], ["c", true], ["d", true], ["e", true], ["f", true],
      ]);
      // E counts every request against 4 a minute and a daily quota: each window's budget is shown, all of it left.
      const e = providers.body.providers.find((provider: { id: string }) => provider.id === "e");
      expect(e.rate_windows).toEqual([expect.objectContaining({ limit: 4, window_ms: 60_000, used: 0, left: 4 }), expect.objectContaining({ key: "e:org:day", limit: 9_000, left: 9_000 })]);
      expect(providers.body.providers.find((provider: { id: string }) => provider.id === "d")).toMatchObject({ slots: [{ pool: "d:account", in_use: 0, capacity: 24 }], halt: null, recent_errors: [] });
      const job = await api.call("POST", "/v1/jobs", { body: lighthouse });
      const cancelled = await api.call("POST", `/v1/jobs/${job.body.id}/cancel`);
      expect(cancelled.body.state).toBe("cancelled");
      const again = await api.call("POST", `/v1/jobs/${job.body.id}/cancel`);
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe("not_cancellable");
      const spend = await api.call("GET", "/v1/spend");
      expect(spend.body).toMatchObject({ settled_micro_usd: 0, estimated_micro_usd: 30_000 });
      expect((await api.call("GET", "/v1/spend?from=2026-13-01")).body.error.field).toBe("from");
    });

    it("API (issue 36, finding 5): unpriced is not free: /v1/spend counts E's unpriced jobs beside the sums, and from=D&to=D is day D, inclusive as the CLI's days", async () => {
      const api = await startApi(kind, { engine: false });
      expect((await api.call("POST", "/v1/jobs", { body: lighthouse })).status).toBe(201);
      expect((await api.call("POST", "/v1/jobs", { body: { provider: "e", model: "v3", input: { prompt: "a fox" } } })).status).toBe(201);
      const today = new Date().toISOString().slice(0, 10);
      const spend = await api.call("GET", `/v1/spend?from=${today}&to=${today}`);
      expect(spend.status).toBe(200);
      expect(spend.body).toMatchObject({ from: `${today}T00:00:00.000Z`, settled_micro_usd: 0, estimated_micro_usd: 30_000, unpriced_jobs: 1 });
      expect(Date.parse(spend.body.to) - Date.parse(spend.body.from)).toBe(86_400_000);
      expect(spend.body.lines.find((line: { provider: string }) => line.provider === "e")).toMatchObject({ jobs: 1, unpriced_jobs: 1, estimated_micro_usd: 0 });
      expect(spend.body.lines.find((line: { provider: string }) => line.provider === "d")).toMatchObject({ jobs: 1, unpriced_jobs: 0, estimated_micro_usd: 30_000 });
      // The day before today holds nothing; a period ending before it starts is refused naming from.
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      expect((await api.call("GET", `/v1/spend?from=${yesterday}&to=${yesterday}`)).body).toMatchObject({ estimated_micro_usd: 0, unpriced_jobs: 0, lines: [] });
      const backwards = await api.call("GET", `/v1/spend?from=${today}&to=${yesterday}`);
      expect(backwards.status).toBe(422);
      expect(backwards.body.error.field).toBe("from");
      expect((await api.call("GET", "/v1/spend?from=2026-02-30")).body.error.message).toMatch(/^from: "2026-02-30" is not a day of the calendar/);
    });

    it("API: an unexpected failure (the store closed under the running server) is 500 internal_error in the one error shape: a fixed sentence, no stack, no store detail; the server's log has a line saying what failed", async () => {
      const api = await startApi(kind, { engine: false });
      await (await api.runtime.store()).close();
      for (const [method, path] of [["GET", "/v1/jobs"], ["POST", "/v1/jobs"]] as const) {
        const failed = await api.call(method, path, method === "POST" ? { body: lighthouse } : {});
        expect(failed.status).toBe(500);
        expect(failed.headers.get("content-type")).toMatch(/^application\/json/);
        expect(failed.body).toEqual({ error: { code: "internal_error", message: "the request could not be handled; it was logged" } });
      }
      const lines = api.logLines.map((line) => JSON.parse(line));
      const failures = lines.filter((line) => line.msg === "API request failed");
      expect(failures.map(({ method, path }) => [method, path])).toEqual([["GET", "/v1/jobs"], ["POST", "/v1/jobs"]]);
      for (const failure of failures) {
        expect(failure.level).toBe(50);
        expect(typeof failure.err).toBe("string");
        expect(failure.err.length).toBeGreaterThan(0);
      }
      expect(lines.filter((line) => line.msg === "api request").map((line) => line.status)).toEqual([500, 500]);
    });

    it("API: /openapi.json is an OpenAPI 3.1 document whose every operation is a route of the server, with the one error shape", async () => {
      const api = await startApi(kind, { engine: false });
      const document = (await api.call("GET", "/openapi.json")).body;
      expect(document.openapi).toBe("3.1.0");
      expect(document.components.schemas.Error.properties.error.properties.code.enum).toContain("ref_conflict");
      const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) => Object.keys(methods).map((method) => [method.toUpperCase(), path] as const));
      // mediagate's 13 and the 8 that answer OpenAI's shapes (issue 38).
      expect(operations.length).toBe(21);
      const listing = (document.paths["/v1/jobs"].get.parameters as Array<{ name: string; in: string; description: string }>).filter((parameter) => parameter.in === "query");
      expect(listing.map((parameter) => parameter.name)).toEqual(["state", "provider", "ref", "ref_prefix", "batch", "created_after", "created_before", "limit", "cursor"]);
      for (const parameter of listing) expect(parameter.description.length, parameter.name).toBeGreaterThan(0);
      for (const [method, path] of operations) {
        expect(api.app.hasRoute({ method: method as "GET" | "POST" | "DELETE", url: path.replace(/\{([a-z_]+)\}/g, ":$1") }), `${method} ${path}`).toBe(true);
      }
    });
  });
}

describe.runIf(process.env.DATABASE_URL)("mediagate serve: the REST API while its PostgreSQL store is unreachable", () => {
  it("API: a request while the store is unreachable is 500 internal_error naming neither the store's address nor its password; the log line says what failed, its password redacted; once the store is back, requests succeed again", async () => {
    const target = new URL(process.env.DATABASE_URL!);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    cleanups.push(() => proxy.close());
    // A password in the address (trust authentication ignores it), so the test can look for it; the server's connections go through the proxy.
    const password = "pg-Secret-7781";
    const viaProxy: ServedStore = { name: "postgres", open: () => postgresServed(process.env.DATABASE_URL!).open({ password, viaPort: proxy.port }) };
    const api = await startApi(viaProxy, { engine: false });
    expect((await api.call("POST", "/v1/jobs", { body: { ref: "before", ...lighthouse } })).status).toBe(201);

    await proxy.cut();
    const failed = await api.call("GET", "/v1/jobs");
    expect(failed.status).toBe(500);
    expect(failed.body).toEqual({ error: { code: "internal_error", message: "the request could not be handled; it was logged" } });
    const answered = failed.bytes.toString("utf8");
    for (const detail of [password, String(proxy.port), "127.0.0.1", "postgres", "ECONN", "    at "]) expect(answered).not.toContain(detail);

    const failure = api.logLines.map((line) => JSON.parse(line)).find((line) => line.msg === "API request failed");
    expect(failure).toMatchObject({ level: 50, method: "GET", path: "/v1/jobs", caller: null });
    expect(failure.err).toMatch(/ECONNREFUSED|terminated|Connection/i);
    expect(api.logLines.join("")).not.toContain(password);

    await proxy.restore();
    await until(() => api.call("GET", "/v1/jobs"), (answer) => answer.status === 200, "the API to answer once the store is back");
  });
});

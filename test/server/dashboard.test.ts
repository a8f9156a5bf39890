import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/engine/logger.js";
import { callerOf } from "../../src/app/caller.js";
import { JobFeed } from "../../src/server/dashboard/feed.js";
import { escapeHtml, html } from "../../src/server/dashboard/html.js";
import { createToken } from "../../src/app/tokens.js";
import { readEvents, serveSandbox, servedStores, type Served, type ServedStore } from "../helpers/dashboard.js";
import { newDJob } from "../helpers/stores.js";
import { untilJob } from "../helpers/until.js";

let open: Served | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function serveOn(store: ServedStore, options: Parameters<typeof serveSandbox>[0] = {}): Promise<Served> {
  open = await serveSandbox({ ...options, store });
  return open;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** A request as a browser on a page of the server would send it: `origin` names the page's origin unless told otherwise. */
/** A request to the dashboard; `form` is sent URL-encoded, `rawForm` as it is written (an encoding no browser would send). */
async function call(served: Served, method: string, path: string, options: { cookie?: string; form?: Record<string, string>; rawForm?: string; headers?: Record<string, string>; origin?: string | null } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.cookie) headers.cookie = options.cookie;
  const body = options.rawForm ?? (options.form ? new URLSearchParams(options.form).toString() : undefined);
  if (body !== undefined) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    if (options.origin !== null) headers.origin = options.origin ?? served.url;
  }
  const response = await fetch(`${served.url}${path}`, { method, headers, redirect: "manual", ...(body !== undefined ? { body } : {}) });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** fetch may not set Host: a plain request does, as a browser on a rebound name would send it. */
function statusWithHost(served: Served, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${served.url}${path}`, { headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode!);
    });
    request.on("error", reject);
    request.end();
  });
}

async function login(served: Served, secret: string): Promise<string> {
  const answer = await call(served, "POST", "/login", { form: { token: secret, next: "/" } });
  expect(answer.status).toBe(303);
  return answer.headers.get("set-cookie")!.split(";")[0]!;
}

function formTokenOf(page: string): string {
  const match = /name="form_token" value="([^"]+)"/.exec(page);
  if (!match) throw new Error("the page has no form token");
  return match[1]!;
}

const nativeD = { kind: "native", provider: "d", model: "gen-2-pro", input: JSON.stringify({ prompt: "a lighthouse", width: 512, height: 512 }) };

/** Quotes the form, then sends it as quoted: the way the page does it. */
async function submit(served: Served, cookie: string, form: Record<string, string>): Promise<Answer> {
  const formToken = formTokenOf((await call(served, "GET", "/new", { cookie })).text);
  const quoted = await call(served, "POST", "/new", { cookie, form: { ...form, form_token: formToken, step: "quote" } });
  expect(quoted.status, quoted.text).toBe(200);
  const digest = /name="quoted" value="([^"]+)"/.exec(quoted.text)![1]!;
  return call(served, "POST", "/new", { cookie, form: { ...form, form_token: formToken, quoted: digest, step: "send" } });
}

/**
 * Reads server-sent events from `path` until `done` holds for the messages so
 * far (bounded). `onOpen` runs once the stream's first block arrived: the
 * server writes it after subscribing the view, so a change made from then on
 * reaches it (no guess at how long subscribing takes).
 */
describe("html: the dashboard's escaper", () => {
  it("html escapes every interpolated value (markup, quotes, backticks), passes html built values and lists through, and drops null, undefined and false", () => {
    expect(escapeHtml(`<a href="x" title='y'>&\`</a>`)).toBe("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&#96;&lt;/a&gt;");
    const ref = '"><script>alert(1)</script>';
    expect(html`<a title="${ref}">${ref}</a>`.text).toBe("<a title=\"&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;\">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</a>");
    expect(html`<ul>${["<b>", html`<li>${"&"}</li>`]}</ul>${null}${undefined}${false}${0}`.text).toBe("<ul>&lt;b&gt;<li>&amp;</li></ul>0");
  });
});

for (const kind of servedStores) {
  describe(`mediagate serve: the dashboard over real HTTP (sandbox, ${kind.name})`, () => {
    const serve = (options: Parameters<typeof serveSandbox>[0] = {}) => serveOn(kind, options);

    it("Dashboard access: without a session a page sends the browser to the login form, /events and outputs are 401; a wrong token is refused; a right one sets an HttpOnly, SameSite=Strict cookie for the whole site; logging out clears it", async () => {
      const served = await serve({ engine: false });
      const alice = await createToken(await served.runtime.store(), { name: "alice", now: Date.now() });
      const page = await call(served, "GET", "/jobs/job_x?a=1");
      expect(page.status).toBe(303);
      expect(page.headers.get("location")).toBe("/login?next=%2Fjobs%2Fjob_x%3Fa%3D1");
      expect((await call(served, "GET", "/events")).status).toBe(401);
      expect((await call(served, "GET", "/jobs/job_x/outputs/0")).status).toBe(401);
      const form = await call(served, "GET", "/login");
      expect(form.status).toBe(200);
      expect(form.text).toContain('<label for="token">API token</label>');

      const wrong = await call(served, "POST", "/login", { form: { token: "mg_not-a-real-one", next: "/" } });
      expect(wrong.status).toBe(401);
      expect(wrong.text).toContain("the bearer token is not known to this store");
      expect(wrong.headers.get("set-cookie")).toBeNull();
      // Logging a browser in from another site's page is refused too (login CSRF).
      expect((await call(served, "POST", "/login", { form: { token: alice.secret }, origin: "https://evil.example" })).status).toBe(403);

      const right = await call(served, "POST", "/login", { form: { token: alice.secret, next: "//evil.example/" } });
      expect(right.status).toBe(303);
      // Only a local path is followed after logging in.
      expect(right.headers.get("location")).toBe("/");
      const cookie = right.headers.get("set-cookie")!;
      expect(cookie).toBe(`mg_session=${alice.secret}; Path=/; HttpOnly; SameSite=Strict`);
      const session = cookie.split(";")[0]!;
      const dashboard = await call(served, "GET", "/", { cookie: session });
      expect(dashboard.status).toBe(200);
      expect(dashboard.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(dashboard.headers.get("x-frame-options")).toBe("DENY");
      expect(dashboard.text).toContain("alice");
      // A bearer header works as the API's does.
      expect((await call(served, "GET", "/", { headers: { authorization: `Bearer ${alice.secret}` } })).status).toBe(200);

      const logout = await call(served, "POST", "/logout", { cookie: session, form: { form_token: formTokenOf(dashboard.text) } });
      expect(logout.status).toBe(303);
      expect(logout.headers.get("set-cookie")).toBe("mg_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
      // Revoked (another token remains: without any, the dashboard would be the local user's).
      await createToken(await served.runtime.store(), { name: "bob", now: Date.now() });
      await (await served.runtime.store()).revokeToken("alice", Date.now());
      const revoked = await call(served, "GET", "/new", { cookie: session });
      expect(revoked.status).toBe(303);
    });

    it("Dashboard CSRF: a form POST with the session cookie is refused (403, nothing queued) when its Origin is another site's, when it has neither Origin nor Referer, or when its form token is missing or another session's; from the dashboard's own page it queues the job", async () => {
      const served = await serve({ engine: false });
      const store = await served.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      const cookie = await login(served, alice.secret);
      const bobToken = formTokenOf((await call(served, "GET", "/new", { cookie: await login(served, bob.secret) })).text);
      const formToken = formTokenOf((await call(served, "GET", "/new", { cookie })).text);
      expect(formToken).not.toBe(bobToken);
      const quoteForm = { ...nativeD, step: "quote" };

      const elsewhere = await call(served, "POST", "/new", { cookie, form: { ...quoteForm, form_token: formToken }, origin: "https://evil.example" });
      expect(elsewhere.status).toBe(403);
      expect(elsewhere.text).toContain("not sent from a page of this server");
      expect((await call(served, "POST", "/new", { cookie, form: { ...quoteForm, form_token: formToken }, origin: null })).status).toBe(403);
      expect((await call(served, "POST", "/new", { cookie, form: { ...quoteForm }, origin: null, headers: { referer: `${served.url}/new` } })).status).toBe(403);
      const missing = await call(served, "POST", "/new", { cookie, form: quoteForm });
      expect(missing.status).toBe(403);
      expect(missing.text).toContain("does not belong to this session");
      expect((await call(served, "POST", "/new", { cookie, form: { ...quoteForm, form_token: bobToken } })).status).toBe(403);
      // A Referer of this server stands in for a missing Origin.
      expect((await call(served, "POST", "/new", { cookie, form: { ...quoteForm, form_token: formToken }, origin: null, headers: { referer: `${served.url}/new` } })).status).toBe(200);
      expect(await store.listJobs({})).toEqual([]);

      const sent = await submit(served, cookie, nativeD);
      expect(sent.status).toBe(303);
      const [job] = await store.listJobs({});
      expect(sent.headers.get("location")).toBe(`/?created=${job!.id}`);
      expect(job).toMatchObject({ provider: "d", model: "gen-2-pro", tokenId: alice.token.id, state: "queued" });
    });

    it("Dashboard submit: the quote is shown before the send button; a request changed after its quote is quoted again and nothing is sent; a bad field (or an input nested past 64 levels) is answered 422 naming it", async () => {
      const served = await serve({ engine: false });
      const store = await served.runtime.store();
      const cookie = await login(served, (await createToken(store, { name: "alice", now: Date.now() })).secret);
      const formToken = formTokenOf((await call(served, "GET", "/new", { cookie })).text);
      const common = { kind: "common", task: "image", prompt: "a fox", size: "1000x750", targets: "e/v3, d/gen-2-pro", form_token: formToken };
      const quoted = await call(served, "POST", "/new", { cookie, form: { ...common, step: "quote" } });
      expect(quoted.status).toBe(200);
      expect(quoted.text).toContain("$0.03");
      expect(quoted.text).toContain("d/gen-2-pro");
      expect(quoted.text).toMatch(/<button type="submit" name="step" value="send" class="primary">Send \(\$0\.0300\)<\/button>/);
      const digest = /name="quoted" value="([^"]+)"/.exec(quoted.text)![1]!;
      const changed = await call(served, "POST", "/new", { cookie, form: { ...common, prompt: "a wolf", quoted: digest, step: "send" } });
      expect(changed.status).toBe(200);
      expect(changed.text).toContain("The request changed since its quote");
      expect(await store.listJobs({})).toEqual([]);
      const bad = await call(served, "POST", "/new", { cookie, form: { ...nativeD, input: '{"prompt": "x", "width": 500, "height": 512}', form_token: formToken, step: "quote" } });
      expect(bad.status).toBe(422);
      expect(bad.text).toContain("width: must be a multiple of 16");
      const notJson = await call(served, "POST", "/new", { cookie, form: { ...nativeD, input: "{prompt", form_token: formToken, step: "quote" } });
      expect(notJson.status).toBe(422);
      expect(notJson.text).toContain("input: is not valid JSON");
      const deep = await call(served, "POST", "/new", { cookie, form: { ...nativeD, input: `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`, form_token: formToken, step: "quote" } });
      expect(deep.status).toBe(422);
      expect(deep.text).toContain("input: is nested 5000 levels deep");
      // A percent-encoding that is not UTF-8 would be read as U+FFFD: refused naming the field, not changed.
      const lone = await call(served, "POST", "/new", { cookie, rawForm: `kind=common&task=image&prompt=a%20fox%ED%A0%80&size=512x512&targets=d%2Fgen-2-pro&step=quote&form_token=${encodeURIComponent(formToken)}` });
      expect(lone.status).toBe(422);
      expect(lone.text).toContain("prompt: is not percent-encoded UTF-8 text");
      expect(await store.listJobs({})).toEqual([]);
      const reader = await createToken(store, { name: "reader", readOnly: true, now: Date.now() });
      const readerCookie = await login(served, reader.secret);
      expect((await call(served, "GET", "/new", { cookie: readerCookie })).status).toBe(403);
    });

    it("Dashboard: a token sees only its own jobs: another's job page and output are 404, its row is not in the table; every value is escaped (a ref holding markup shows as text)", async () => {
      const served = await serve({ engine: false });
      const store = await served.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      const aliceCookie = await login(served, alice.secret);
      const bobCookie = await login(served, bob.secret);
      expect((await submit(served, aliceCookie, { ...nativeD, ref: '<img src=x onerror="alert(1)">' })).status).toBe(303);
      const [job] = await store.listJobs({});
      const own = await call(served, "GET", "/", { cookie: aliceCookie });
      expect(own.text).toContain(`data-job="${job!.id}"`);
      expect(own.text).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
      expect(own.text).not.toContain("<img src=x");
      expect((await call(served, "GET", `/jobs/${job!.id}`, { cookie: aliceCookie })).status).toBe(200);
      expect((await call(served, "GET", "/", { cookie: bobCookie })).text).not.toContain(job!.id);
      expect((await call(served, "GET", `/jobs/${job!.id}`, { cookie: bobCookie })).status).toBe(404);
      expect((await call(served, "GET", `/jobs/${job!.id}/outputs/0`, { cookie: bobCookie })).status).toBe(404);
      expect((await call(served, "GET", `/events?job=${job!.id}`, { cookie: bobCookie })).status).toBe(404);
    });

    it("Dashboard search: the ref box finds the jobs whose ref starts with it (batch-7 finds batch-7-001 and batch-70, not batch-8-001 or Batch-7-x); its live view adds a job created later only when its ref starts with it", async () => {
      const served = await serve({ engine: false });
      const store = await served.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const cookie = await login(served, alice.secret);
      const startedAt = Date.now() - 10_000;
      const refs = ["batch-7-001", "batch-8-001", "batch-7-002", "Batch-7-x", "batch_7", "batch-70"];
      for (const [index, ref] of refs.entries()) await store.insertJobs([newDJob(ref, { tokenId: alice.token.id })], startedAt + index);
      const page = await call(served, "GET", "/?ref_prefix=batch-7", { cookie });
      expect(page.status).toBe(200);
      expect([...page.text.matchAll(/<tr data-job="([^"]+)"/g)].map((match) => match[1])).toEqual(["job_batch-70", "job_batch-7-002", "job_batch-7-001"]);
      expect(page.text).toContain('name="ref_prefix" type="search" value="batch-7"');
      const events = /data-events="([^"]+)"/.exec(page.text)![1]!.replaceAll("&amp;", "&");
      expect(new URL(events, served.url).searchParams.get("ref_prefix")).toBe("batch-7");
      const none = await call(served, "GET", "/?ref_prefix=batch-9", { cookie });
      expect(none.text).toContain("No jobs match this filter.");

      // Another process queues two jobs, the one that does not match first: any look that finds the second finds it too.
      const seen = readEvents(served, events, cookie, (messages) => messages.some((message) => message.data.id === "job_batch-7-003"), 15_000, () => {
        void store.insertJobs([newDJob("batch-9-001", { tokenId: alice.token.id })], Date.now()).then(() => store.insertJobs([newDJob("batch-7-003", { tokenId: alice.token.id })], Date.now() + 1));
      });
      const rows = (await seen).filter((message) => message.event === "job");
      expect(rows.map((message) => [message.data.id, message.data.matches])).toEqual([["job_batch-7-003", true]]);
    });

    it("Dashboard without any token: the local user is admin and needs no login, on loopback names only (a page whose name was rebound to 127.0.0.1 sends its own Host: 403)", async () => {
      const served = await serve({ engine: false });
      const page = await call(served, "GET", "/new");
      expect(page.status).toBe(200);
      expect(page.text).toContain("local (admin)");
      expect(page.text).not.toContain("Log out");
      expect((await call(served, "GET", "/login")).headers.get("location")).toBe("/");
      expect(await statusWithHost(served, "/", "evil.example")).toBe(403);
      expect(await statusWithHost(served, "/", "localhost:1234")).toBe(200);
      // The local session's forms still need this process's form token.
      expect((await call(served, "POST", "/new", { form: { ...nativeD, step: "quote", form_token: "x" } })).status).toBe(403);
      expect((await call(served, "POST", "/new", { form: { ...nativeD, step: "quote", form_token: formTokenOf(page.text) } })).status).toBe(200);
    });

    it("Dashboard /events: a row follows its job to succeeded, the provider and spend panels are drawn again after changes, and a change another process writes to the store (a cancel) reaches it too; the job's output is served by cookie with an ETag, byte ranges and a sandboxing policy", async () => {
      const served = await serve();
      const store = await served.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const cookie = await login(served, alice.secret);
      const since = Date.now();
      const sent = await submit(served, cookie, nativeD);
      const id = new URL(sent.headers.get("location")!, served.url).searchParams.get("created")!;
      const settled = (seen: Array<{ event: string; data: any }>) => seen.some((each) => each.event === "panels" && each.data.spend.includes("settled <strong>$0.0300</strong>"));
      const events = await readEvents(served, `/events?since=${since}`, cookie, (seen) => seen.some((each) => each.data.id === id && each.data.state === "succeeded") && settled(seen));
      const rows = events.filter((each) => each.event === "job" && each.data.id === id);
      expect(rows.at(-1)!.data).toMatchObject({ matches: true, state: "succeeded" });
      expect(rows.at(-1)!.data.row).toContain('data-state="succeeded"');
      // The panels are drawn again after changes: the spend panel has the job's charge, the provider panel D's slot free again.
      expect(events.filter((each) => each.event === "panels").at(-1)!.data.providers).toContain("Slots d:account: 0 of 24 in use");
      // Never an older state after a newer one.
      const order = ["queued", "submitting", "running", "capturing", "succeeded"];
      const states = rows.map((each) => order.indexOf(each.data.state));
      expect(states).toEqual([...states].sort((left, right) => left - right));

      const output = await call(served, "GET", `/jobs/${id}/outputs/0`, { cookie });
      expect(output.status).toBe(200);
      expect(output.headers.get("content-type")).toBe("image/png");
      expect(output.headers.get("content-security-policy")).toContain("sandbox");
      const etag = output.headers.get("etag")!;
      expect((await call(served, "GET", `/jobs/${id}/outputs/0`, { cookie, headers: { "if-none-match": etag } })).status).toBe(304);
      const part = await call(served, "GET", `/jobs/${id}/outputs/0`, { cookie, headers: { range: "bytes=0-7" } });
      expect(part.status).toBe(206);
      expect(part.headers.get("content-range")).toMatch(/^bytes 0-7\/\d+$/);

      // A job queued and cancelled by "another process": written to the store, never seen by this engine.
      const engine = await served.runtime.engine();
      engine.stop();
      const [other] = await store.insertJobs([newDJob("elsewhere", { tokenId: alice.token.id, outDir: served.world.folder })], Date.now());
      const followed = readEvents(served, `/events?job=${other!.job.id}&since=${Date.now()}`, cookie, (seen) => seen.some((each) => each.data.state === "cancelled"), 15_000, () => {
        void store.transition("job_elsewhere", { state: "queued" }, "cancelled", {}, "cancelled elsewhere", Date.now());
      });
      const cancelled = (await followed).find((each) => each.data.state === "cancelled")!;
      expect(cancelled.data.parts.timeline.html).toContain("cancelled elsewhere");
    });

    it("JobFeed: the engine's changes reach an open view as they happen (no look at the store between), and only the jobs its caller may see", async () => {
      const served = await serve();
      const store = await served.runtime.store();
      const engine = await served.runtime.engine();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      // Looks at the store an hour apart: within the test, only the engine's events can reach the view.
      const feed = new JobFeed({ engine, store: async () => store, log: createLogger({ level: "silent", secrets: () => [] }), followEveryMs: 3_600_000 });
      const delivered: Array<[string, string]> = [];
      const unsubscribe = feed.subscribe({ caller: callerOf(alice.token), ids: new Set(), wantsNew: true, shows: () => true, deliver: (job) => delivered.push([job.ref, job.state]) });
      const queue = async (secret: string, ref: string) => {
        const response = await fetch(`${served.url}/v1/jobs`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: JSON.stringify({ ref, provider: "d", model: "gen-2-pro", input: { prompt: ref, width: 512, height: 512 } }) });
        return ((await response.json()) as { id: string }).id;
      };
      const mine = await queue(alice.secret, "alices");
      const theirs = await queue(bob.secret, "bobs");
      await untilJob(engine, store, mine, (job) => job.state === "succeeded");
      await untilJob(engine, store, theirs, (job) => job.state === "succeeded");
      unsubscribe();
      expect(delivered.filter(([ref]) => ref === "alices").map(([, state]) => state)).toEqual(["submitting", "running", "capturing", "succeeded"]);
      expect(delivered.filter(([ref]) => ref === "bobs")).toEqual([]);
      expect(feed.watching).toBe(0);
    });

    it("Dashboard: closing the server ends its open event streams at once (no wait for the close grace)", async () => {
      const served = await serve({ engine: false });
      const response = await fetch(`${served.url}/events`);
      expect(response.status).toBe(200);
      const reading = (async () => {
        for await (const _chunk of response.body!) void _chunk;
      })();
      const startedAt = Date.now();
      await served.app.close();
      await reading;
      expect(Date.now() - startedAt).toBeLessThan(2_000);
    });

    it("Dashboard: a video job's page plays it from the cookie-authenticated output route (C in the sandbox)", async () => {
      const served = await serve();
      const store = await served.runtime.store();
      const cookie = await login(served, (await createToken(store, { name: "alice", now: Date.now() })).secret);
      const sent = await submit(served, cookie, { kind: "native", provider: "c", model: "v6", input: JSON.stringify({ prompt: "a kite over dunes" }) });
      const id = new URL(sent.headers.get("location")!, served.url).searchParams.get("created")!;
      await untilJob(await served.runtime.engine(), store, id, (job) => job.state === "succeeded", 20_000);
      const page = await call(served, "GET", `/jobs/${id}`, { cookie });
      expect(page.text).toMatch(new RegExp(`<video src="/jobs/${id}/outputs/0" controls preload="metadata"`));
      const tail = await call(served, "GET", `/jobs/${id}/outputs/0`, { cookie, headers: { range: "bytes=-16" } });
      expect(tail.status).toBe(206);
      expect(tail.headers.get("content-type")).toBe("video/mp4");
    });
  });
}

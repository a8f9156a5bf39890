import { afterEach, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import { PROMPT_SEARCH_MAX_CHARS } from "../../src/app/prompt-search.js";
import { serveSandbox, servedStores, type Served } from "../helpers/dashboard.js";

/**
 * Issue 37, part 4, on the dashboard over real HTTP (both stores): the
 * batch page and its cancel, the search by prompt text, thumbnails and
 * durations in the list; each page and action the session's tenant's only.
 */

let open: Served | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function call(served: Served, method: string, path: string, options: { cookie?: string; form?: Record<string, string> } = {}) {
  const headers: Record<string, string> = {};
  if (options.cookie) headers.cookie = options.cookie;
  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  if (body !== undefined) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    headers.origin = served.url;
  }
  const response = await fetch(`${served.url}${path}`, { method, headers, redirect: "manual", ...(body !== undefined ? { body } : {}) });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function login(served: Served, secret: string): Promise<string> {
  const answer = await call(served, "POST", "/login", { form: { token: secret, next: "/" } });
  expect(answer.status).toBe(303);
  return answer.headers.get("set-cookie")!.split(";")[0]!;
}

const formTokenOf = (page: string) => /name="form_token" value="([^"]+)"/.exec(page)![1]!;

async function postBatch(served: Served, secret: string, lines: unknown[]): Promise<{ batchId: string; jobIds: string[] }> {
  const response = await fetch(`${served.url}/v1/batches`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: JSON.stringify(lines) });
  expect(response.status).toBe(201);
  const body = (await response.json()) as { batch_id: string; jobs: Array<{ id: string }> };
  return { batchId: body.batch_id, jobIds: body.jobs.map((job) => job.id) };
}

const dLine = (ref: string, prompt: string) => ({ ref, provider: "d", model: "gen-2-pro", input: { prompt, width: 512, height: 512 } });

for (const kind of servedStores) {
  describe(`the dashboard's batch page and search (${kind.name})`, () => {
    it(`a batch page counts its jobs by state with a progress bar, its spend and its failures with their messages; its cancel ends only the unsent jobs, never one claimed for sending; another tenant is answered 404 and cannot cancel (${kind.name})`, async () => {
      const served = (open = await serveSandbox({ store: kind, engine: false }));
      const store = await served.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      const { batchId, jobIds } = await postBatch(served, alice.secret, ["one", "two", "three", "four", "five"].map((ref) => dLine(ref, `a ${ref}`)));
      // One failed (with its message), one claimed for sending by an engine elsewhere, three never sent.
      await store.transition(jobIds[0]!, { state: "queued" }, "failed", { error: { code: "budget_exhausted", message: "the token's budget has nothing left for it" } }, "failed", Date.now());
      expect((await store.claimForSubmit(jobIds[1]!, "engine-elsewhere", [], Date.now(), 60_000)).kind).toBe("claimed");

      const aliceCookie = await login(served, alice.secret);
      const page = await call(served, "GET", `/batches/${batchId}`, { cookie: aliceCookie });
      expect(page.status).toBe(200);
      expect(page.text).toContain(`<progress id="batch-progress" max="5" value="1">20%</progress>`);
      expect(page.text).toContain("1 of 5 jobs ended (20%)");
      expect(page.text).toMatch(/data-count="queued">.*?<td class="num">3</s);
      expect(page.text).toMatch(/data-count="submitting">.*?<td class="num">1</s);
      expect(page.text).toContain("$0.1500");
      expect(page.text).toContain("<strong>budget_exhausted</strong>: the token&#39;s budget has nothing left for it");
      expect(page.text).toContain("Cancel 3 unsent jobs");

      const bobCookie = await login(served, bob.secret);
      expect((await call(served, "GET", `/batches/${batchId}`, { cookie: bobCookie })).status).toBe(404);
      const bobPage = await call(served, "GET", "/", { cookie: bobCookie });
      const refused = await call(served, "POST", `/batches/${batchId}/cancel`, { cookie: bobCookie, form: { form_token: formTokenOf(bobPage.text) } });
      expect(refused.status).toBe(404);
      expect((await store.batchSummary(batchId)).byState).toEqual({ failed: 1, submitting: 1, queued: 3 });

      const bad = await call(served, "GET", "/batches/not%20an%20id", { cookie: aliceCookie });
      expect(bad.status).toBe(422);
      expect(bad.text).toContain("batch: &quot;not an id&quot; is not a batch id");

      const cancelled = await call(served, "POST", `/batches/${batchId}/cancel`, { cookie: aliceCookie, form: { form_token: formTokenOf(page.text) } });
      expect(cancelled.status).toBe(303);
      expect(cancelled.headers.get("location")).toBe(`/batches/${batchId}?cancelled=3`);
      expect((await store.batchSummary(batchId)).byState).toEqual({ failed: 1, submitting: 1, cancelled: 3 });
      const after = await call(served, "GET", `/batches/${batchId}?cancelled=3`, { cookie: aliceCookie });
      expect(after.text).toContain("Cancelled 3 unsent jobs of this batch");
      expect(after.text).toContain("nothing is left to cancel here");
      // The job page links its batch.
      expect((await call(served, "GET", `/jobs/${jobIds[2]}`, { cookie: aliceCookie })).text).toContain(`<a href="/batches/${batchId}">${batchId}</a>`);
    }, 60_000);

    it(`a batch page's stream (/events?batch=…) draws its panels again when a job of the batch changes in another process (found in the store, not by this engine); another tenant's is 404 (${kind.name})`, async () => {
      const served = (open = await serveSandbox({ store: kind, engine: false }));
      const store = await served.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      const { batchId, jobIds } = await postBatch(served, alice.secret, [dLine("one", "a one"), dLine("two", "a two")]);
      const bobStream = await fetch(`${served.url}/events?batch=${batchId}`, { headers: { authorization: `Bearer ${bob.secret}` } });
      expect(bobStream.status).toBe(404);
      await bobStream.body?.cancel();
      const controller = new AbortController();
      const stream = await fetch(`${served.url}/events?batch=${batchId}&since=${Date.now()}`, { headers: { authorization: `Bearer ${alice.secret}` }, signal: controller.signal });
      expect(stream.status).toBe(200);
      const reader = stream.body!.getReader();
      // Another process (a worker, `mediagate cancel`) ends a job: written to the store, no event of this server's engine.
      await store.transition(jobIds[0]!, { state: "queued" }, "cancelled", {}, "cancelled elsewhere", Date.now());
      let text = "";
      while (!/event: panels\ndata: .*1 of 2 jobs ended/.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      controller.abort();
      const panels = JSON.parse(/event: panels\ndata: (.*)\n/.exec(text)![1]!) as Record<string, string>;
      expect(Object.keys(panels).sort()).toEqual(["batch-cancel", "batch-failures", "batch-progress", "batch-spend"]);
      expect(panels["batch-progress"]).toContain('<progress id="batch-progress" max="2" value="1">50%</progress>');
      expect(panels["batch-cancel"]).toContain("Cancel 1 unsent job");
    }, 60_000);

    it(`the search by prompt text finds the session's own jobs whose prompt holds it (not another field, not another tenant's), says it reads the newest 2,000 only, and refuses a text too long in one sentence naming q (${kind.name})`, async () => {
      const served = (open = await serveSandbox({ store: kind, engine: false }));
      const store = await served.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      await postBatch(served, alice.secret, [dLine("lh", "A Lighthouse at dusk"), dLine("boat", "a boat at 512 knots"), dLine("kite", "a kite")]);
      await postBatch(served, bob.secret, [dLine("bob-lh", "a lighthouse of bob")]);
      const cookie = await login(served, alice.secret);
      const found = await call(served, "GET", "/?q=lighthouse", { cookie });
      expect(found.status).toBe(200);
      const refs = [...found.text.matchAll(/<td data-label="Ref"><a href="[^"]+">([^<]+)<\/a>/g)].map((match) => match[1]);
      expect(refs).toEqual(["lh"]);
      expect(found.text).toContain("Prompts are searched among your newest 2,000 jobs only");
      // 512 is in every request's width: only the prompt that holds it is found.
      const byNumber = [...(await call(served, "GET", "/?q=512", { cookie })).text.matchAll(/<td data-label="Ref"><a href="[^"]+">([^<]+)<\/a>/g)].map((match) => match[1]);
      expect(byNumber).toEqual(["boat"]);
      const tooLong = await call(served, "GET", `/?q=${"x".repeat(PROMPT_SEARCH_MAX_CHARS + 1)}`, { cookie });
      expect(tooLong.text).toContain(`q: is ${PROMPT_SEARCH_MAX_CHARS + 1} characters long`);
      // Not yet rendered: durations are dashes, and there is no thumbnail yet.
      expect(found.text).toContain('title="waiting · rendering · capturing">— · — · —</span>');
    }, 60_000);
  });
}

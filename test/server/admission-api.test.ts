import { afterEach, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import { serveSandbox, servedStores, type Served, type ServedStore } from "../helpers/dashboard.js";

/** A D image of 512×512 on gen-2-pro: $0.03 on D's pricing page (its first megapixel). */
const image = (ref?: string) => ({ ...(ref ? { ref } : {}), provider: "d", model: "gen-2-pro", input: { prompt: `an image ${ref ?? ""}`, width: 512, height: 512 } });

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Answer {
  status: number;
  body: any;
}

async function serve(store: ServedStore, engine: boolean): Promise<Served & { post(path: string, token: string, body: unknown, headers?: Record<string, string>): Promise<Answer>; get(path: string, token: string): Promise<Answer> }> {
  const served = await serveSandbox({ store, engine, emulators: { d: { renderTimeMs: { minMs: 100, maxMs: 200 } } } });
  cleanups.push(() => served.close());
  const call = async (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const response = await fetch(`${served.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: await response.json() };
  };
  return { ...served, post: (path, token, body, headers) => call("POST", path, token, body, headers), get: (path, token) => call("GET", path, token) };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let tries = 0; tries < 400; tries++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

for (const kind of servedStores) {
  describe(`mediagate serve: admission is atomic and retries are safe (real HTTP, ${kind.name})`, () => {
    it("API: a token with a $0.09 budget, 50 concurrent POST /v1/jobs of $0.03: exactly 3 are 201 and the 47 others 402 naming the token's budget and what it has left (no CLI flag); the 3 run to the end; the spend's estimate is $0.09", async () => {
      const api = await serve(kind, true);
      const token = await createToken(await api.runtime.store(), { name: "alice", budgetMicroUsd: 90_000, now: Date.now() });
      const answers = await Promise.all(Array.from({ length: 50 }, (_, index) => api.post("/v1/jobs", token.secret, image(`c-${index}`))));
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 201), JSON.stringify(answers.find((answer) => answer.status !== 201 && answer.status !== 402)?.body ?? null)).toHaveLength(3);
      expect(statuses.filter((status) => status === 402)).toHaveLength(47);
      const refusal = answers.find((answer) => answer.status === 402)!.body.error;
      expect(refusal.code).toBe("over_budget");
      expect(refusal.message).toContain("token alice's budget of $0.0900");
      expect(refusal.message).toContain("has left ($0.0000");
      expect(refusal.message).not.toMatch(/--budget-usd|MEDIAGATE_BUDGET_USD|command/);
      for (const created of answers.filter((answer) => answer.status === 201)) {
        await until(() => api.get(`/v1/jobs/${created.body.id}`, token.secret), (answer) => answer.body.state === "succeeded", "an admitted job to succeed");
      }
      const spend = await api.get("/v1/spend", token.secret);
      expect(spend.body.estimated_micro_usd).toBe(90_000);
      expect((await api.get("/v1/jobs?limit=200", token.secret)).body.jobs).toHaveLength(3);
    });

    it("API: 10 concurrent two-line batches under a $0.09 budget: one is 201, nine 402; nothing of theirs is stored", async () => {
      const api = await serve(kind, false);
      const token = await createToken(await api.runtime.store(), { name: "bob", budgetMicroUsd: 90_000, now: Date.now() });
      const answers = await Promise.all(Array.from({ length: 10 }, (_, index) => api.post("/v1/batches", token.secret, [image(`b${index}-1`), image(`b${index}-2`)])));
      expect(answers.map((answer) => answer.status).sort()).toEqual([201, 402, 402, 402, 402, 402, 402, 402, 402, 402]);
      expect((await api.get("/v1/jobs?limit=200", token.secret)).body.jobs).toHaveLength(2);
    });

    it("API: Idempotency-Key: 20 concurrent POSTs with one key and no ref make one job, every answer 201 with its id; the same key with another body is 422 naming the key; the same key under another token is that token's own", async () => {
      const api = await serve(kind, false);
      const store = await api.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      const headers = { "idempotency-key": "order-7431" };
      const answers = await Promise.all(Array.from({ length: 20 }, () => api.post("/v1/jobs", alice.secret, image(), headers)));
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(201));
      expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
      expect((await api.get("/v1/jobs", alice.secret)).body.jobs).toHaveLength(1);
      // The same request with its keys in another order is the same request.
      const reordered = await api.post("/v1/jobs", alice.secret, { input: image().input, model: "gen-2-pro", provider: "d" }, headers);
      expect(reordered).toMatchObject({ status: 201, body: { id: answers[0]!.body.id } });
      const other = await api.post("/v1/jobs", alice.secret, image("another"), headers);
      expect(other.status).toBe(422);
      expect(other.body.error).toMatchObject({ code: "idempotency_key_reused", field: "Idempotency-Key" });
      expect(other.body.error.message).toContain("order-7431");
      const bobs = await api.post("/v1/jobs", bob.secret, image(), headers);
      expect(bobs.status).toBe(201);
      expect(bobs.body.id).not.toBe(answers[0]!.body.id);
      const bad = await api.post("/v1/jobs", alice.secret, image(), { "idempotency-key": "has space" });
      expect(bad.status).toBe(422);
      expect(bad.body.error.field).toBe("Idempotency-Key");
    });

    it("API: a batch posted again once its jobs ran answers them as they are now, outputs included, under the id of the batch that stored them (200), which GET /v1/batches/{id} resolves; so does a batch retried under its Idempotency-Key", async () => {
      const api = await serve(kind, true);
      const token = await createToken(await api.runtime.store(), { name: "carol", now: Date.now() });
      const lines = [image("r-1"), image("r-2")];
      const first = await api.post("/v1/batches", token.secret, lines, { "idempotency-key": "batch-1" });
      expect(first.status).toBe(201);
      for (const job of first.body.jobs) await until(() => api.get(`/v1/jobs/${job.id}`, token.secret), (answer) => answer.body.state === "succeeded", "the batch's jobs to succeed");
      for (const again of [await api.post("/v1/batches", token.secret, lines), await api.post("/v1/batches", token.secret, lines, { "idempotency-key": "batch-1" })]) {
        expect(again.body.batch_id).toBe(first.body.batch_id);
        expect(again.body.jobs.map((job: { state: string }) => job.state)).toEqual(["succeeded", "succeeded"]);
        for (const job of again.body.jobs) expect(job.outputs).toHaveLength(1);
      }
      // A subset of the first batch's lines is the same jobs, and answered under that batch.
      const part = await api.post("/v1/batches", token.secret, [lines[0]]);
      expect(part).toMatchObject({ status: 200, body: { batch_id: first.body.batch_id, created: 0 } });
      expect((await api.get(`/v1/batches/${first.body.batch_id}`, token.secret)).body).toMatchObject({ jobs: 2, by_state: { succeeded: 2 } });
    });
  });
}

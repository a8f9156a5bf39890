import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import type { Job } from "../../src/core/job.js";
import { serveSandbox, servedStores, type Served } from "../helpers/dashboard.js";
import { until } from "../helpers/until.js";

/**
 * Isolation by construction, checked by table: every route the OpenAPI
 * document lists has an entry here that, with Alice's job (succeeded, with
 * its output), her failed job, her queued job and her batch in the store,
 * asks as Bob for what is Alice's and checks he gets a 404 or an answer
 * scoped to his own jobs. A route added to the API without an entry here
 * fails the first test.
 */

interface World {
  served: Served;
  alice: string;
  bob: string;
  admin: string;
  done: Job;
  failed: Job;
  queued: Job;
  batchId: string;
  /** Alice's video (OpenAI's shape), queued. */
  video: Job;
}

interface Answer {
  status: number;
  body: any;
}

async function call(world: World, method: string, path: string, token: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${world.served.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (response.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text };
}

/** Bob asks for images and goes away once his job is stored (the engine is stopped: it would be held ten minutes); the job made is his, none of Alice's. */
async function imagesMadeByBob(world: World, path: string, body: FormData | string): Promise<void> {
  const before = (await call(world, "GET", "/v1/jobs?ref_prefix=openai-image-", world.bob)).body.jobs.length;
  const leaving = new AbortController();
  const sent = fetch(`${world.served.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${world.bob}`, ...(typeof body === "string" ? { "content-type": "application/json" } : {}) },
    body,
    signal: leaving.signal,
  }).catch(() => undefined);
  const store = await world.served.runtime.store();
  await until(async () => (await call(world, "GET", "/v1/jobs?ref_prefix=openai-image-", world.bob)).body.jobs.length > before, "Bob's image job to be stored");
  leaving.abort();
  await sent;
  const [mine] = (await call(world, "GET", "/v1/jobs?ref_prefix=openai-image-&limit=1", world.bob)).body.jobs;
  expect((await store.getJob(mine.id))!.tenant).not.toBe(world.done.tenant);
  expect((await call(world, "GET", `/v1/jobs/${mine.id}`, world.alice)).status).toBe(404);
}

const video = { model: "c/v6", prompt: "isolation", seconds: "5", size: "1280x720" };

const image = (ref: string) => ({ ref, provider: "d", model: "gen-2-pro", input: { prompt: `isolation ${ref}`, width: 512, height: 512 } });

/** Nothing of Alice's jobs in an answer: none of their ids, refs or her token's name. */
function holdsNothingOf(world: World, answer: Answer): void {
  const text = JSON.stringify(answer.body);
  for (const job of [world.done, world.failed, world.queued]) {
    expect(text, `${job.id} in ${text.slice(0, 300)}`).not.toContain(job.id);
    expect(text).not.toContain(job.ref);
  }
  expect(text).not.toContain(world.batchId);
  expect(text).not.toContain("alice");
}

/** What Bob gets of each route, with Alice's things in the store. Keys are "METHOD /path" as the OpenAPI document writes them. */
const ISOLATION: Record<string, (world: World) => Promise<void>> = {
  "POST /v1/jobs": async (world) => {
    // Alice's ref is Bob's to use: his own job, and nothing said of hers.
    const answer = await call(world, "POST", "/v1/jobs", world.bob, image(world.done.ref));
    expect(answer.status).toBe(201);
    expect(answer.body.id).not.toBe(world.done.id);
    holdsNothingOf(world, { status: 201, body: { ...answer.body, ref: "" } });
  },
  "GET /v1/jobs": async (world) => {
    for (const query of ["", `?ref=${world.done.ref}`, `?ref_prefix=alice`, `?batch=${world.batchId}`, "?state=succeeded,failed,queued", "?provider=d"]) {
      const answer = await call(world, "GET", `/v1/jobs${query}`, world.bob);
      expect(answer.status).toBe(200);
      expect(answer.body.jobs.every((job: { id: string }) => ![world.done.id, world.failed.id, world.queued.id].includes(job.id)), query).toBe(true);
    }
    // The admin sees them.
    expect((await call(world, "GET", "/v1/jobs?limit=200", world.admin)).body.jobs.map((job: { id: string }) => job.id)).toEqual(expect.arrayContaining([world.done.id, world.failed.id, world.queued.id]));
  },
  "GET /v1/jobs/{id}": async (world) => {
    for (const job of [world.done, world.failed, world.queued]) expect((await call(world, "GET", `/v1/jobs/${job.id}`, world.bob)).status).toBe(404);
    expect((await call(world, "GET", `/v1/jobs/${world.done.id}`, world.alice)).status).toBe(200);
  },
  "GET /v1/jobs/{id}/events": async (world) => {
    expect((await call(world, "GET", `/v1/jobs/${world.done.id}/events`, world.bob)).status).toBe(404);
    expect((await call(world, "GET", `/v1/jobs/${world.done.id}/events`, world.alice)).status).toBe(200);
  },
  "GET /v1/jobs/{id}/outputs/{n}": async (world) => {
    expect((await call(world, "GET", `/v1/jobs/${world.done.id}/outputs/0`, world.bob)).status).toBe(404);
    expect((await call(world, "GET", `/v1/jobs/${world.done.id}/outputs/0`, world.alice)).status).toBe(200);
  },
  "POST /v1/jobs/{id}/cancel": async (world) => {
    expect((await call(world, "POST", `/v1/jobs/${world.queued.id}/cancel`, world.bob)).status).toBe(404);
    expect((await call(world, "GET", `/v1/jobs/${world.queued.id}`, world.alice)).body.state).toBe("queued");
  },
  "POST /v1/quote": async (world) => {
    // Reads no tenant's data: the same answer for both.
    const bobs = await call(world, "POST", "/v1/quote", world.bob, image("q"));
    expect(bobs.status).toBe(200);
    expect(bobs.body).toEqual((await call(world, "POST", "/v1/quote", world.alice, image("q"))).body);
  },
  "POST /v1/plan": async (world) => {
    const bobs = await call(world, "POST", "/v1/plan", world.bob, [image("p-1"), image("p-2")]);
    expect(bobs.status).toBe(200);
    expect(bobs.body).toEqual((await call(world, "POST", "/v1/plan", world.alice, [image("p-1"), image("p-2")])).body);
  },
  "POST /v1/batches": async (world) => {
    // Alice's refs in Bob's batch are Bob's own jobs: hers are neither answered, nor taken over, nor refused as taken.
    const answer = await call(world, "POST", "/v1/batches", world.bob, [image(world.queued.ref), image(world.failed.ref)]);
    expect(answer.status).toBe(201);
    expect(answer.body.created).toBe(2);
    expect(answer.body.batch_id).not.toBe(world.batchId);
    holdsNothingOf(world, { status: 201, body: answer.body.jobs.map((job: { id: string; batch_id: string }) => ({ id: job.id, batch_id: job.batch_id })) });
    expect((await call(world, "GET", `/v1/jobs/${world.queued.id}`, world.alice)).body).toMatchObject({ state: "queued", batch_id: world.batchId });
  },
  "GET /v1/batches/{id}": async (world) => {
    expect((await call(world, "GET", `/v1/batches/${world.batchId}`, world.bob)).status).toBe(404);
    expect((await call(world, "GET", `/v1/batches/${world.batchId}`, world.alice)).status).toBe(200);
  },
  "POST /v1/batches/{id}/cancel": async (world) => {
    // Answered as a batch Bob has no job in (its message names only the id he sent).
    expect((await call(world, "POST", `/v1/batches/${world.batchId}/cancel`, world.bob)).status).toBe(404);
    // Alice's unsent job is untouched.
    expect((await call(world, "GET", `/v1/jobs/${world.queued.id}`, world.alice)).body.state).toBe("queued");
  },
  "GET /v1/providers": async (world) => {
    const answer = await call(world, "GET", "/v1/providers", world.bob);
    expect(answer.status).toBe(200);
    holdsNothingOf(world, answer);
    // Alice sees her own failed job among D's recent errors.
    const d = (await call(world, "GET", "/v1/providers", world.alice)).body.providers.find((provider: { id: string }) => provider.id === "d");
    expect(d.recent_errors.map((error: { job_id: string }) => error.job_id)).toContain(world.failed.id);
  },
  "GET /v1/spend": async (world) => {
    const answer = await call(world, "GET", "/v1/spend", world.bob);
    expect(answer.status).toBe(200);
    holdsNothingOf(world, answer);
    expect(answer.body.settled_micro_usd).toBe(0);
    const alices = await call(world, "GET", "/v1/spend", world.alice);
    expect(alices.body.settled_micro_usd).toBeGreaterThan(0);
  },
  "GET /v1/models": async (world) => {
    // Reads no tenant's data: the same answer for both.
    const bobs = await call(world, "GET", "/v1/models", world.bob);
    expect(bobs.status).toBe(200);
    expect(bobs.body).toEqual((await call(world, "GET", "/v1/models", world.alice)).body);
  },
  "POST /v1/images/generations": async (world) => {
    await imagesMadeByBob(world, "/v1/images/generations", JSON.stringify({ model: "d/gen-2-pro", prompt: "bob's", size: "512x512" }));
  },
  "POST /v1/images/edits": async (world) => {
    const store = await world.served.runtime.store();
    const [output] = await store.outputs(world.done.id);
    const form = new FormData();
    form.append("model", "d/gen-2-pro");
    form.append("prompt", "bob's edit");
    form.append("size", "512x512");
    form.append("image", new Blob([await readFile(output!.path)], { type: "image/png" }), "in.png");
    await imagesMadeByBob(world, "/v1/images/edits", form);
  },
  "POST /v1/videos": async (world) => {
    const answer = await call(world, "POST", "/v1/videos", world.bob, video);
    expect(answer.status).toBe(200);
    expect(answer.body.id).not.toBe(world.video.id);
    expect((await call(world, "GET", `/v1/videos/${answer.body.id}`, world.alice)).status).toBe(404);
  },
  "GET /v1/videos": async (world) => {
    const bobs = await call(world, "GET", "/v1/videos?limit=100", world.bob);
    expect(bobs.status).toBe(200);
    expect(bobs.body.data.map((each: { id: string }) => each.id)).not.toContain(world.video.id);
    // Alice's video as a cursor is not Bob's to page from.
    expect((await call(world, "GET", `/v1/videos?after=${world.video.id}`, world.bob)).status).toBe(404);
    expect((await call(world, "GET", "/v1/videos", world.alice)).body.data.map((each: { id: string }) => each.id)).toContain(world.video.id);
  },
  "GET /v1/videos/{id}": async (world) => {
    for (const id of [world.video.id, world.done.id]) expect((await call(world, "GET", `/v1/videos/${id}`, world.bob)).status).toBe(404);
    expect((await call(world, "GET", `/v1/videos/${world.video.id}`, world.alice)).status).toBe(200);
  },
  "DELETE /v1/videos/{id}": async (world) => {
    expect((await call(world, "DELETE", `/v1/videos/${world.video.id}`, world.bob)).status).toBe(404);
    expect((await call(world, "GET", `/v1/jobs/${world.video.id}`, world.alice)).body.state).toBe("queued");
  },
  "GET /v1/videos/{id}/content": async (world) => {
    // Not found for Bob; not ready for Alice (her video is queued): whether it exists is not told to Bob.
    const bobs = await call(world, "GET", `/v1/videos/${world.video.id}/content`, world.bob);
    expect(bobs.status).toBe(404);
    expect(bobs.body.error.code).toBe("not_found");
    expect((await call(world, "GET", `/v1/videos/${world.video.id}/content`, world.alice)).body.error.code).toBe("video_not_ready");
  },
};

for (const kind of servedStores) {
  describe(`isolation between tenants, route by route (${kind.name})`, () => {
    let world: World;

    beforeAll(async () => {
      const served = await serveSandbox({ store: kind, emulators: { d: { renderTimeMs: { minMs: 100, maxMs: 200 } } } });
      const store = await served.runtime.store();
      const now = Date.now();
      const [alice, bob, admin] = [await createToken(store, { name: "alice", now }), await createToken(store, { name: "bob", now }), await createToken(store, { name: "ops", admin: true, now })];
      const partial: Omit<World, "done" | "failed" | "queued" | "batchId" | "video"> = { served, alice: alice.secret, bob: bob.secret, admin: admin.secret };
      const shell = partial as World;
      const done = await call(shell, "POST", "/v1/jobs", alice.secret, image("alice-done"));
      for (let tries = 0; tries < 400 && (await call(shell, "GET", `/v1/jobs/${done.body.id}`, alice.secret)).body.state !== "succeeded"; tries++) await new Promise((resolve) => setTimeout(resolve, 50));
      // The engine stops before the batch: its two jobs stay where the test puts them, one ended with an error
      // (shown among D's recent errors), one queued (so a cancel could reach it).
      await (await served.runtime.engine()).stop();
      const batch = await call(shell, "POST", "/v1/batches", alice.secret, [image("alice-failed"), image("alice-queued")]);
      const [failedId, queuedId] = batch.body.jobs.map((job: { id: string }) => job.id) as [string, string];
      const failed = await store.transition(failedId, { state: "queued" }, "failed", { error: { code: "insufficient_credits", message: "D answered 402" } }, "refused", Date.now());
      const made = await call(shell, "POST", "/v1/videos", alice.secret, video);
      world = { ...partial, done: (await store.getJob(done.body.id))!, failed: failed!, queued: (await store.getJob(queuedId))!, batchId: batch.body.batch_id, video: (await store.getJob(made.body.id))! };
      expect(world.done.state).toBe("succeeded");
    });

    afterAll(async () => {
      await world?.served.close();
    });

    it("every route of /openapi.json has an entry in the isolation table, and every entry is a route", async () => {
      const document = (await (await fetch(`${world.served.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
      const routes = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
      expect(routes.filter((route) => !(route in ISOLATION)), "routes without an isolation entry").toEqual([]);
      expect(Object.keys(ISOLATION).filter((route) => !routes.includes(route)), "entries that are not routes").toEqual([]);
    });

    for (const route of Object.keys(ISOLATION)) {
      it(`${route}: another token gets a 404 or an answer of its own jobs only`, async () => {
        await ISOLATION[route]!(world);
      });
    }
  });
}

import { createHash } from "node:crypto";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import { serveSandbox, servedStores, sqliteServed, type Served } from "../helpers/dashboard.js";
import { untilJob } from "../helpers/until.js";
import { LOCAL_CALLER } from "../../src/app/caller.js";
import { imageRequestOf, ImagesNotMadeError, makeImages } from "../../src/app/openai.js";
import { IMAGE_CALLS_HELD_PER_TENANT } from "../../src/server/openai/index.js";

/**
 * The official `openai` package, unchanged but for `baseURL` and `apiKey`
 * (a mediagate token), against `mediagate serve`'s server and the sandbox
 * (issue 38): images, edits, videos, models, and its typed errors.
 */

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** A client as a team would make one: two settings changed. */
function client(served: Served, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${served.url}/v1`, apiKey, maxRetries: 0 });
}

/** mediagate's own view of a job, to compare with what the OpenAI shapes said. */
async function job(served: Served, secret: string, id: string): Promise<any> {
  const response = await fetch(`${served.url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${secret}` } });
  expect(response.status).toBe(200);
  return response.json() as Promise<any>;
}

/** A video retrieved until it ends, with every progress seen: each retrieve is a request answered from the store, bounded by a count, never by time. */
async function followed(openai: OpenAI, created: OpenAI.Videos.Video): Promise<{ video: OpenAI.Videos.Video; seen: number[] }> {
  const seen: number[] = [];
  let video = created;
  for (let look = 0; look < 20_000 && video.status !== "completed" && video.status !== "failed"; look++) {
    video = await openai.videos.retrieve(created.id);
    seen.push(video.progress);
  }
  return { video, seen };
}

for (const kind of servedStores) {
  describe(`OpenAI SDK against serve and the sandbox (${kind.name})`, () => {
    let served: Served;
    let alice: string;
    let bob: string;
    let thrifty: string;

    beforeAll(async () => {
      served = await serveSandbox({ store: kind });
      const store = await served.runtime.store();
      alice = (await createToken(store, { name: "alice", now: Date.now() })).secret;
      bob = (await createToken(store, { name: "bob", now: Date.now() })).secret;
      // Two D images of 512×512 on gen-2-pro are $0.06: more than this token has.
      thrifty = (await createToken(store, { name: "thrifty", budgetMicroUsd: 50_000, now: Date.now() })).secret;
    }, 60_000);

    afterAll(async () => served?.close());

    it("models.list: each listed target of a configured provider and the route models, in OpenAI's shape", async () => {
      const ids: string[] = [];
      for await (const model of client(served, alice).models.list()) {
        expect(model.object).toBe("model");
        ids.push(model.id);
      }
      expect(ids).toEqual(expect.arrayContaining(["d/gen-2-pro", "c/v6", "e/v3", "route:price", "route:time"]));
    });

    it("images.generate, b64_json, n: 2: two jobs, each image the bytes the job saved", async () => {
      const answer = await client(served, alice).images.generate({ model: "d/gen-2-pro", prompt: "a red fox in snow", n: 2, size: "512x512" as never, response_format: "b64_json" });
      expect(answer.data).toHaveLength(2);
      const images = answer.data!.map((entry) => Buffer.from(entry.b64_json!, "base64"));
      for (const image of images) expect(image.subarray(0, 8)).toEqual(PNG_SIGNATURE);
      expect(typeof answer.created).toBe("number");
      // Two ordinary jobs of alice's, whose saved outputs are these bytes.
      const listed = (await (await fetch(`${served.url}/v1/jobs?ref_prefix=openai-image-`, { headers: { authorization: `Bearer ${alice}` } })).json()) as any;
      const saved = listed.jobs.flatMap((each: any) => each.outputs.map((output: any) => output.sha256));
      for (const image of images) expect(saved).toContain(sha256(image));
      expect(listed.jobs.every((each: any) => each.state === "succeeded" && each.target === "d/gen-2-pro")).toBe(true);
    });

    it("images.generate, url: an absolute address of mediagate's own output route, read with the token", async () => {
      const answer = await client(served, alice).images.generate({ model: "d/gen-2-pro", prompt: "a lighthouse", size: "512x512" as never, response_format: "url" });
      const url = answer.data![0]!.url!;
      expect(url.startsWith(`${served.url}/v1/jobs/`)).toBe(true);
      expect(url).toMatch(/\/outputs\/0$/);
      const response = await fetch(url, { headers: { authorization: `Bearer ${alice}` } });
      expect(response.status).toBe(200);
      expect(Buffer.from(await response.arrayBuffer()).subarray(0, 8)).toEqual(PNG_SIGNATURE);
      // Another token is told nothing of it.
      expect((await fetch(url, { headers: { authorization: `Bearer ${bob}` } })).status).toBe(404);
    });

    it("images.edit with an uploaded PNG: the target is sent it as a reference image", async () => {
      const openai = client(served, alice);
      const source = await openai.images.generate({ model: "d/gen-2-pro", prompt: "a plain square", size: "512x512" as never });
      const png = Buffer.from(source.data![0]!.b64_json!, "base64");
      const answer = await openai.images.edit({ model: "d/gen-2-pro", image: await toFile(png, "square.png", { type: "image/png" }), prompt: "the square, in red", size: "512x512" as never });
      expect(Buffer.from(answer.data![0]!.b64_json!, "base64").subarray(0, 8)).toEqual(PNG_SIGNATURE);
      const listed = (await (await fetch(`${served.url}/v1/jobs?ref_prefix=openai-image-&limit=1`, { headers: { authorization: `Bearer ${alice}` } })).json()) as any;
      const request = (await job(served, alice, listed.jobs[0].id)).request;
      expect(JSON.stringify(request)).toContain(sha256(png));
    });

    it("images.edit: a mask is refused by name (400), no target honours one", async () => {
      const png = Buffer.concat([PNG_SIGNATURE, Buffer.alloc(64)]);
      const refused = await client(served, alice)
        .images.edit({ model: "d/gen-2-pro", image: await toFile(png, "a.png"), mask: await toFile(png, "mask.png"), prompt: "x" })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("mask");
    });

    it("videos.create → retrieve until completed, progress never falling and ending at 100 → downloadContent is the MP4 whose sha256 the job records", async () => {
      const openai = client(served, alice);
      const created = await openai.videos.create({ model: "c/v6", prompt: "waves at dusk", seconds: "5" as never, size: "1280x720" });
      expect(created).toMatchObject({ object: "video", status: "queued", progress: 0, model: "c/v6", seconds: "5", size: "1280x720", error: null, completed_at: null });
      const { video, seen } = await followed(openai, created);
      expect(video.status).toBe("completed");
      expect(seen.at(-1)).toBe(100);
      for (let index = 1; index < seen.length; index++) expect(seen[index]!).toBeGreaterThanOrEqual(seen[index - 1]!);
      expect(video.completed_at).toBeGreaterThanOrEqual(video.created_at);
      // The next video of the model runs along a learned pace: its progress rises as well, never falling.
      const next = await followed(openai, await openai.videos.create({ model: "c/v6", prompt: "tide at dawn", seconds: "5" as never, size: "1280x720" }));
      expect(next.video.status).toBe("completed");
      for (let index = 1; index < next.seen.length; index++) expect(next.seen[index]!).toBeGreaterThanOrEqual(next.seen[index - 1]!);
      const content = Buffer.from(await (await openai.videos.downloadContent(created.id)).arrayBuffer());
      const recorded = await job(served, alice, created.id);
      expect(recorded.state).toBe("succeeded");
      expect(sha256(content)).toBe(recorded.outputs[0].sha256);
      expect(recorded.outputs[0].content_type).toBe("video/mp4");
      // An ordinary job of alice's: in her jobs and her spend, under her token.
      const spend = (await (await fetch(`${served.url}/v1/spend`, { headers: { authorization: `Bearer ${alice}` } })).json()) as any;
      expect(spend.lines.find((line: any) => line.provider === "c")).toMatchObject({ token: "alice" });
      // And on her dashboard (a row of the job list, and its own page), not on bob's.
      const page = (secret: string, path: string) => fetch(`${served.url}${path}`, { headers: { authorization: `Bearer ${secret}` } });
      expect(await (await page(alice, "/")).text()).toContain(`data-job="${created.id}"`);
      expect((await page(alice, `/jobs/${created.id}`)).status).toBe(200);
      expect(await (await page(bob, "/")).text()).not.toContain(created.id);
      // A range, as a player seeking asks it.
      const range = await fetch(`${served.url}/v1/videos/${created.id}/content`, { headers: { authorization: `Bearer ${alice}`, range: "bytes=0-9" } });
      expect(range.status).toBe(206);
      expect(Buffer.from(await range.arrayBuffer())).toEqual(content.subarray(0, 10));

      const listed: string[] = [];
      for await (const each of openai.videos.list({ limit: 1 })) listed.push(each.id);
      expect(listed).toContain(created.id);
      // Another tenant's video is not found, however it is asked for.
      const stranger = client(served, bob);
      await expect(stranger.videos.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      await expect(stranger.videos.downloadContent(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      await expect(stranger.videos.delete(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      expect((await stranger.videos.list()).data).toEqual([]);
      // An ended video is kept: its spend and outputs are records.
      expect(await openai.videos.delete(created.id)).toEqual({ id: created.id, object: "video.deleted", deleted: false });
    });

    it("model route:price: a common request over every listed image target, sent to the cheapest eligible one", async () => {
      const answer = await client(served, alice).images.generate({ model: "route:price", prompt: "a kite", size: "512x512" as never });
      expect(answer.data).toHaveLength(1);
      const listed = (await (await fetch(`${served.url}/v1/jobs?ref_prefix=openai-image-&limit=1`, { headers: { authorization: `Bearer ${alice}` } })).json()) as any;
      const made = await job(served, alice, listed.jobs[0].id);
      expect(made.state).toBe("succeeded");
      // E's models honour no size: ineligible. The route's next targets are the other eligible ones.
      expect(made.target).toMatch(/^d\//);
      expect(made.request.route.next.length).toBeGreaterThan(0);
      expect(made.request.route.next.every((name: string) => name.startsWith("d/"))).toBe(true);
    });

    it("a client that goes away while its images are made loses nothing: the jobs are made and kept", async () => {
      const openai = client(served, alice);
      const engine = await served.runtime.engine();
      const leaving = new AbortController();
      const admitted: string[] = [];
      // The call is given up as soon as its jobs are stored (the engine reports each as it moves).
      const onJob = (moved: { id: string; ref: string }) => {
        if (moved.ref.startsWith("openai-image-") && !admitted.includes(moved.id)) admitted.push(moved.id);
        if (admitted.length > 0) leaving.abort();
      };
      engine.on("job", onJob);
      const since = Date.now();
      const given = await openai.images.generate({ model: "d/gen-2-pro", prompt: "a departing train", size: "512x512" as never }, { signal: leaving.signal }).catch((error: unknown) => error);
      engine.off("job", onJob);
      expect(given).toBeInstanceOf(OpenAI.APIUserAbortError);
      const store = await served.runtime.store();
      const [mine] = (await store.listJobs({ refPrefix: "openai-image-", createdAfter: since }));
      expect(mine).toBeDefined();
      const ended = await untilJob(engine, store, mine!.id, (each) => each.state === "succeeded");
      expect((await store.outputs(ended.id)).length).toBe(1);
    });

    it("a read-only token is the SDK's PermissionDeniedError on a call that makes jobs, and may read", async () => {
      const reader = (await createToken(await served.runtime.store(), { name: "reader", readOnly: true, now: Date.now() })).secret;
      await expect(client(served, reader).images.generate({ model: "d/gen-2-pro", prompt: "x" })).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
      expect((await client(served, reader).videos.list()).data).toEqual([]);
    });

    it("a field no target honours is refused by name (400, param), a value that asks nothing is taken, n above 10 is refused", async () => {
      const openai = client(served, alice);
      const refusal = async (call: Promise<unknown>) => (await call.catch((error: unknown) => error)) as InstanceType<typeof OpenAI.BadRequestError>;
      const quality = await refusal(openai.images.generate({ model: "d/gen-2-pro", prompt: "x", quality: "hd" }));
      expect(quality).toBeInstanceOf(OpenAI.BadRequestError);
      expect(quality.param).toBe("quality");
      expect(quality.type).toBe("invalid_request_error");
      const many = await refusal(openai.images.generate({ model: "d/gen-2-pro", prompt: "x", n: 11 }));
      expect(many).toBeInstanceOf(OpenAI.BadRequestError);
      expect(many.param).toBe("n");
      const video = await refusal(openai.images.generate({ model: "c/v6", prompt: "x" }));
      expect(video).toBeInstanceOf(OpenAI.BadRequestError);
      expect(video.param).toBe("model");
      const made = await openai.images.generate({ model: "d/gen-2-pro", prompt: "a pond", size: "512x512" as never, quality: "auto", background: "auto", moderation: "auto" });
      expect(made.data).toHaveLength(1);
    });

    it("an Idempotency-Key sent with the call (the SDKs' headers option): a retry is answered with the jobs the first call made, never new ones", async () => {
      const openai = client(served, alice);
      const headers = { "Idempotency-Key": `images-${kind.name}` };
      const first = await openai.images.generate({ model: "d/gen-2-pro", prompt: "once only", size: "512x512" as never }, { headers });
      const again = await openai.images.generate({ model: "d/gen-2-pro", prompt: "once only", size: "512x512" as never }, { headers });
      expect(again.data).toEqual(first.data);
      const listed = (await (await fetch(`${served.url}/v1/jobs?ref_prefix=openai-image-&limit=200`, { headers: { authorization: `Bearer ${alice}` } })).json()) as any;
      expect(listed.jobs.filter((each: any) => each.request === undefined && each.outputs.some((output: any) => output.sha256 === sha256(Buffer.from(first.data![0]!.b64_json!, "base64"))))).toHaveLength(1);
      const video = { model: "c/v6", prompt: "once", seconds: "5" as never, size: "1280x720" as const };
      const made = await openai.videos.create(video, { headers: { "Idempotency-Key": `video-${kind.name}` } });
      expect((await openai.videos.create(video, { headers: { "Idempotency-Key": `video-${kind.name}` } })).id).toBe(made.id);
      // The same key with another call is refused, naming it.
      const reused = await openai.videos.create({ ...video, prompt: "another" }, { headers: { "Idempotency-Key": `video-${kind.name}` } }).catch((error: unknown) => error);
      expect(reused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((reused as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("idempotency_key_reused");
    });

    it("a budget refusal is 402 insufficient_quota (not 429, which the SDK retries), and nothing was queued", async () => {
      const refused = await client(served, thrifty)
        .images.generate({ model: "d/gen-2-pro", prompt: "two foxes", n: 2, size: "512x512" as never })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.APIError);
      const error = refused as InstanceType<typeof OpenAI.APIError>;
      expect(error.status).toBe(402);
      expect(error.code).toBe("insufficient_quota");
      expect(error.type).toBe("insufficient_quota");
      expect(error.message).toContain("thrifty");
      const listed = (await (await fetch(`${served.url}/v1/jobs`, { headers: { authorization: `Bearer ${thrifty}` } })).json()) as any;
      expect(listed.jobs).toEqual([]);
    });

    it("an unknown model is the SDK's NotFoundError with code model_not_found, param model", async () => {
      const refused = await client(served, alice)
        .images.generate({ model: "dall-e-3", prompt: "x" })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
      expect((refused as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
      expect((refused as InstanceType<typeof OpenAI.NotFoundError>).param).toBe("model");
      await expect(client(served, alice).videos.create({ model: "sora-2", prompt: "x" })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    });

    it("a wrong key is the SDK's AuthenticationError in OpenAI's shape", async () => {
      const refused = await client(served, "mg_not-a-token").models.list().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((refused as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe("invalid_api_key");
    });
  });
}

describe("OpenAI SDK: videos.delete cancels a video not sent yet", () => {
  let served: Served;
  let alice: string;

  beforeAll(async () => {
    // No engine: what is queued stays queued.
    served = await serveSandbox({ store: sqliteServed, engine: false });
    alice = (await createToken(await served.runtime.store(), { name: "alice", now: Date.now() })).secret;
  }, 60_000);

  afterAll(async () => served?.close());

  it("a token holding 32 image calls open gets 429 rate_limit_exceeded with retry-after for the next (nothing queued), another token does not; a call let go frees its place", async () => {
    const store = await served.runtime.store();
    const carol = await createToken(store, { name: "carol", now: Date.now() });
    const dave = await createToken(store, { name: "dave", now: Date.now() });
    // Each read yields to the event loop first: SQLite's reads answer at once, and a loop of them would keep this
    // process's server from reading the requests it waits for.
    const count = async (tenant: string) => {
      await new Promise((resolve) => setImmediate(resolve));
      return (await store.listJobs({ tenant })).length;
    };
    /** Waits, one store read a step (bounded by a count, never by time), until `tenant` has `jobs` jobs. */
    const untilJobs = async (tenant: string, jobs: number) => {
      for (let look = 0; look < 100_000 && (await count(tenant)) < jobs; look++);
      expect(await count(tenant)).toBe(jobs);
    };
    const hold = (secret: string, prompt: string) => {
      const abort = new AbortController();
      const answered = fetch(`${served.url}/v1/images/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "d/gen-2-pro", prompt, size: "512x512" }),
        signal: abort.signal,
      }).then(
        (response) => response.status,
        () => "let go" as const,
      );
      return { abort: () => abort.abort(), answered };
    };
    const calls = Array.from({ length: IMAGE_CALLS_HELD_PER_TENANT }, (_, index) => hold(carol.secret, `held ${index}`));
    await untilJobs(carol.token.id, IMAGE_CALLS_HELD_PER_TENANT);
    const refused = await client(served, carol.secret).images.generate({ model: "d/gen-2-pro", prompt: "one more", size: "512x512" }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).status).toBe(429);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).code).toBe("rate_limit_exceeded");
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).headers.get("retry-after")).toBe("5");
    expect(await count(carol.token.id)).toBe(IMAGE_CALLS_HELD_PER_TENANT);
    // Another token's call is its own.
    const other = hold(dave.secret, "dave's");
    await untilJobs(dave.token.id, 1);
    other.abort();
    // One of carol's calls let go: its place is free (the next call is held, its job queued), once the server saw it go.
    calls[0]!.abort();
    expect(await calls[0]!.answered).toBe("let go");
    let admitted = false;
    for (let attempt = 0; attempt < 1_000 && !admitted; attempt++) {
      const next = hold(carol.secret, `after ${attempt}`);
      let status: number | "let go" | null = null;
      void next.answered.then((answer) => (status = answer));
      // Until it is answered (429: the server had not seen the other go yet) or its job is queued.
      for (let look = 0; look < 100_000 && status === null && (await count(carol.token.id)) <= IMAGE_CALLS_HELD_PER_TENANT; look++);
      admitted = (await count(carol.token.id)) > IMAGE_CALLS_HELD_PER_TENANT;
      next.abort();
      if (!admitted) expect(await next.answered).toBe(429);
    }
    expect(admitted).toBe(true);
    for (const call of calls) call.abort();
  });

  it("videos.delete of a queued video: deleted, and the job is cancelled, never sent", async () => {
    const openai = client(served, alice);
    const created = await openai.videos.create({ model: "c/v6", prompt: "rain", seconds: "5" as never, size: "1280x720" });
    expect(await openai.videos.delete(created.id)).toEqual({ id: created.id, object: "video.deleted", deleted: true });
    const video = await openai.videos.retrieve(created.id);
    expect(video.status).toBe("failed");
    expect(video.error?.code).toBe("cancelled");
    expect((await job(served, alice, created.id)).state).toBe("cancelled");
  });

  it("videos.list pages newest first by after (a video's id), has_more saying whether more follow", async () => {
    const openai = client(served, alice);
    const made: string[] = [];
    for (const prompt of ["one", "two", "three"]) made.push((await openai.videos.create({ model: "c/v6", prompt, seconds: "5" as never, size: "1280x720" })).id);
    const first = await openai.videos.list({ limit: 2 });
    expect(first.data.map((video) => video.id)).toEqual([made[2], made[1]]);
    expect(first.has_more).toBe(true);
    const all: string[] = [];
    for await (const video of openai.videos.list({ limit: 2 })) all.push(video.id);
    expect(all.slice(0, 3)).toEqual([made[2], made[1], made[0]]);
  });

  it("images held past their bound answer timeout, and their jobs stay queued (the hold is 9.5 minutes on serve, under the SDKs' 10-minute timeout; 100 ms here)", async () => {
    const request = imageRequestOf(served.runtime, { model: "d/gen-2-pro", prompt: "a slow one", size: "512x512" });
    const refused = await makeImages(served.runtime, LOCAL_CALLER, request, 2, { withBytes: false, holdMs: 100 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ImagesNotMadeError);
    expect((refused as ImagesNotMadeError).code).toBe("timeout");
    const jobs = (refused as ImagesNotMadeError).jobs;
    expect(jobs).toHaveLength(2);
    const store = await served.runtime.store();
    for (const each of jobs) expect((await store.getJob(each.id))!.state).toBe("queued");
  });
});

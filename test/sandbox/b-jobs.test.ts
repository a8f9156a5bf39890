import { afterEach, describe, expect, it } from "vitest";
import { wavInfo } from "../../src/sandbox/b/index.js";
import { probeVideo } from "../../src/sandbox/media/video-probe.js";
import { B_KEY, call, IMAGE_TO_VIDEO, readJob, startB, submit, VALID_IMAGE_TO_VIDEO, type BSandbox } from "./b-http.js";

let world: BSandbox | undefined;
afterEach(async () => {
  await world?.sandbox.stop();
  world = undefined;
});

async function download(url: string): Promise<{ status: number; contentType: string | null; bytes: Buffer }> {
  const response = await fetch(url);
  return { status: response.status, contentType: response.headers.get("content-type"), bytes: Buffer.from(await response.arrayBuffer()) };
}

describe("B authentication", () => {
  it("B: an x-vendor-api-key header is not accepted", async () => {
    world = await startB();
    const answer = await call(world, "POST", `/v1/media/${IMAGE_TO_VIDEO}`, { body: VALID_IMAGE_TO_VIDEO, key: null, headers: { "x-vendorx-api-key": B_KEY } });
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe("missing_api_key");
    expect(world.b.jobs).toHaveLength(0);
  });

  it("B: a key is accepted as X-API-Key or as Authorization: Bearer", async () => {
    world = await startB();
    expect((await call(world, "GET", "/billing/balance")).status).toBe(200);
    expect((await call(world, "GET", "/billing/balance", { key: null, headers: { authorization: `Bearer ${B_KEY}` } })).status).toBe(200);
    const wrong = await call(world, "GET", "/billing/balance", { key: "not-a-key" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe("invalid_api_key");
    expect((await call(world, "GET", "/billing/balance", { key: null })).status).toBe(401);
  });
});

describe("B job lifecycle", () => {
  it("B: a job moves queued → running → completed, and the submit answer has billing null", async () => {
    world = await startB();
    const submitted = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ status: "queued", billing: null });
    const id = submitted.body.id as string;
    expect((await readJob(world, id)).body.status).toBe("queued");
    world.advance(1_000);
    expect((await readJob(world, id)).body).toMatchObject({ status: "running", billing: null });
    world.advance(10_000);
    const done = await readJob(world, id);
    expect(done.body.status).toBe("completed");
    expect(done.body.output.media_type).toBe("video");
    expect(done.body.output.video.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/b\/files\//);
    expect(done.body.usage.video_output_tokens).toBeGreaterThan(0);
    expect(done.body.error).toBeUndefined();
  });

  it("B: content answers 409 before completion", async () => {
    world = await startB();
    const { body } = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    const early = await call(world, "GET", `/v1/media/jobs/${body.id}/content`);
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe("job_not_completed");
    world.advance(11_000);
    const content = await call(world, "GET", `/v1/media/jobs/${body.id}/content`);
    expect(content.status).toBe(200);
    const file = await download(content.body.url);
    expect(file.status).toBe(200);
    expect(file.contentType).toBe("video/mp4");
    expect(probeVideo(file.bytes)).toMatchObject({ container: "mp4", codec: "avc1" });
  });

  it("B: audio operations serve a real WAV", async () => {
    world = await startB();
    const { body } = await submit(world, "vendorx/sfx/text-to-audio", { prompt: "a door creaks", duration_s: 3 });
    world.advance(11_000);
    const done = await readJob(world, body.id);
    expect(done.body.output.media_type).toBe("audio");
    expect(done.body.usage).toEqual({ audio_output_seconds: 3 });
    const file = await download(done.body.output.audio.url);
    expect(file.contentType).toBe("audio/wav");
    expect(wavInfo(file.bytes)).toMatchObject({ channels: 1, bitsPerSample: 16, seconds: 1 });
  });

  it("B: a rejected submission answers a job object with status failed and error", async () => {
    world = await startB();
    const refused = await submit(world, IMAGE_TO_VIDEO, { image: "https://x.example/a.png", resolution: "4k", duration_s: 7, extra: true });
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ status: "failed", error: { code: "invalid_request" }, billing: null });
    expect(refused.body.error.message).toContain("resolution");
    expect((await readJob(world, refused.body.id)).body.status).toBe("failed");
  });

  it("B: a prompt longer than the catalog record's maxLength is a rejected submission naming prompt; at the maxLength it is accepted", async () => {
    world = await startB();
    // The record of vendorx/video-2.5/image-to-video gives prompt maxLength 2000 (spec B: caps are in each catalog record).
    const refused = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, prompt: "x".repeat(2_001) });
    expect(refused.body).toMatchObject({ status: "failed", error: { code: "invalid_request" }, billing: null });
    expect(refused.body.error.message).toMatch(/prompt: must NOT have more than 2000 characters/);
    const accepted = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, prompt: "x".repeat(2_000) });
    expect(accepted.body.status).toBe("queued");
  });

  it("B: the HTTP status of a rejected submission is a knob", async () => {
    world = await startB({ rejectedSubmitStatus: 422 });
    const refused = await submit(world, IMAGE_TO_VIDEO, {});
    expect(refused.status).toBe(422);
    expect(refused.body.status).toBe("failed");
  });

  it("B: a job can fail during generation (knob), with a stable error code", async () => {
    world = await startB();
    world.b.failNextJobs(1);
    const { body } = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    world.advance(11_000);
    const failed = await readJob(world, body.id);
    expect(failed.body).toMatchObject({ status: "failed", error: { code: "generation_failed" } });
    expect(failed.body.output).toBeUndefined();
    const content = await call(world, "GET", `/v1/media/jobs/${body.id}/content`);
    expect(content.status).toBe(409);
  });

  it("B: an unknown job id is 404", async () => {
    world = await startB();
    const answer = await readJob(world, "req_nope");
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe("job_not_found");
  });

  it("B: DELETE erases media and prompts; later content reads answer 410", async () => {
    world = await startB();
    const { body } = await submit(world, "vendorx/video-2.5/text-to-video", { prompt: "a secret plan", resolution: "720p", duration_s: 5, aspect_ratio: "9:16" });
    expect((await call(world, "DELETE", `/v1/media/jobs/${body.id}`)).status).toBe(409);
    world.advance(11_000);
    const done = await readJob(world, body.id);
    const outputUrl = done.body.output.video.url as string;
    const video = await download(outputUrl);
    expect(probeVideo(video.bytes)).toMatchObject({ width: 72, height: 128 });
    const deleted = await call(world, "DELETE", `/v1/media/jobs/${body.id}`);
    expect(deleted.status).toBe(204);
    expect((await download(outputUrl)).status).toBe(410);
    const content = await call(world, "GET", `/v1/media/jobs/${body.id}/content`);
    expect(content.status).toBe(410);
    expect(content.body.error.code).toBe("media_deleted");
    expect(world.b.job(body.id)!.body.prompt).toBeUndefined();
    expect((await readJob(world, body.id)).body.deleted_at).toEqual(expect.any(String));
    expect((await call(world, "DELETE", `/v1/media/jobs/${body.id}`)).status).toBe(204);
  });

  it("B: result addresses expire, and a forged signature is refused", async () => {
    world = await startB({ resultUrlTtlMs: 60_000 });
    const { body } = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    world.advance(11_000);
    const content = await call(world, "GET", `/v1/media/jobs/${body.id}/content`);
    expect((await download(content.body.url.replace(/sig=[0-9a-f]{4}/, "sig=0000"))).status).toBe(403);
    world.advance(61_000);
    expect((await download(content.body.url)).status).toBe(403);
    const fresh = await call(world, "GET", `/v1/media/jobs/${body.id}/content`);
    expect((await download(fresh.body.url)).status).toBe(200);
  });
});

describe("B idempotency", () => {
  it("B: the same body with the same Idempotency-Key returns the existing job", async () => {
    world = await startB();
    const headers = { "idempotency-key": "order-17" };
    const first = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO, headers);
    world.advance(2_000);
    // Key order does not make another body.
    const reordered = { duration_s: 5, resolution: "720p", image: VALID_IMAGE_TO_VIDEO.image };
    const second = await submit(world, IMAGE_TO_VIDEO, reordered, headers);
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    expect(second.body.status).toBe("running");
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(world.b.jobs).toHaveLength(1);
    expect(world.b.job(first.body.id)!.idempotencyKey).toBe("order-17");
  });

  it("B: a key reused with a different body is refused", async () => {
    world = await startB();
    const headers = { "idempotency-key": "order-18" };
    await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO, headers);
    const reused = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, duration_s: 10 }, headers);
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe("idempotency_key_reused");
    const otherOperation = await submit(world, "lumora/ray-2/image-to-video", { image: VALID_IMAGE_TO_VIDEO.image, resolution: "720p", duration_s: 5 }, headers);
    expect(otherOperation.status).toBe(422);
    expect(world.b.jobs).toHaveLength(1);
  });

  it("B: a failed job is replayed on its key, so only a new key submits again", async () => {
    world = await startB();
    world.b.failNextJobs(1);
    const headers = { "idempotency-key": "order-19" };
    const first = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO, headers);
    world.advance(11_000);
    const replay = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO, headers);
    expect(replay.body).toMatchObject({ id: first.body.id, status: "failed", error: { code: "generation_failed" } });
    const rejected = await submit(world, IMAGE_TO_VIDEO, { image: "nope" }, { "idempotency-key": "order-20" });
    const rejectedReplay = await submit(world, IMAGE_TO_VIDEO, { image: "nope" }, { "idempotency-key": "order-20" });
    expect(rejectedReplay.body).toMatchObject({ id: rejected.body.id, status: "failed" });
    const retried = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO, { "idempotency-key": "order-19-retry" });
    expect(retried.body.id).not.toBe(first.body.id);
    expect(retried.body.status).toBe("queued");
  });
});

describe("B limits", () => {
  it("B: 429 carries the failed job object and Retry-After", async () => {
    world = await startB({ concurrencyLimit: 2 });
    await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    world.advance(3_000);
    await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    const refused = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO, { "idempotency-key": "k-429" });
    expect(refused.status).toBe(429);
    // The first job finishes 8 virtual seconds from now.
    expect(refused.headers.get("retry-after")).toBe("8");
    expect(refused.body).toMatchObject({ status: "failed", error: { code: "concurrency_limit_exceeded" } });
    expect(refused.body.job).toMatchObject({ status: "failed", error: { code: "concurrency_limit_exceeded" }, billing: null });
    expect(world.b.jobs).toHaveLength(2);
    expect(world.b.rejected429Count).toBe(1);
    expect((await readJob(world, refused.body.job.id)).status).toBe(404);
    // Nothing was created, so the key is still free once a slot is.
    world.advance(8_000);
    const accepted = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO, { "idempotency-key": "k-429" });
    expect(accepted.status).toBe(200);
    expect(accepted.body.status).toBe("queued");
  });

  it("B: a submits-per-minute ceiling answers 429 too (knob)", async () => {
    world = await startB({ submitsPerMinute: 2 });
    await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    const refused = await submit(world, IMAGE_TO_VIDEO, VALID_IMAGE_TO_VIDEO);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("rate_limit_exceeded");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(59);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { pngSize, renderPng } from "../../src/sandbox/media/png.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";
import {
  createEEmulator,
  DEFAULT_E_CLIENT,
  E_REQUIRED_SCOPES,
  type EEmulator,
  type EEmulatorOptions,
} from "../../src/sandbox/e/index.js";

let sandbox: Sandbox | undefined;
afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

const CLIENT_ID = DEFAULT_E_CLIENT.clientId;
const SCOPE = E_REQUIRED_SCOPES.join(",");

/** A sandbox with E; quota-neutral tests raise the per-minute limit so they need not step the clock. */
async function start(options: EEmulatorOptions = {}): Promise<{ sandbox: Sandbox; e: EEmulator }> {
  const e = createEEmulator(options);
  sandbox = await startSandbox({ providers: ["e"], emulators: { e: e } });
  return { sandbox, e };
}

function tokenForm(fields: Record<string, string>): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  };
}

async function token(base: string, scope = SCOPE): Promise<string> {
  const response = await fetch(
    `${base}/e-auth/ims/token/v3`,
    tokenForm({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: DEFAULT_E_CLIENT.clientSecret, scope }),
  );
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

function authHeaders(accessToken: string): Record<string, string> {
  return { "x-api-key": CLIENT_ID, authorization: `Bearer ${accessToken}` };
}

async function submit(base: string, accessToken: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${base}/e${path}`, {
    method: "POST",
    headers: { ...authHeaders(accessToken), "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

interface SubmitAnswer {
  jobId: string;
  statusUrl: string;
  cancelUrl: string;
}

async function upload(base: string, accessToken: string, bytes: Buffer, contentType = "image/png"): Promise<Response> {
  return fetch(`${base}/e/v2/storage/image`, {
    method: "POST",
    headers: { ...authHeaders(accessToken), "content-type": contentType },
    body: bytes,
  });
}

describe("E token endpoint", () => {
  it("E: a client-credentials request with the full scope list gets a bearer token", async () => {
    const { sandbox, e } = await start();
    const response = await fetch(
      `${sandbox.url}/e-auth/ims/token/v3`,
      tokenForm({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: DEFAULT_E_CLIENT.clientSecret, scope: SCOPE }),
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({ access_token: expect.any(String), token_type: "bearer", expires_in: 86_400 });
    expect(e.tokens()).toHaveLength(1);
    expect(e.tokens()[0]!.scopes).toEqual([...E_REQUIRED_SCOPES]);
  });

  it("E: bad client credentials are refused", async () => {
    const { sandbox } = await start();
    const response = await fetch(
      `${sandbox.url}/e-auth/ims/token/v3`,
      tokenForm({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: "wrong", scope: SCOPE }),
    );
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: "invalid_client" });
  });

  it("E: a token request missing a required scope is refused", async () => {
    const { sandbox } = await start();
    const scope = E_REQUIRED_SCOPES.filter((name) => name !== "read_organizations").join(",");
    const response = await fetch(
      `${sandbox.url}/e-auth/ims/token/v3`,
      tokenForm({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: DEFAULT_E_CLIENT.clientSecret, scope }),
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: "invalid_scope" });
  });

  it("E: the token request must be form-encoded", async () => {
    const { sandbox } = await start();
    const response = await fetch(`${sandbox.url}/e-auth/ims/token/v3`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "client_credentials", client_id: CLIENT_ID }),
    });
    expect(response.status).toBe(400);
  });

  it("E: an expired token is refused with 401", async () => {
    const { sandbox } = await start({ tokenLifetimeSeconds: 3_600 });
    const accessToken = await token(sandbox.url);
    expect((await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "a fox" })).status).toBe(202);
    sandbox.clock.advance(3_600_000);
    const response = await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "a fox" });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error_code: "token_expired" });
  });
});

describe("E API", () => {
  it("E: every call needs x-api-key and a Bearer token", async () => {
    const { sandbox } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    const url = `${sandbox.url}/e/v3/images/generate-async`;
    const body = JSON.stringify({ prompt: "a fox" });
    const json = { "content-type": "application/json" };
    const noKey = await fetch(url, { method: "POST", headers: { ...json, authorization: `Bearer ${accessToken}` }, body });
    expect(noKey.status).toBe(401);
    const noToken = await fetch(url, { method: "POST", headers: { ...json, "x-api-key": CLIENT_ID }, body });
    expect(noToken.status).toBe(401);
    const wrongToken = await fetch(url, { method: "POST", headers: { ...json, ...authHeaders("not-a-token") }, body });
    expect(wrongToken.status).toBe(401);
    const submitted = (await (await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "a fox" })).json()) as SubmitAnswer;
    expect((await fetch(submitted.statusUrl, { headers: { "x-api-key": CLIENT_ID } })).status).toBe(401);
    expect((await fetch(submitted.statusUrl, { headers: authHeaders(accessToken) })).status).toBe(200);
  });

  it("E: submit needs Content-Type application/json", async () => {
    const { sandbox } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    const response = await fetch(`${sandbox.url}/e/v3/images/generate-async`, {
      method: "POST",
      headers: { ...authHeaders(accessToken), "content-type": "text/plain" },
      body: JSON.stringify({ prompt: "a fox" }),
    });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ error_code: "unsupported_media_type" });
  });

  it("E: generate needs at least a text prompt; contentClass is art or photo", async () => {
    const { sandbox } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    const noPrompt = await submit(sandbox.url, accessToken, "/v3/images/generate-async", { contentClass: "art" });
    expect(noPrompt.status).toBe(400);
    expect(await noPrompt.json()).toMatchObject({ error_code: "validation_error", field: "prompt" });
    const badClass = await submit(sandbox.url, accessToken, "/v4/images/generate-async", { prompt: "a fox", contentClass: "cartoon" });
    expect(badClass.status).toBe(400);
    expect(await badClass.json()).toMatchObject({ field: "contentClass" });
  });

  it("E: a prompt of any length is accepted: the spec shows no limit (the client warns past 1,000 characters)", async () => {
    const { sandbox } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    const response = await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "a fox in the snow ".repeat(500) });
    expect(response.status).toBe(202);
  });

  it("E: statusUrl is on a different host than submit", async () => {
    const { sandbox, e } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    const response = await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "a fox" });
    expect(response.status).toBe(202);
    const answer = (await response.json()) as SubmitAnswer;
    expect(Object.keys(answer).sort()).toEqual(["cancelUrl", "jobId", "statusUrl"]);
    expect(answer.jobId).toMatch(/^urn:/);
    const submitHost = new URL(sandbox.url).host;
    expect(new URL(answer.statusUrl).host).not.toBe(submitHost);
    expect(new URL(answer.cancelUrl).host).not.toBe(submitHost);
    // The status URL rebuilt on the submit host does not work: it must be used as given.
    const rebuilt = new URL(answer.statusUrl);
    rebuilt.host = submitHost;
    expect((await fetch(rebuilt, { headers: authHeaders(accessToken) })).status).toBe(404);
    expect(e.job(answer.jobId)?.statusUrl).toBe(answer.statusUrl);
  });

  it("E: a job runs, then succeeds with result.outputs holding seeded PNG links", async () => {
    const { sandbox, e } = await start({ requestsPerMinute: 100, renderMs: 10_000 });
    const accessToken = await token(sandbox.url);
    const body = { prompt: "a red fox", contentClass: "art", numVariations: 2, seeds: [11, 12], size: { width: 96, height: 64 } };
    const answer = (await (await submit(sandbox.url, accessToken, "/v3/images/generate-async", body)).json()) as SubmitAnswer;
    const running = await (await fetch(answer.statusUrl, { headers: authHeaders(accessToken) })).json();
    expect(running).toEqual({ status: "running", jobId: answer.jobId });
    sandbox.clock.advance(10_000);
    const done = (await (await fetch(answer.statusUrl, { headers: authHeaders(accessToken) })).json()) as {
      status: string;
      jobId: string;
      result: { size: { width: number; height: number }; outputs: { seed: number; image: { url: string } }[]; contentClass: string; altText: string };
    };
    expect(done.status).toBe("succeeded");
    expect(done.jobId).toBe(answer.jobId);
    expect(done.result.size).toEqual({ width: 96, height: 64 });
    expect(done.result.contentClass).toBe("art");
    expect(done.result.altText).toContain("a red fox");
    expect(done.result.outputs.map((output) => output.seed)).toEqual([11, 12]);
    const image = await fetch(done.result.outputs[0]!.image.url);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/png");
    const bytes = Buffer.from(await image.arrayBuffer());
    expect(pngSize(bytes)).toEqual({ width: 96, height: 64 });
    const view = e.job(answer.jobId)!;
    expect(view.completedAt).toBe(view.submittedAt + 10_000);
    expect(view.firstSucceededReadAt).toBeGreaterThanOrEqual(view.completedAt!);
    expect(view.downloads).toHaveLength(1);
    // Links expire (1 h of virtual time from completion by default).
    sandbox.clock.advance(3_600_000);
    expect((await fetch(done.result.outputs[1]!.image.url)).status).toBe(403);
  });

  it("E: a failed job answers status only", async () => {
    const { sandbox, e } = await start({ requestsPerMinute: 100, renderMs: 1_000 });
    e.injectOutcome("failed");
    const accessToken = await token(sandbox.url);
    const answer = (await (await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "x" })).json()) as SubmitAnswer;
    sandbox.clock.advance(1_000);
    expect(await (await fetch(answer.statusUrl, { headers: authHeaders(accessToken) })).json()).toEqual({ status: "failed" });
  });

  it("E: an injected unknown status is answered before running", async () => {
    const { sandbox, e } = await start({ requestsPerMinute: 100, renderMs: 20_000 });
    e.injectUnknownStatus("queued", 5_000);
    const accessToken = await token(sandbox.url);
    const answer = (await (await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "x" })).json()) as SubmitAnswer;
    const read = async () => ((await (await fetch(answer.statusUrl, { headers: authHeaders(accessToken) })).json()) as { status: string }).status;
    expect(await read()).toBe("queued");
    sandbox.clock.advance(5_000);
    expect(await read()).toBe("running");
    sandbox.clock.advance(15_000);
    expect(await read()).toBe("succeeded");
  });

  it("E: a poll should carry no Content-Type, and one that does is recorded", async () => {
    const { sandbox, e } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    const answer = (await (await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "x" })).json()) as SubmitAnswer;
    await fetch(answer.statusUrl, { headers: authHeaders(accessToken) });
    const withType = await fetch(answer.statusUrl, { headers: { ...authHeaders(accessToken), "content-type": "application/json" } });
    expect(withType.status).toBe(200);
    const polls = e.job(answer.jobId)!.polls;
    expect(polls.map((poll) => poll.contentType)).toEqual([undefined, "application/json"]);
  });

  it("E: cancel by PUT or DELETE on cancelUrl makes the job canceled; a finished job is 409", async () => {
    const { sandbox } = await start({ requestsPerMinute: 100, renderMs: 10_000 });
    const accessToken = await token(sandbox.url);
    const first = (await (await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "x" })).json()) as SubmitAnswer;
    const second = (await (await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "y" })).json()) as SubmitAnswer;
    const cancelled = await fetch(first.cancelUrl, { method: "PUT", headers: authHeaders(accessToken) });
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toEqual({ status: "canceled", jobId: first.jobId });
    sandbox.clock.advance(10_000);
    expect(await (await fetch(first.statusUrl, { headers: authHeaders(accessToken) })).json()).toEqual({
      status: "canceled",
      jobId: first.jobId,
    });
    const late = await fetch(second.cancelUrl, { method: "DELETE", headers: authHeaders(accessToken) });
    expect(late.status).toBe(409);
  });

  it("E: 401, 409 and 503 can be injected on the v4 endpoint", async () => {
    const { sandbox, e } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    e.injectV4Error(503, 1, 7);
    e.injectV4Error(409);
    const unavailable = await submit(sandbox.url, accessToken, "/v4/images/generate-async", { prompt: "x" });
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get("retry-after")).toBe("7");
    expect((await submit(sandbox.url, accessToken, "/v4/images/generate-async", { prompt: "x" })).status).toBe(409);
    expect((await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "x" })).status).toBe(202);
    expect((await submit(sandbox.url, accessToken, "/v4/images/generate-async", { prompt: "x" })).status).toBe(202);
  });
});

describe("E uploads and image operations", () => {
  it("E: expand, fill, object composite and similar take an uploaded source image", async () => {
    const { sandbox, e } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    const uploaded = await upload(sandbox.url, accessToken, renderPng(80, 96, "source", 1));
    expect(uploaded.status).toBe(200);
    const { images } = (await uploaded.json()) as { images: { id: string }[] };
    const uploadId = images[0]!.id;
    const image = { source: { uploadId } };
    expect((await submit(sandbox.url, accessToken, "/v3/images/expand-async", { image })).status).toBe(202);
    expect((await submit(sandbox.url, accessToken, "/v3/images/fill-async", { image, mask: image, prompt: "sky" })).status).toBe(202);
    expect((await submit(sandbox.url, accessToken, "/v3/images/generate-object-composite-async", { image, prompt: "a lamp" })).status).toBe(202);
    expect((await submit(sandbox.url, accessToken, "/v3/images/generate-similar-async", { image })).status).toBe(202);
    const missing = await submit(sandbox.url, accessToken, "/v3/images/expand-async", { prompt: "x" });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ field: "image.source.uploadId" });
    const jobs = e.jobs();
    expect(jobs.map((job) => job.operation)).toEqual(["expand", "fill", "object-composite", "similar"]);
    // Without a size, the output takes the source PNG's size.
    expect(jobs[0]!.size).toEqual({ width: 80, height: 96 });
    expect(jobs[0]!.sourceUploadId).toBe(uploadId);
  });

  it("E: an upload must be a PNG, JPEG or WebP image", async () => {
    const { sandbox } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    expect((await upload(sandbox.url, accessToken, Buffer.from("hello"), "text/plain")).status).toBe(415);
    expect((await upload(sandbox.url, accessToken, Buffer.from("not a png"), "image/png")).status).toBe(400);
  });

  it("E: an upload older than 7 days is refused", async () => {
    const { sandbox } = await start({ requestsPerMinute: 100 });
    const accessToken = await token(sandbox.url);
    const { images } = (await (await upload(sandbox.url, accessToken, renderPng(64, 64, "s", 1))).json()) as { images: { id: string }[] };
    const image = { source: { uploadId: images[0]!.id } };
    sandbox.clock.advance(7 * 24 * 3_600_000 - 60_000);
    const fresh = await token(sandbox.url);
    expect((await submit(sandbox.url, fresh, "/v3/images/generate-similar-async", { image })).status).toBe(202);
    sandbox.clock.advance(60_000);
    const stale = await submit(sandbox.url, fresh, "/v3/images/generate-similar-async", { image });
    expect(stale.status).toBe(400);
    expect(await stale.json()).toMatchObject({ error_code: "upload_expired" });
  });
});

describe("E quota", () => {
  it("E: a fifth request within a minute gets 429 with retry-after", async () => {
    const { sandbox, e } = await start();
    const accessToken = await token(sandbox.url);
    const { clock } = sandbox;
    for (let i = 0; i < 4; i++) {
      expect((await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: `p${i}` })).status).toBe(202);
      clock.advance(10_000);
    }
    const refused = await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "fifth" });
    expect(refused.status).toBe(429);
    // The first request, 40 s ago, leaves the window in 20 s.
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(19);
    expect(retryAfter).toBeLessThanOrEqual(20);
    clock.advance(retryAfter * 1000);
    expect((await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "fifth" })).status).toBe(202);
    const report = e.quota();
    expect(report.rejected).toBe(1);
    expect(report.perOrganization[CLIENT_ID]).toMatchObject({ admitted: 5, rejected: 1, maxInMinute: 4 });
  });

  it("E: status polls count against the quota", async () => {
    const { sandbox, e } = await start();
    const accessToken = await token(sandbox.url);
    const answer = (await (await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "x" })).json()) as SubmitAnswer;
    for (let i = 0; i < 3; i++) expect((await fetch(answer.statusUrl, { headers: authHeaders(accessToken) })).status).toBe(200);
    const fifth = await fetch(answer.statusUrl, { headers: authHeaders(accessToken) });
    expect(fifth.status).toBe(429);
    expect(fifth.headers.get("retry-after")).toMatch(/^\d+$/);
    // The token endpoint does not count.
    expect((await fetch(`${sandbox.url}/e-auth/ims/token/v3`, tokenForm({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: DEFAULT_E_CLIENT.clientSecret, scope: SCOPE }))).status).toBe(200);
    const counted = e.requests().filter((entry) => entry.counted);
    expect(counted.map((entry) => entry.kind)).toEqual(["submit", "status", "status", "status"]);
  });

  it("E: the daily quota (9,000 by default, 3 here) answers 429 until the oldest request leaves the 24 h window", async () => {
    const { sandbox, e } = await start();
    e.setQuota({ perMinute: 10_000 });
    const accessToken = await token(sandbox.url);
    e.setQuota({ perDay: 3 });
    for (let i = 0; i < 3; i++) expect((await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "x" })).status).toBe(202);
    const refused = await submit(sandbox.url, accessToken, "/v3/images/generate-async", { prompt: "x" });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(23 * 3_600);
  });
});

import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, InputError } from "../../src/core/errors.js";
import { createFEmulator, startSandbox, type Sandbox, type StartSandboxOptions } from "../../src/sandbox/index.js";
import { until } from "../helpers/until.js";

/** `mediagate/sandbox` from the sources, over real loopback HTTP: what another project's tests would do with it. */

const D_KEY = { "x-key": "sandbox-d-key", "content-type": "application/json" };
const A_KEY = { authorization: "Bearer sandbox-a-key" };
/** 512×512 on gen-2-pro: 1 MP at 30,000 micro-USD, 3 credits. */
const SMALL_D = { prompt: "a lighthouse", width: 512, height: 512 };

let sandbox: Sandbox | undefined;
const servers: Server[] = [];
afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function start(options: StartSandboxOptions): Promise<Sandbox> {
  sandbox = await startSandbox(options);
  return sandbox;
}

async function json(response: Response): Promise<{ status: number; body: any }> {
  return { status: response.status, body: await response.json() };
}

function submitD(world: Sandbox, body: unknown = SMALL_D): Promise<Response> {
  return fetch(`${world.baseUrls.d}/v1/gen-2-pro`, { method: "POST", headers: D_KEY, body: JSON.stringify(body) });
}

async function pollD(pollingUrl: string): Promise<string> {
  const { body } = await json(await fetch(pollingUrl, { headers: D_KEY }));
  return body.status as string;
}

function control(world: Sandbox, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${world.url}/_sandbox/${path}`, {
    method,
    ...(body !== undefined ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {}),
  });
}

async function receiver(): Promise<{ url: string; received: IncomingHttpHeaders[] }> {
  const received: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      received.push(request.headers);
      response.end("ok");
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, received };
}

describe("mediagate/sandbox: startSandbox", () => {
  it("starts only the providers asked for, and its environment and base URLs name only them", async () => {
    const world = await start({ providers: ["d", "c"] });
    expect(world.providers).toEqual(["c", "d"]);
    expect(world.baseUrls).toEqual({ c: `${world.url}/c`, d: `${world.url}/d` });
    expect(Object.keys(world.environment).filter((name) => name.endsWith("_BASE_URL"))).toEqual(["MEDIAGATE_C_BASE_URL", "MEDIAGATE_D_BASE_URL"]);
    expect(world.environment.MEDIAGATE_C_TIER).toBe("free");
    expect((await fetch(`${world.url}/a/api/v3/contents/generations/tasks/x`, { headers: A_KEY })).status).toBe(404);
    expect((await submitD(world)).status).toBe(200);
    expect(Object.keys(world.stats().providers)).toEqual(["c", "d"]);
  });

  it("render time per provider: a D task stays Pending until its render time has passed in virtual time, and advance() gets it there at once", async () => {
    const world = await start({ providers: ["d"], renderMs: { d: 60_000 } });
    const { body } = await json(await submitD(world));
    expect(await pollD(body.polling_url)).toBe("Pending");
    expect(world.advance(59_000)).toBeGreaterThanOrEqual(world.now() - 10);
    expect(await pollD(body.polling_url)).toBe("Pending");
    await control(world, "POST", "advance?ms=1000");
    expect(await pollD(body.polling_url)).toBe("Ready");
  });

  it("a render-time range draws each task's time from it with the seed: the same seed gives the same times", async () => {
    const finishes = async () => {
      const world = await start({ providers: ["d"], renderMs: { minMs: 1_000, maxMs: 9_000 }, seed: 7 });
      for (let index = 0; index < 3; index++) await submitD(world);
      const times = world.emulators.d!.jobs.map((job) => job.finishesAt - job.createdAt);
      await world.stop();
      sandbox = undefined;
      return times;
    };
    const first = await finishes();
    expect(first.every((ms) => ms >= 1_000 && ms <= 9_000)).toBe(true);
    expect(new Set(first).size).toBeGreaterThan(1);
    expect(await finishes()).toEqual(first);
  });

  it("slots: D with slots 2 answers the third submit 429, and stats count the refusal, the 429 and a peak of 2", async () => {
    const world = await start({ providers: ["d"], renderMs: 60_000, slots: { d: 2 } });
    expect(world.environment.MEDIAGATE_D_CONCURRENCY).toBe("2");
    expect((await submitD(world)).status).toBe(200);
    expect((await submitD(world)).status).toBe(200);
    expect((await submitD(world)).status).toBe(429);
    world.advance(60_000);
    expect((await submitD(world)).status).toBe(200);
    const { d } = world.stats().providers;
    expect(d).toMatchObject({ tasks: { Ready: 2, Pending: 1 }, peakConcurrency: 2, limitRefusals: 1, responses429: 1, requests: 4 });
  });

  it("slots: C's count names its tier (15: essential), the printed environment says the same tier, and the 16th task is refused with 500044", async () => {
    const world = await start({ providers: ["c"], slots: { c: 15 }, renderMs: 60_000 });
    expect(world.environment.MEDIAGATE_C_TIER).toBe("essential");
    const errCodes: number[] = [];
    for (let index = 0; index < 16; index++) {
      const response = await fetch(`${world.baseUrls.c}/openapi/v2/video/text/generate`, {
        method: "POST",
        headers: { "api-key": "sandbox-c-key", "ai-trace-id": randomUUID(), "content-type": "application/json" },
        body: JSON.stringify({ prompt: "waves", model: "v6", aspect_ratio: "16:9", duration: 5, quality: "720p" }),
      });
      errCodes.push(((await response.json()) as { ErrCode: number }).ErrCode);
    }
    expect(errCodes).toEqual([...Array<number>(15).fill(0), 500044]);
    // C answers its slot refusal with HTTP 200: a limit refusal, not a 429.
    expect(world.stats().providers.c).toMatchObject({ tasks: { "5": 15 }, peakConcurrency: 15, limitRefusals: 1, responses429: 0 });
  });

  it("rate: A with 2 requests per minute answers the third request of the minute 429, and a minute of virtual time later admits again", async () => {
    const world = await start({ providers: ["a"], ratePerMinute: { a: 2 } });
    const read = () => fetch(`${world.baseUrls.a}/api/v3/contents/generations/tasks/cgt-none`, { headers: A_KEY });
    expect((await read()).status).toBe(404);
    expect((await read()).status).toBe(404);
    const refused = await read();
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([429, "60"]);
    world.advance(60_000);
    expect((await read()).status).toBe(404);
    expect(world.stats().providers.a).toMatchObject({ limitRefusals: 1, responses429: 1, requests: 4 });
  });

  it("credits: D with 5 credits takes one 3-credit job and refuses the next with 402; stats show the credits left", async () => {
    const world = await start({ providers: ["d", "b"], credits: { d: 5, b: 2_500_000 } });
    expect((await submitD(world)).status).toBe(200);
    expect((await submitD(world)).status).toBe(402);
    const { providers } = world.stats();
    expect(providers.d!.creditsLeft).toEqual({ amount: 2, unit: "credits" });
    expect(providers.b!.creditsLeft).toEqual({ amount: 2_500_000, unit: "micro_usd" });
    const balance = await json(await fetch(`${world.baseUrls.b}/billing/balance`, { headers: { "x-api-key": "sandbox-b-key" } }));
    expect(balance.body).toEqual({ balance_micro_usd: 2_500_000, unit: "micro_usd" });
  });

  it("a knob a provider lacks refuses that provider, naming the option and the providers that have it", async () => {
    await expect(startSandbox({ slots: { a: 3 } })).rejects.toMatchObject({ field: "slots", reason: "provider a has no concurrency cap the sandbox can set", allowed: "providers b, c, d" });
    await expect(startSandbox({ ratePerMinute: { d: 10 } })).rejects.toBeInstanceOf(InputError);
    await expect(startSandbox({ credits: { f: 10 } })).rejects.toMatchObject({ field: "credits" });
    await expect(startSandbox({ slots: { c: 4 } })).rejects.toMatchObject({ field: "slots", allowed: expect.stringContaining("15 (essential)") });
    await expect(startSandbox({ providers: ["d"], renderMs: { b: 10 } })).rejects.toMatchObject({ field: "renderMs", reason: "provider b is not started" });
    await expect(startSandbox({ renderMs: { minMs: 9, maxMs: 1 } })).rejects.toMatchObject({ field: "renderMs" });
    await expect(startSandbox({ providers: ["d", "x" as "a"] })).rejects.toMatchObject({ field: "providers" });
    await expect(startSandbox({ faults: { d: { status5xx: 1.5 } } })).rejects.toMatchObject({ field: "faults" });
  });

  it("a balance in dollars is held to mediagate's one range of money: B's micro-USD and D's credits at most $1,000,000,000", async () => {
    await expect(startSandbox({ providers: ["b"], credits: { b: 1e15 + 1 } })).rejects.toMatchObject({ field: "credits", reason: "1000000000000001 micro-USD for b is more than 1000000000000000 ($1000000000)" });
    await expect(startSandbox({ providers: ["d"], credits: { d: 100_000_000_001 } })).rejects.toMatchObject({ field: "credits", allowed: "at most 100000000000 credits for d" });
    const world = await start({ providers: ["b", "d"], credits: { b: 1e15, d: 100_000_000_000 } });
    expect(world.stats().providers.b!.creditsLeft).toEqual({ amount: 1e15, unit: "micro_usd" });
  });

  it("a port in use is a ConfigError port_in_use naming the port", async () => {
    const world = await start({ providers: ["d"] });
    const error = await startSandbox({ providers: ["d"], port: world.port }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: "port_in_use", variable: "port" });
    expect((error as Error).message).toContain(`port ${world.port}`);
  });
});

describe("/_sandbox endpoints", () => {
  it("GET /_sandbox/requests: the log as JSON, filtered by provider, since and limit; the control endpoints are not in it", async () => {
    const world = await start({ providers: ["a", "d"] });
    await submitD(world, { ...SMALL_D, prompt: "first" });
    const midpoint = world.now();
    world.advance(10);
    await fetch(`${world.baseUrls.a}/api/v3/contents/generations/tasks/cgt-none`, { headers: A_KEY });
    await submitD(world, { ...SMALL_D, prompt: "second" });
    await control(world, "GET", "stats");

    const all = await json(await control(world, "GET", "requests"));
    expect(all.body.count).toBe(3);
    expect(all.body.requests.map((entry: any) => [entry.provider, entry.method, entry.statusCode])).toEqual([
      ["d", "POST", 200],
      ["a", "GET", 404],
      ["d", "POST", 200],
    ]);
    const d = await json(await control(world, "GET", "requests?provider=d"));
    expect(d.body.requests.map((entry: any) => entry.body.prompt)).toEqual(["first", "second"]);
    const last = await json(await control(world, "GET", "requests?provider=d&limit=1"));
    expect(last.body.requests.map((entry: any) => entry.body.prompt)).toEqual(["second"]);
    const since = await json(await control(world, "GET", `requests?since=${midpoint + 5}`));
    expect(since.body.requests.map((entry: any) => entry.provider)).toEqual(["a", "d"]);
    expect(world.requests({ provider: "a" })).toHaveLength(1);

    const bad = await json(await control(world, "GET", "requests?provider=z"));
    expect(bad).toEqual({ status: 400, body: { error: { code: "invalid_input", field: "provider", message: expect.stringContaining("z") } } });
  });

  it("GET /_sandbox/stats: per provider, tasks by state, peak concurrency, 429s (injected ones too) and credits left", async () => {
    const world = await start({ providers: ["d", "f"], renderMs: { d: 10_000 } });
    for (let index = 0; index < 3; index++) await submitD(world);
    world.advance(10_000);
    await submitD(world);
    world.injectFault({ d: { status429: 1, times: 1 } });
    expect((await submitD(world)).status).toBe(429);
    const { status, body } = await json(await control(world, "GET", "stats"));
    expect(status).toBe(200);
    expect(body.timeScale).toBe(1);
    expect(Math.abs(body.now - world.now())).toBeLessThan(1_000);
    expect(body.providers.d).toEqual({
      tasks: { Ready: 3, Pending: 1 },
      peakConcurrency: 3,
      limitRefusals: 0,
      responses429: 1,
      requests: 5,
      // 1,000,000 credits at the start, 3 per job.
      creditsLeft: { amount: 100_000 - 12, unit: "credits" },
    });
    expect(body.providers.f).toEqual({ tasks: {}, peakConcurrency: 0, limitRefusals: 0, responses429: 0, requests: 0 });
  });

  it("GET /_sandbox/stats for A, E and F: tasks by the provider's own status words as virtual time passes, peaks from the tasks' times, E's quota refusals", async () => {
    const world = await start({ providers: ["a", "e", "f"], queueMs: { a: 1_000 }, renderMs: 10_000, ratePerMinute: { e: 2 } });
    const createA = () =>
      fetch(`${world.baseUrls.a}/api/v3/contents/generations/tasks`, {
        method: "POST",
        headers: { ...A_KEY, "content-type": "application/json" },
        body: JSON.stringify({ model: "vidgen-2-0-250601", content: [{ type: "text", text: "a lighthouse" }] }),
      });
    expect((await createA()).status).toBe(200);
    expect((await createA()).status).toBe(200);

    const tokenAnswer = await fetch(`${world.url}/e-auth/ims/token/v3`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: world.environment.MEDIAGATE_E_CLIENT_ID!, client_secret: world.environment.MEDIAGATE_E_CLIENT_SECRET!, scope: world.environment.MEDIAGATE_E_SCOPES! }).toString(),
    });
    const { access_token: accessToken } = (await tokenAnswer.json()) as { access_token: string };
    const submitE = () =>
      fetch(`${world.baseUrls.e}/v3/images/generate-async`, {
        method: "POST",
        headers: { "x-api-key": world.environment.MEDIAGATE_E_CLIENT_ID!, authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
        body: JSON.stringify({ prompt: "a fox" }),
      });
    expect([(await submitE()).status, (await submitE()).status, (await submitE()).status]).toEqual([202, 202, 429]);

    const form = new FormData();
    form.append("text_prompt", "a lighthouse");
    form.append("resolution", "256x256");
    expect((await fetch(`${world.baseUrls.f}/v1/img-v3/async/generate`, { method: "POST", headers: { "Api-Key": "sandbox-f-key" }, body: form })).status).toBe(200);

    const tasksNow = () => Object.fromEntries(Object.entries(world.stats().providers).map(([provider, stats]) => [provider, stats!.tasks]));
    expect(tasksNow()).toEqual({ a: { queued: 2 }, e: { running: 2 }, f: { pending: 1 } });
    world.advance(1_000);
    expect(tasksNow().a).toEqual({ running: 2 });
    world.advance(10_000);
    expect(tasksNow()).toEqual({ a: { succeeded: 2 }, e: { succeeded: 2 }, f: { ready: 1 } });
    const { a, e, f } = world.stats().providers;
    expect([a!.peakConcurrency, e!.peakConcurrency, f!.peakConcurrency]).toEqual([2, 2, 1]);
    expect(e).toMatchObject({ limitRefusals: 1, responses429: 1 });
    expect([a!.creditsLeft, e!.creditsLeft, f!.creditsLeft]).toEqual([undefined, undefined, undefined]);
  });

  it("POST /_sandbox/advance?ms=N moves virtual time forward by N; a missing or negative N is 400 and moves nothing", async () => {
    const world = await start({ providers: ["d"], timeScale: 1 });
    const before = world.now();
    const { status, body } = await json(await control(world, "POST", "advance?ms=86400000"));
    expect(status).toBe(200);
    expect(body.advancedMs).toBe(86_400_000);
    expect(body.now - before).toBeGreaterThanOrEqual(86_400_000);
    expect(body.now - before).toBeLessThan(86_400_000 + 5_000);
    const afterFirst = world.now();
    expect((await control(world, "POST", "advance?ms=-5")).status).toBe(400);
    expect((await control(world, "POST", "advance")).status).toBe(400);
    expect(world.now() - afterFirst).toBeLessThan(5_000);
    expect(() => world.advance(-1)).toThrow(InputError);
  });

  it("advance under a scaled clock: B's queued and running phases pass, and its webhook fires with a wall-clock timestamp by default", async () => {
    const hook = await receiver();
    const world = await start({ providers: ["b"], timeScale: 60, queueMs: { b: 1_000 }, renderMs: { b: 60_000 } });
    const submitted = await json(
      await fetch(`${world.baseUrls.b}/v1/media/vendorx/video-2.5/image-to-video`, {
        method: "POST",
        headers: { "x-api-key": "sandbox-b-key", "content-type": "application/json" },
        body: JSON.stringify({ image: "https://images.example.com/cat.png", resolution: "720p", duration_s: 5, webhook_url: hook.url }),
      }),
    );
    expect(submitted.body.status).toBe("queued");
    await control(world, "POST", "advance?ms=3600000");
    await world.emulators.b!.flushWebhooks();
    const read = await json(await fetch(`${world.baseUrls.b}/v1/media/jobs/${submitted.body.id}`, { headers: { "x-api-key": "sandbox-b-key" } }));
    expect(read.body.status).toBe("completed");
    expect(hook.received).toHaveLength(1);
    expect(Math.abs(Number(hook.received[0]!["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(5);
  });

  it("webhookTimestamps \"virtual\" reaches B and F: their webhooks carry the sandbox's clock, an hour ahead after advance", async () => {
    const hook = await receiver();
    const world = await start({ providers: ["b", "f"], webhookTimestamps: "virtual", queueMs: { b: 0 }, renderMs: 0 });
    world.advance(3_600_000);
    await fetch(`${world.baseUrls.b}/v1/media/vendorx/video-2.5/image-to-video`, {
      method: "POST",
      headers: { "x-api-key": "sandbox-b-key", "content-type": "application/json" },
      body: JSON.stringify({ image: "https://images.example.com/cat.png", resolution: "720p", duration_s: 5, webhook_url: hook.url }),
    });
    const form = new FormData();
    form.append("text_prompt", "a lighthouse");
    form.append("resolution", "256x256");
    await fetch(`${world.baseUrls.f}/v1/img-v3/async/generate?webhook_url=${encodeURIComponent(hook.url)}`, { method: "POST", headers: { "Api-Key": "sandbox-f-key" }, body: form });
    await world.emulators.b!.flushWebhooks();
    await until(() => hook.received.length === 2, "both webhooks", 5_000);
    const stamps = hook.received.map((headers) => Number(headers["webhook-timestamp"] ?? headers["x-img-webhook-timestamp"]));
    for (const stamp of stamps) expect(Math.abs(stamp - world.now() / 1000)).toBeLessThan(5);
    for (const stamp of stamps) expect(stamp - Date.now() / 1000).toBeGreaterThan(3_500);
  });

  it("POST /_sandbox/faults adds faults from the JSON vocabulary; DELETE /_sandbox/faults removes them", async () => {
    const world = await start({ providers: ["a", "d"] });
    const added = await json(await control(world, "POST", "faults", { d: [{ status5xx: 1, method: "POST", times: 1 }, { status429: 1, retryAfterSeconds: 7, path: "^/d/v1/", times: 1 }] }));
    expect(added).toEqual({ status: 200, body: { added: 2 } });
    const first = await submitD(world);
    expect([first.status, await first.json()]).toEqual([503, { error: "injected fault: 503" }]);
    const second = await submitD(world);
    expect([second.status, second.headers.get("retry-after")]).toEqual([429, "7"]);
    expect((await submitD(world)).status).toBe(200);
    expect(world.requests({ provider: "d" }).map((entry) => entry.fault ?? null)).toEqual(["status", "status", null]);

    await control(world, "POST", "faults", { "*": { drop: 1 } });
    await expect(submitD(world)).rejects.toThrow();
    await expect(fetch(`${world.baseUrls.a}/api/v3/contents/generations/tasks/x`, { headers: A_KEY })).rejects.toThrow();
    expect(await json(await control(world, "DELETE", "faults"))).toEqual({ status: 200, body: { cleared: true } });
    expect((await submitD(world)).status).toBe(200);
  });

  it("POST /_sandbox/faults refuses what the vocabulary does not say, naming the setting, and adds nothing", async () => {
    const world = await start({ providers: ["d"] });
    const cases: [unknown, string][] = [
      [{ d: { status500: 0.1 } }, `"d.status500" is not a fault setting`],
      [{ d: { drop: 2 } }, `"d.drop" is 2, not a probability`],
      [{ c: { drop: 0.1 } }, "provider c is not started"],
      [{ d: { times: 3 } }, `"d" names no fault`],
      [{ d: { delayProbability: 0.5, status5xx: 0.1 } }, "delayProbability"],
      [{ d: { drop: 0.5, path: "(" } }, "not a valid regular expression"],
      [[1, 2], "not a JSON object keyed by provider"],
    ];
    for (const [spec, reason] of cases) {
      const answer = await json(await control(world, "POST", "faults", spec));
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: "invalid_input", field: "body" });
      expect(answer.body.error.message).toContain(reason);
    }
    expect((await submitD(world)).status).toBe(200);
  });

  it("a delay fault holds the request, then handles it", async () => {
    const world = await start({ providers: ["d"], faults: { d: { delayMs: 50, times: 1 } } });
    expect((await submitD(world)).status).toBe(200);
    expect((await submitD(world)).status).toBe(200);
    expect(world.requests().map((entry) => [entry.fault ?? null, entry.statusCode])).toEqual([
      ["delay", 200],
      [null, 200],
    ]);
  });

  it("POST /_sandbox/reset forgets tasks, requests, added faults and peaks, restores balances and the start's faults, and draws the same render times again", async () => {
    const world = await start({ providers: ["d", "c"], renderMs: { minMs: 1_000, maxMs: 50_000 }, credits: { d: 100 }, faults: { d: { status5xx: 1, times: 1 } } });
    expect((await submitD(world)).status).toBe(503);
    for (let index = 0; index < 3; index++) expect((await submitD(world)).status).toBe(200);
    const renderTimes = world.emulators.d!.jobs.map((job) => job.finishesAt - job.createdAt);
    world.injectFault({ d: { status429: 1 } });
    expect((await submitD(world)).status).toBe(429);
    expect(world.stats().providers.d).toMatchObject({ peakConcurrency: 3, creditsLeft: { amount: 91 } });

    expect(await json(await control(world, "POST", "reset"))).toEqual({ status: 200, body: { reset: true } });
    expect(world.requests()).toEqual([]);
    expect(world.stats().providers.d).toEqual({ tasks: {}, peakConcurrency: 0, limitRefusals: 0, responses429: 0, requests: 0, creditsLeft: { amount: 100, unit: "credits" } });
    // The start's fault is in force again, once; the 429 added later is gone.
    expect((await submitD(world)).status).toBe(503);
    for (let index = 0; index < 3; index++) expect((await submitD(world)).status).toBe(200);
    expect(world.emulators.d!.jobs.map((job) => job.finishesAt - job.createdAt)).toEqual(renderTimes);
  });

  it("reset: every emulator starts over (A's rate window, B's jobs, C's slots, E's quota, F's generations)", async () => {
    const world = await start({ ratePerMinute: { a: 1, e: 1 } });
    const readA = () => fetch(`${world.baseUrls.a}/api/v3/contents/generations/tasks/cgt-none`, { headers: A_KEY });
    expect((await readA()).status).toBe(404);
    expect((await readA()).status).toBe(429);
    await world.reset();
    expect((await readA()).status).toBe(404);
    for (const provider of ["b", "c", "d", "e", "f"] as const) {
      expect(world.stats().providers[provider]).toMatchObject({ tasks: {}, peakConcurrency: 0, limitRefusals: 0, requests: 0 });
    }
  });
});

describe("mediagate/sandbox: what the flat options do not cover", () => {
  it("emulators: an emulator's own options reach it over the flat knobs (D's unknown statuses), and an emulator object is used as it is", async () => {
    const f = createFEmulator({ renderMs: 0 });
    const world = await start({ providers: ["d", "f"], renderMs: { d: 60_000 }, emulators: { d: { unknownStatus: { status: "Processing", polls: 1 } }, f } });
    expect(world.emulators.f).toBe(f);
    const { body } = await json(await submitD(world));
    expect(await pollD(body.polling_url)).toBe("Processing");
    expect(await pollD(body.polling_url)).toBe("Pending");
    world.advance(60_000);
    expect(await pollD(body.polling_url)).toBe("Ready");
  });

  it("emulators refuses, before anything listens: a provider not started, another provider's emulator, a flat knob or webhookTimestamps that would not reach an emulator object, B's timestamp clock as an emulator option", async () => {
    await expect(startSandbox({ providers: ["d"], emulators: { c: {} } })).rejects.toMatchObject({ field: "emulators.c", reason: "provider c is not started" });
    await expect(startSandbox({ providers: ["d", "f"], emulators: { d: createFEmulator() as never } })).rejects.toMatchObject({ field: "emulators.d", reason: "is provider f's emulator" });
    await expect(startSandbox({ providers: ["f"], renderMs: 500, emulators: { f: createFEmulator() } })).rejects.toMatchObject({ field: "renderMs", reason: expect.stringContaining("provider f is given as an emulator object") });
    await expect(startSandbox({ providers: ["f"], webhookTimestamps: "virtual", emulators: { f: createFEmulator() } })).rejects.toMatchObject({ field: "webhookTimestamps" });
    await expect(startSandbox({ providers: ["b"], emulators: { b: { webhookTimestamps: "virtual" } } })).rejects.toMatchObject({ field: "emulators.b.webhookTimestamps", allowed: "the sandbox's webhookTimestamps option" });
  });

  it("injectFault takes a FaultRule: any status, body and headers, on a path pattern, a given number of times; a rule naming a provider not started or no kind of fault is refused", async () => {
    const world = await start({ providers: ["d"] });
    expect(world.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\/gen-2-pro$/, fault: { kind: "status", status: 418, body: { code: "teapot" }, headers: { "x-injected": "yes" } }, times: 1 })).toBe(1);
    const refused = await submitD(world);
    expect([refused.status, refused.headers.get("x-injected"), await refused.json()]).toEqual([418, "yes", { code: "teapot" }]);
    expect((await submitD(world)).status).toBe(200);
    expect(() => world.injectFault({ provider: "c", fault: { kind: "drop" } })).toThrow(InputError);
    expect(() => world.injectFault({ fault: { kind: "explode" } as never })).toThrow(/fault\.kind "explode" is not a kind of fault/);
    expect(() => world.injectFault({ fault: { kind: "drop" }, times: 0 })).toThrow(/times 0/);
  });

  it("injectFault: drop_after_handling cuts the connection after D took the job; the log keeps its status", async () => {
    const world = await start({ providers: ["d"] });
    world.injectFault({ provider: "d", method: "POST", fault: { kind: "drop_after_handling" }, times: 1 });
    await expect(submitD(world)).rejects.toThrow();
    expect(world.emulators.d!.jobs).toHaveLength(1);
    expect(world.requests().map((entry) => [entry.fault, entry.statusCode])).toEqual([["drop_after_handling", 200]]);
  });

  it("clock: the sandbox's virtual time as a Clock for mediagate's engine: now() and advance() follow it, sleep() waits virtual milliseconds", async () => {
    const world = await start({ providers: ["d"], timeScale: 1_000 });
    const { clock } = world;
    expect(clock.scale).toBe(1_000);
    const before = clock.now();
    await clock.sleep(2_000);
    expect(clock.now() - before).toBeGreaterThanOrEqual(2_000);
    const advanced = clock.advance(3_600_000);
    expect(advanced - before).toBeGreaterThanOrEqual(3_600_000);
    expect(world.now()).toBeGreaterThanOrEqual(advanced);
    expect(() => clock.advance(-1)).toThrow(InputError);
  });

  it("startOutage: the host refuses every connection until endOutage, and the emulators keep their tasks", async () => {
    const world = await start({ providers: ["d"], renderMs: 1_000 });
    const { body } = await json(await submitD(world));
    await world.startOutage();
    await expect(submitD(world)).rejects.toThrow();
    await world.endOutage();
    world.advance(1_000);
    expect(await pollD(body.polling_url)).toBe("Ready");
    expect(world.emulators.d!.jobs).toHaveLength(1);
  });
});

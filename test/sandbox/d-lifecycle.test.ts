import { afterEach, describe, expect, it } from "vitest";
import { pngSize, renderPng } from "../../src/sandbox/media/png.js";
import { D_KEY, poll, PROMPT, startD, submitOk, type DSandbox } from "./d-http.js";

let world: DSandbox | undefined;
afterEach(async () => {
  await world?.sandbox.stop();
  world = undefined;
});

async function started(options: Parameters<typeof startD>[0] = {}, timeScale = 1): Promise<DSandbox> {
  world = await startD(options, timeScale);
  return world;
}

const RENDER_MS = 10_000;
const TEN_MINUTES = 10 * 60_000;

/** Moves virtual time past the render time of every job submitted so far. */
function renderAll(d: DSandbox): void {
  d.sandbox.clock.advance(RENDER_MS + 1_000);
}

describe("D submit and poll", () => {
  it("D: submit answers the job id and polling_url", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const accepted = await submitOk(d, "gen-2-pro", { ...PROMPT, width: 512, height: 512 });
    expect(Object.keys(accepted).sort()).toEqual(["id", "polling_url"]);
    expect(accepted.id).toMatch(/\S/);
    expect(d.d.job(accepted.id)).toBeDefined();
  });

  it("D: polling_url is served from another host and prefix", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const { id, polling_url } = await submitOk(d, "gen-2-pro", PROMPT);
    const pollingUrl = new URL(polling_url);
    const submitUrl = new URL(d.baseUrl);
    expect(pollingUrl.hostname).not.toBe(submitUrl.hostname);
    expect(pollingUrl.pathname.startsWith("/d/")).toBe(false);
    expect(pollingUrl.pathname).toMatch(/^\/d-/);

    const asGiven = await poll(polling_url);
    expect(asGiven.status).toBe(200);
    expect(asGiven.body).toEqual({ id, status: "Pending" });

    // A client that rebuilds the address from the submit host or prefix does not reach the job.
    expect((await poll(`${submitUrl.origin}${pollingUrl.pathname}${pollingUrl.search}`)).status).toBe(404);
    expect((await poll(`${d.baseUrl}/v1/get_result${pollingUrl.search}`)).status).toBe(404);

    const polls = d.sandbox.requests().filter((request) => request.url.startsWith(pollingUrl.pathname));
    expect(polls.map((request) => request.provider)).toEqual(["d", "d"]);
  });

  it("D: a job is Pending while it renders, then Ready with result.sample", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const { id, polling_url } = await submitOk(d, "gen-2-pro", PROMPT);
    expect((await poll(polling_url)).body.status).toBe("Pending");
    expect(d.d.job(id)).toMatchObject({ status: "Pending", readyAt: null, active: true });

    renderAll(d);
    const ready = await poll(polling_url);
    expect(ready.body.status).toBe("Ready");
    expect(ready.body.result?.sample).toMatch(/^http:\/\//);
    const job = d.d.job(id)!;
    expect(job).toMatchObject({ status: "Ready", active: false, polls: 2 });
    expect(job.readyAt).toBe(job.finishesAt);
    expect(job.readyAt! - job.createdAt).toBe(RENDER_MS);
  });

  it("D: result.sample is a signed URL to a real PNG of the output size, drawn from prompt and seed", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const { id, polling_url } = await submitOk(d, "gen-2-pro", { prompt: "a red fox", width: 320, height: 192, seed: 11 });
    renderAll(d);
    const { body } = await poll(polling_url);
    const sample = new URL(body.result!.sample);
    expect(sample.pathname).toMatch(/^\/d-/);
    expect(sample.searchParams.get("sig")).toBeTruthy();

    // The signature is the credential: no x-key needed for the image.
    const response = await fetch(sample);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/png");
    const image = Buffer.from(await response.arrayBuffer());
    expect(pngSize(image)).toEqual({ width: 320, height: 192 });
    expect(image.equals(renderPng(320, 192, "a red fox", 11))).toBe(true);
    expect(d.d.job(id)?.downloads).toBe(1);

    // Every poll hands out the same link.
    expect((await poll(polling_url)).body.result?.sample).toBe(body.result!.sample);
  });

  it("D: result.sample stops working after ten minutes", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const { id, polling_url } = await submitOk(d, "gen-2-pro", { ...PROMPT, width: 128, height: 128 });
    renderAll(d);
    const sample = (await poll(polling_url)).body.result!.sample;
    const readyAt = d.d.job(id)!.readyAt!;
    const { clock } = d.sandbox;

    clock.advance(readyAt + TEN_MINUTES - 5_000 - clock.now());
    expect((await fetch(sample)).status).toBe(200);

    clock.advance(10_000);
    const expired = await fetch(sample);
    expect(expired.status).toBe(403);
    expect(((await expired.json()) as { code: string }).code).toBe("link_expired");
    // The poll keeps answering Ready with the same, now dead, link (retention is not shown).
    expect((await poll(polling_url)).body.result?.sample).toBe(sample);
  });

  it("D: the ten minutes of result.sample count from the moment the job became Ready", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const { polling_url } = await submitOk(d, "gen-2-pro", { ...PROMPT, width: 128, height: 128 });
    // The client polls late: the link it gets has less than ten minutes left.
    d.sandbox.clock.advance(RENDER_MS + TEN_MINUTES - 30_000);
    const sample = (await poll(polling_url)).body.result!.sample;
    expect((await fetch(sample)).status).toBe(200);
    d.sandbox.clock.advance(60_000);
    expect((await fetch(sample)).status).toBe(403);
  });

  it("D: a result link with a wrong signature is refused", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const { polling_url } = await submitOk(d, "gen-2-pro", PROMPT);
    renderAll(d);
    const sample = new URL((await poll(polling_url)).body.result!.sample);
    sample.searchParams.set("sig", "0".repeat(64));
    const refused = await fetch(sample);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe("bad_signature");
  });

  it("D: polling an id the service does not know answers Task not found", async () => {
    const d = await started();
    const { polling_url } = await submitOk(d, "gen-2-pro", PROMPT);
    const url = new URL(polling_url);
    url.searchParams.set("id", "no-such-job");
    expect((await poll(url.toString())).body).toEqual({ id: "no-such-job", status: "Task not found" });
  });
});

describe("D outcomes and unknown statuses", () => {
  it("D: Error and Failed are terminal failures without result (next N jobs)", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    d.d.failNextJobs("Error", 1);
    d.d.failNextJobs("Failed", 1);
    const first = await submitOk(d, "gen-2-pro", PROMPT);
    const second = await submitOk(d, "gen-2-pro", PROMPT);
    const third = await submitOk(d, "gen-2-pro", PROMPT);
    expect((await poll(first.polling_url)).body.status).toBe("Pending");
    renderAll(d);
    expect((await poll(first.polling_url)).body).toEqual({ id: first.id, status: "Error" });
    expect((await poll(second.polling_url)).body).toEqual({ id: second.id, status: "Failed" });
    expect((await poll(third.polling_url)).body.status).toBe("Ready");
    expect(d.d.job(first.id)).toMatchObject({ status: "Error", readyAt: null, active: false });
  });

  it("D: outcome rates end a share of jobs in Error or Failed", async () => {
    const d = await started({ renderTimeMs: RENDER_MS, outcomeRates: { errorRate: 1 } });
    const errored = await submitOk(d, "gen-2-pro", PROMPT);
    d.d.setOutcomeRates({ failedRate: 1 });
    const failed = await submitOk(d, "gen-2-pro", PROMPT);
    d.d.setOutcomeRates({ errorRate: 0.5, failedRate: 0.5 });
    const drawn = await Promise.all(Array.from({ length: 10 }, () => submitOk(d, "gen-2-pro", PROMPT)));
    renderAll(d);
    expect((await poll(errored.polling_url)).body.status).toBe("Error");
    expect((await poll(failed.polling_url)).body.status).toBe("Failed");
    const statuses = await Promise.all(drawn.map(async (job) => (await poll(job.polling_url)).body.status));
    expect(new Set(statuses)).toEqual(new Set(["Error", "Failed"]));
  });

  it("D: an unknown status is answered for a while, then the job continues", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    d.d.injectUnknownStatus("Request Moderated", 2);
    const { id, polling_url } = await submitOk(d, "gen-2-pro", PROMPT);
    renderAll(d);
    expect((await poll(polling_url)).body).toEqual({ id, status: "Request Moderated" });
    expect((await poll(polling_url)).body).toEqual({ id, status: "Request Moderated" });
    expect((await poll(polling_url)).body.status).toBe("Ready");
    // The inspection view shows the real state all along.
    expect(d.d.job(id)?.status).toBe("Ready");
  });

  it("D: an unknown status can be drawn for every new job (Task not found right after submit)", async () => {
    const d = await started({ renderTimeMs: RENDER_MS, unknownStatus: { status: "Task not found", polls: 1 } });
    const first = await submitOk(d, "gen-2-pro", PROMPT);
    expect((await poll(first.polling_url)).body.status).toBe("Task not found");
    expect((await poll(first.polling_url)).body.status).toBe("Pending");
    d.d.setUnknownStatus(null);
    const second = await submitOk(d, "gen-2-pro", PROMPT);
    expect((await poll(second.polling_url)).body.status).toBe("Pending");
  });
});

describe("D render time", () => {
  it("D: render time is drawn from the configured range, in virtual time", async () => {
    const d = await started({ renderTimeMs: { minMs: 1_000, maxMs: 3_000 } });
    const accepted = await Promise.all(Array.from({ length: 20 }, () => submitOk(d, "gen-2-compact-4b", { ...PROMPT, width: 64, height: 64 })));
    const renderTimes = accepted.map(({ id }) => {
      const job = d.d.job(id)!;
      return job.finishesAt - job.createdAt;
    });
    for (const renderTime of renderTimes) {
      expect(renderTime).toBeGreaterThanOrEqual(1_000);
      expect(renderTime).toBeLessThanOrEqual(3_000);
    }
    expect(new Set(renderTimes).size).toBeGreaterThan(1);
    d.sandbox.clock.advance(3_001);
    expect(d.d.jobs.every((job) => job.status === "Ready")).toBe(true);
  });

  it("D: the sandbox's time scale runs render time faster than real time", async () => {
    // 60 virtual seconds of rendering at 10,000x are 6 real milliseconds.
    const d = await started({ renderTimeMs: 60_000 }, 10_000);
    const { polling_url } = await submitOk(d, "gen-2-pro", PROMPT);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await poll(polling_url)).body.status).toBe("Ready");
  });

  it("D: configure changes options of the running emulator for jobs submitted from then on", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const before = await submitOk(d, "gen-2-pro", PROMPT);
    d.d.configure({ renderTimeMs: 500, balanceMicroUsd: 123_000 });
    expect(d.d.balanceMicroUsd).toBe(123_000);
    const after = await submitOk(d, "gen-2-pro", PROMPT);
    expect(d.d.job(before.id)!.finishesAt - d.d.job(before.id)!.createdAt).toBe(RENDER_MS);
    expect(d.d.job(after.id)!.finishesAt - d.d.job(after.id)!.createdAt).toBe(500);
  });

  it("D: the inspection API records the body, endpoint, charge, createdAt and readyAt", async () => {
    const d = await started({ renderTimeMs: RENDER_MS });
    const body = { ...PROMPT, width: 512, height: 512, seed: 3 };
    const { id, polling_url } = await submitOk(d, "gen-2-max", body);
    renderAll(d);
    await poll(polling_url);
    const job = d.d.jobs.find((each) => each.id === id)!;
    expect(job).toMatchObject({ endpoint: "gen-2-max", apiKey: D_KEY, body, chargeMicroUsd: 70_000, status: "Ready" });
    expect(job.readyAt).toBe(job.createdAt + RENDER_MS);
    expect(d.d.submitCount).toBe(1);
  });
});

import { describe, expect, it } from "vitest";
import { apiEvent, apiJob, chargeUnknownWords, costText, jobJson, OUTPUT_FOLDER, remoteEvents, remoteJob, serverPathsHidden } from "../../src/app/job-view.js";
import { spendPanel } from "../../src/server/dashboard/spend-view.js";
import type { Job, JobEvent, JobOutput } from "../../src/core/job.js";

const FOLDER = "/srv/mediagate/out";

/** A job saved under FOLDER, its reason and error naming the folder as a save's error does. */
function savedJob(overrides: Partial<Job> = {}): Job {
  return {
    id: "job_1",
    ref: "lh",
    batchId: null,
    provider: "d",
    model: "gen-2-pro",
    operation: null,
    body: { prompt: "a lighthouse" },
    facts: {},
    warnings: [],
    state: "capturing",
    reason: `rendered, but cannot write ${FOLDER}/lh.png: EACCES; saving again in 30 s`,
    attempts: 1,
    idempotencyKey: null,
    providerJobId: "d-1",
    handles: null,
    providerStatus: "Ready",
    estimateMicroUsd: 30_000,
    estimateSource: "pricing page",
    chargeMicroUsd: null,
    chargeSource: null,
    chargeState: "none",
    error: { code: "output_unwritable", message: `cannot write ${FOLDER}/lh.png`, detail: { folder: FOLDER } },
    outDir: FOLDER,
    leaseOwner: null,
    leaseExpiresAt: null,
    nextAttemptAt: 0,
    createdAt: 0,
    updatedAt: 0,
    submittedAt: 0,
    submitSentAt: 0,
    providerDoneAt: 0,
    finishedAt: null,
    trackingDeadlineAt: null,
    slotsHeld: [],
    lastPendingElapsedMs: null,
    pollFailures: 0,
    budgetId: null,
    budgetHeldMicroUsd: 0,
    blockedCode: "output_unwritable",
    route: null,
    tokenId: null,
    tenant: "local",
    notifyUrl: null,
    deadlineAt: null,
    queueRank: null,
    trace: null,
    ...overrides,
  };
}

const output: JobOutput = {
  index: 0,
  path: `${FOLDER}/lh.png`,
  url: "https://d.example/results/lh.png",
  contentType: "image/png",
  bytes: 123,
  sha256: "ab".repeat(32),
  metadata: {},
  media: { width: 512, height: 512 },
};

describe("a job's public view (the API, its events, the dashboard, notifications)", () => {
  it("an output is named by its API href and sha256, never by the server's path; the href is absolute under MEDIAGATE_PUBLIC_URL", () => {
    const relative = apiJob(savedJob({ state: "succeeded", reason: null, error: null }), [output], null);
    expect(relative.outputs[0]).toEqual({ url: output.url, content_type: "image/png", bytes: 123, sha256: output.sha256, width: 512, height: 512, href: "/v1/jobs/job_1/outputs/0" });
    expect(relative.outputs[0]).not.toHaveProperty("path");
    const absolute = apiJob(savedJob({ state: "succeeded" }), [output], "https://mediagate.example/base/");
    expect(absolute.outputs[0]!.href).toBe("https://mediagate.example/base/v1/jobs/job_1/outputs/0");
  });

  it("the server's output folder is named, not shown, in a job's reason, error message and error detail", () => {
    const shown = JSON.stringify(apiJob(savedJob(), [output], null));
    expect(shown).not.toContain(FOLDER);
    const job = remoteJob(savedJob());
    expect(job.reason).toBe(`rendered, but cannot write ${OUTPUT_FOLDER}/lh.png: EACCES; saving again in 30 s`);
    expect(job.error).toEqual({ code: "output_unwritable", message: `cannot write ${OUTPUT_FOLDER}/lh.png`, detail: { folder: OUTPUT_FOLDER } });
  });

  it("events lose their saved files' paths (the rest of the detail stays) and any mention of the folder", () => {
    const events: JobEvent[] = [
      { id: 1, jobId: "job_1", at: 0, fromState: "capturing", toState: "succeeded", reason: "saved 1 output(s)", detail: { outputs: [{ path: `${FOLDER}/lh.png`, bytes: 123, sha256: output.sha256 }] } },
      { id: 2, jobId: "job_1", at: 0, fromState: "capturing", toState: "capturing", reason: `cannot write ${FOLDER}/lh.png`, detail: null },
    ];
    const shown = remoteEvents(savedJob(), events);
    expect(shown[0]!.detail).toEqual({ outputs: [{ bytes: 123, sha256: output.sha256 }] });
    expect(shown[1]!.reason).toBe(`cannot write ${OUTPUT_FOLDER}/lh.png`);
    expect(JSON.stringify(shown)).not.toContain(FOLDER);
  });
});

describe("a charge not recorded, in words (issue 36, finding 5)", () => {
  it("finding 5: an unpriced job is unpriced, never 'none yet' or $0; an ended job never sent is none; an ended job sent is unknown; a live one is none yet", () => {
    const base = { estimateMicroUsd: 30_000, submittedAt: 1_000 };
    expect(chargeUnknownWords({ ...base, state: "succeeded", estimateMicroUsd: null })).toBe("unpriced (the provider publishes no price for it)");
    expect(chargeUnknownWords({ ...base, state: "running", estimateMicroUsd: null })).toBe("unpriced (the provider publishes no price for it)");
    expect(chargeUnknownWords({ ...base, state: "running" })).toBe("none yet");
    expect(chargeUnknownWords({ ...base, state: "failed", submittedAt: null })).toBe("none (never sent)");
    expect(chargeUnknownWords({ ...base, state: "unknown_submission", submittedAt: null })).toBe("unknown (not recorded)");
    expect(chargeUnknownWords({ ...base, state: "failed" })).toBe("unknown (not recorded)");
  });

  it("finding 5: the dashboard's spend panel says unpriced for a provider whose jobs have no price, and counts them beside a sum", () => {
    const day = Date.UTC(2026, 10, 29);
    const panel = String(
      spendPanel({
        days: [day],
        lines: [
          { day, provider: "d", settledMicroUsd: 30_000, estimatedMicroUsd: 30_000, unpricedJobs: 0 },
          { day, provider: "e", settledMicroUsd: 0, estimatedMicroUsd: 0, unpricedJobs: 2 },
        ],
      }),
    );
    expect(panel).toMatch(/<th scope="row">E<\/th><td class="num"><span class="unpriced">unpriced<\/span> <span class="muted">\(2 unpriced jobs\)<\/span><\/td>/);
    expect(panel).not.toMatch(/<th scope="row">E<\/th><td class="num">\$0/);
    expect(panel).toMatch(/settled <strong>\$0\.03\d* <span class="muted">\+ 2 unpriced jobs<\/span><\/strong>/);
  });
});

describe("a job's --json shape and cost (issue 35: the mutation run left these unchecked)", () => {
  it("a native job: its fields, outputs with path, a url with no signature shown, media and seed (the provider's, else the one sent), its cost", () => {
    const job = savedJob({ state: "succeeded", error: null, body: { prompt: "a lighthouse", seed: 7 }, chargeMicroUsd: 30_000, chargeSource: "computed" });
    const signed = { ...output, url: "https://d.example/results/lh.png?sig=secret", metadata: { seed: 42 } };
    expect(jobJson(job, [signed, { ...output, index: 1 }])).toEqual({
      id: "job_1",
      ref: "lh",
      provider: "d",
      model: "gen-2-pro",
      state: "succeeded",
      provider_job_id: "d-1",
      outputs: [
        // A signature left in an older row is shown cut (displayUrl), never whole.
        { path: `${FOLDER}/lh.png`, url: "https://d.example/results/lh.png?…", content_type: "image/png", bytes: 123, sha256: output.sha256, width: 512, height: 512, seed: 42 },
        { path: `${FOLDER}/lh.png`, url: "https://d.example/results/lh.png", content_type: "image/png", bytes: 123, sha256: output.sha256, width: 512, height: 512, seed: 7 },
      ],
      error: null,
      cost: { estimate_micro_usd: 30_000, charge_micro_usd: 30_000, source: "computed" },
    });
    expect(jobJson(savedJob({ body: {} }), [output]).outputs[0]).not.toHaveProperty("seed");
    expect(jobJson(savedJob(), []).error).toEqual({ code: "output_unwritable", message: `cannot write ${FOLDER}/lh.png` });
    expect(jobJson(savedJob({ chargeSource: null }), []).cost.source).toBe("pricing page");
  });

  it("a routed job: its target now, and every target tried in order, the last being this one with its state", () => {
    const route = {
      current: "d/gen-2-pro",
      next: [],
      tried: [{ name: "c/v6", provider: "c" as const, model: "v6", providerJobId: null, reason: "C refused it before accepting", at: 0 }],
      failingSince: null,
      routeBy: "order" as const,
      fallbackOnFailure: false,
    };
    const json = jobJson(savedJob({ route: route as unknown as Job["route"], state: "running" }), []);
    expect(json.target).toBe("d/gen-2-pro");
    expect(json.attempts).toEqual([
      { target: "c/v6", provider: "c", model: "v6", provider_job_id: null, outcome: "C refused it before accepting" },
      { target: "d/gen-2-pro", provider: "d", model: "gen-2-pro", provider_job_id: "d-1", outcome: "running" },
    ]);
    expect(jobJson(savedJob(), [])).not.toHaveProperty("attempts");
  });

  it("a cost in words: the charge, else ~ the estimate, else unpriced", () => {
    expect(costText({ chargeMicroUsd: 30_000, estimateMicroUsd: 40_000 })).toBe("$0.0300");
    expect(costText({ chargeMicroUsd: null, estimateMicroUsd: 40_000 })).toBe("~$0.0400");
    expect(costText({ chargeMicroUsd: null, estimateMicroUsd: null })).toBe("unpriced");
  });

  it("a job without an output folder hides nothing", () => {
    expect(serverPathsHidden({ outDir: "" })("a /srv path")).toBe("a /srv path");
    expect(serverPathsHidden({ outDir: "/srv/out/" })("cannot write /srv/out/a.png")).toBe(`cannot write ${OUTPUT_FOLDER}/a.png`);
  });
});

describe("the API's view of times, events and the folder (issue 35, mutation survivors)", () => {
  it("finished_at is null until the job ends, then its time; created and updated are times", () => {
    expect(apiJob(savedJob({ finishedAt: null }), [], null).finished_at).toBeNull();
    const ended = apiJob(savedJob({ state: "succeeded", createdAt: 1_000, updatedAt: 2_000, finishedAt: 3_000 }), [], null);
    expect(ended).toMatchObject({ created_at: "1970-01-01T00:00:01.000Z", updated_at: "1970-01-01T00:00:02.000Z", finished_at: "1970-01-01T00:00:03.000Z" });
  });

  it("an event is its time, its states, its reason and its detail (null when it has none)", () => {
    const event = { id: 1, jobId: "job_1", at: 5_000, fromState: "queued", toState: "submitting", reason: "claimed" } as JobEvent;
    expect(apiEvent(event)).toEqual({ at: "1970-01-01T00:00:05.000Z", from: "queued", to: "submitting", reason: "claimed", detail: null });
    expect(apiEvent({ ...event, detail: { attempt: 2 } }).detail).toEqual({ attempt: 2 });
  });

  it("a folder given with trailing slashes is hidden as the folder; a job with no error keeps none", () => {
    const hide = serverPathsHidden({ outDir: `${FOLDER}//` });
    expect(hide(`cannot write ${FOLDER}/lh.png`)).toBe(`cannot write ${OUTPUT_FOLDER}/lh.png`);
    expect(remoteJob(savedJob({ error: null })).error).toBeNull();
  });

  it("an event's detail keeps what is not a plain object as it is, and drops `path` only from plain objects", () => {
    const dated = new Date(0);
    const [event] = remoteEvents({ outDir: FOLDER }, [{ id: 1, jobId: "job_1", at: 0, fromState: "capturing", toState: "succeeded", reason: "saved", detail: { outputs: [{ path: `${FOLDER}/lh.png`, bytes: 4 }], when: dated, note: "plain" } } as JobEvent]);
    expect(event!.detail).toMatchObject({ outputs: [{ bytes: 4 }], note: "plain" });
    expect((event!.detail as { outputs: object[] }).outputs[0]).not.toHaveProperty("path");
  });
});

import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { type Clock, systemClock } from "../../src/core/clock.js";
import type { Job, JobRoute, RouteStep } from "../../src/core/job.js";
import type { EngineContext } from "../../src/engine/context.js";
import { fallOver } from "../../src/engine/fallover.js";
import { createLogger } from "../../src/engine/logger.js";
import { PollScheduler } from "../../src/engine/polling.js";
import { Mediagate } from "../../src/index.js";
import { localFolderOutputs } from "../../src/outputs/local-folder.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { openStore } from "../../src/store/open.js";
import type { Store } from "../../src/store/store.js";
import { freshStoreEachTest, newDJob, storeFactories } from "../helpers/stores.js";
import { startWorld, type World } from "../helpers/world.js";

/**
 * What a fall-over writes (issue 36, finding 12: the mutation run found it
 * checked only by CLI runs in child processes): the next target's request,
 * the route moved on with the target left recorded and why, a fresh attempt,
 * and the hand-over in the job's event log.
 */
let world: World | undefined;
let gate: Mediagate | undefined;
afterEach(async () => {
  await gate?.close();
  gate = undefined;
  await world?.close();
  world = undefined;
});

const ROUTE = ["d/gen-2-pro", "f/img-v2"];

describe("a fall-over to the next target (in-process engine, real sandbox and store)", { timeout: 60_000 }, () => {
  it("D out of credits: the job that met the refusal and the ones queued behind it move to F, each with D recorded as tried and why, a fresh attempt, and the hand-over in its events; a job with no target left fails", async () => {
    const emulators = createAllEmulators({ d: { renderTimeMs: 200, balanceMicroUsd: 0 }, f: { renderMs: { min: 200, max: 300 } } });
    world = await startWorld(emulators.list);
    gate = await Mediagate.open({ env: world.env, runEngine: false });
    const routed = [];
    for (const prompt of ["a fox", "a heron", "a lynx"]) routed.push(await gate.submit({ task: "image", prompt, size: "1024x768", route: ROUTE }));
    const alone = await gate.submit({ task: "image", prompt: "a wren", size: "1024x768", route: ["d/gen-2-pro"] });
    await gate.close();
    gate = await Mediagate.open({ env: world.env });
    const ended = await Promise.all(routed.map((job) => gate!.wait(job.id)));
    for (const job of ended) {
      expect(job).toMatchObject({ state: "succeeded", provider: "f", model: "img-v2", attempts: 1 });
      expect(job.route!.current).toBe("f/img-v2");
      expect(job.route!.next).toEqual([]);
      expect(job.route!.failingSince).toBeNull();
      expect(job.route!.tried).toEqual([
        { name: "d/gen-2-pro", provider: "d", model: "gen-2-pro", providerJobId: null, reason: expect.stringMatching(/^D (refused it before accepting|is halted)/), at: expect.any(Number) },
      ]);
    }
    // The one with no target left is not moved: it ends (or waits) at D, never sent anywhere else.
    const left = await gate.wait(alone.id);
    expect(left.provider).toBe("d");
    expect(left.route!.tried).toEqual([]);
    expect(["failed", "queued"]).toContain(left.state);

    const store = await openStore(world.env.MEDIAGATE_STORE!);
    try {
      for (const job of ended) {
        const handed = (await store.events(job.id)).filter((event) => (event.detail as { fallover?: unknown } | null)?.fallover !== undefined);
        expect(handed).toHaveLength(1);
        expect(handed[0]!.toState).toBe("queued");
        expect(handed[0]!.reason).toMatch(/^handed from d\/gen-2-pro to f\/img-v2: D /);
        expect((handed[0]!.detail as { fallover: { from: string; to: string; why: string } }).fallover).toMatchObject({ from: "d/gen-2-pro", to: "f/img-v2", why: job.route!.tried[0]!.reason });
      }
    } finally {
      await store.close();
    }
    // D accepted none (the jobs claimed together each met its refusal); F was sent the three routed ones only.
    expect(emulators.d.jobs).toHaveLength(0);
    expect(world.sandbox.requests().filter((entry) => entry.provider === "f" && entry.method === "POST")).toHaveLength(3);
  });
});

// fallOver as the engine's steps call it (the halts' reroute from the queue, a refused submit, a failed generation), on a
// real store: what the moved job holds, what its event says, and that a job not in the state and lease the caller
// expects is left as it is (another engine claimed or moved it first).
const OWNER = "mg:test:1:fallover";
const OTHER_OWNER = "mg:test:2:fallover";
const NOW = 1_800_000_000_000;

const F_STEP: RouteStep = {
  name: "f/img-v2",
  provider: "f",
  model: "img-v2",
  operation: "text-to-image",
  body: { prompt: "a fox", aspect: "4:3" },
  facts: { outputs: 1 },
  warnings: ["F rounds the size to 4:3"],
  estimateMicroUsd: 41_000,
  estimateSource: "F price list",
};
const G_STEP: RouteStep = { ...F_STEP, name: "a/pix-1", provider: "a", model: "pix-1", operation: null, body: { text: "a fox" }, warnings: [], estimateMicroUsd: 12_000, estimateSource: "A price list" };

function routeOf(next: RouteStep[]): JobRoute {
  return { current: "d/gen-2-pro", next, tried: [], fallbackOnFailure: true, failingSince: NOW - 90_000 };
}

interface Bed {
  context: EngineContext;
  emitted: Array<Job | null>;
  warnings: Array<Record<string, unknown>>;
  wakes: number;
}

/** An engine's context on `store`, owned by `owner`, its clock standing still at NOW; it keeps what it emits, logs and wakes. */
function engineOn(store: Store, owner = OWNER): Bed {
  const clock: Clock = { now: () => NOW, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
  const bed: Bed = { context: undefined as unknown as EngineContext, emitted: [], warnings: [], wakes: 0 };
  const destination = new Writable({
    write(chunk, _encoding, done) {
      bed.warnings.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  bed.context = {
    store,
    clock,
    owner,
    leaseMs: 30_000,
    fallbackAfterMs: 60_000,
    log: createLogger({ level: "warn", secrets: () => [], destination }),
    polls: new PollScheduler(store),
    outputs: localFolderOutputs,
    adapter: () => {
      throw new Error("a fall-over calls no provider");
    },
    callContext: async () => {
      throw new Error("a fall-over calls no provider");
    },
    counters: () => ({ requests: 0, status429: 0, backpressure: 0, submits: 0, polls: 0, downloads: 0, claims: 0, claimsLost: 0 }),
    timed: (_provider, _step, call) => call(),
    emit: (job) => bed.emitted.push(job),
    wake: () => {
      bed.wakes++;
    },
    haltsChanged: () => undefined,
    takeKnownStatus: () => undefined,
    signal: new AbortController().signal,
    stopWaiting: new AbortController().signal,
    givenUp: () => false,
  };
  return bed;
}

/** The move's event: the last of the job's events. */
async function lastEvent(store: Store, jobId: string) {
  return (await store.events(jobId)).at(-1)!;
}

for (const factory of storeFactories) {
  describe(`fallOver on ${factory.name}: the job moved to the next target, or left as it is`, () => {
    let store: Store;
    freshStoreEachTest(factory, (opened) => {
      store = opened;
    });

    async function queued(next: RouteStep[] | null): Promise<Job> {
      const [inserted] = await store.insertJobs([newDJob("fox", { route: next === null ? null : routeOf(next) })], NOW - 60_000);
      return inserted!.job;
    }

    /** The job claimed by `owner` for its submit, as the engine claims it, with a try, a key and a sent time recorded. */
    async function claimed(job: Job, owner = OWNER): Promise<Job> {
      const claim = await store.claimForSubmit(job.id, owner, [], NOW - 5_000, 30_000);
      if (claim.kind !== "claimed") throw new Error(`not claimed: ${claim.kind}`);
      return (await store.updateJob(job.id, { state: "submitting" }, { attempts: 3, idempotencyKey: "key-1", submitSentAt: NOW - 4_000 }, NOW - 4_000))!;
    }

    it("a queued job (the halts' reroute) moves to the next target: its request, estimate and route become that target's, D recorded as tried and why; the event says from, to and why, without a detail when none was given", async () => {
      const job = await queued([F_STEP, G_STEP]);
      // Two of its tenant's jobs wait at F already: it joins the end of that line (its queue position, issue 37).
      await store.insertJobs([newDJob("f-1", { provider: "f", model: "img-v2" }), newDJob("f-2", { provider: "f", model: "img-v2" })], NOW - 30_000);
      const engine = engineOn(store);
      expect(await fallOver(engine.context, job, "queued", "D is halted (insufficient_credits: no credits)")).toBe(true);

      const moved = (await store.getJob(job.id))!;
      const reason = "handed from d/gen-2-pro to f/img-v2: D is halted (insufficient_credits: no credits)";
      expect(moved).toMatchObject({
        state: "queued",
        provider: "f",
        model: "img-v2",
        operation: "text-to-image",
        body: F_STEP.body,
        facts: F_STEP.facts,
        warnings: F_STEP.warnings,
        estimateMicroUsd: 41_000,
        estimateSource: "F price list",
        attempts: 0,
        leaseOwner: null,
        nextAttemptAt: NOW,
        queueRank: 3,
        reason,
      });
      expect(moved.route).toEqual({
        current: "f/img-v2",
        next: [G_STEP],
        tried: [{ name: "d/gen-2-pro", provider: "d", model: "gen-2-pro", providerJobId: null, reason: "D is halted (insufficient_credits: no credits)", at: NOW }],
        fallbackOnFailure: true,
        failingSince: null,
      });
      const event = await lastEvent(store, job.id);
      expect(event).toMatchObject({ fromState: "queued", toState: "queued", reason, at: NOW });
      expect(event.detail).toEqual({ fallover: { from: "d/gen-2-pro", to: "f/img-v2", why: "D is halted (insufficient_credits: no credits)" } });
      // Listeners are told, the loop is woken for the job now due, and the hand-over is logged as a warning.
      expect(engine.emitted).toEqual([moved]);
      expect(engine.wakes).toBe(1);
      expect(engine.warnings).toHaveLength(1);
      expect(engine.warnings[0]).toMatchObject({ level: 40, jobId: job.id, from: "d/gen-2-pro", to: "f/img-v2", msg: reason });
    });

    it("a refused submit (the job leased to this engine) starts afresh at the next target: no try, key, sent time or lease left of D; the provider's answer is kept in the event's detail", async () => {
      const job = await claimed(await queued([F_STEP]));
      const engine = engineOn(store);
      const detail = { httpStatus: 402, providerCode: "insufficient_credits", body: '{"error":"no credits"}' };
      expect(await fallOver(engine.context, job, "submitting", "D refused it before accepting (insufficient_credits: no credits)", detail)).toBe(true);

      const moved = (await store.getJob(job.id))!;
      expect(moved).toMatchObject({ state: "queued", provider: "f", attempts: 0, idempotencyKey: null, submitSentAt: null, leaseOwner: null, leaseExpiresAt: null, nextAttemptAt: NOW });
      expect(moved.route).toMatchObject({ current: "f/img-v2", next: [], failingSince: null });
      const event = await lastEvent(store, job.id);
      expect(event).toMatchObject({ fromState: "submitting", toState: "queued" });
      expect(event.detail).toEqual({ fallover: { from: "d/gen-2-pro", to: "f/img-v2", why: "D refused it before accepting (insufficient_credits: no credits)", detail } });
    });

    it("a generation that failed at no cost (running, leased to this engine) moves on with the provider's job id recorded in the route's tried, and no longer on the job", async () => {
      const sent = await claimed(await queued([F_STEP]));
      const running = (await store.transition(sent.id, { state: "submitting", leaseOwner: OWNER }, "running", { providerJobId: "d-job-7", submittedAt: NOW - 3_000 }, "accepted", NOW - 3_000))!;
      const engine = engineOn(store);
      expect(await fallOver(engine.context, running, "running", "D failed the generation (content_filtered: refused), which cost nothing; fallback_on_failure", { raw: { status: "failed" } })).toBe(true);

      const moved = (await store.getJob(sent.id))!;
      expect(moved).toMatchObject({ state: "queued", provider: "f", providerJobId: null, submittedAt: null });
      expect(moved.route!.tried).toEqual([
        { name: "d/gen-2-pro", provider: "d", model: "gen-2-pro", providerJobId: "d-job-7", reason: "D failed the generation (content_filtered: refused), which cost nothing; fallback_on_failure", at: NOW },
      ]);
      expect((await lastEvent(store, sent.id)).fromState).toBe("running");
    });

    it("a job without a route, or with no target left, is not moved (false): the caller ends it as without a route", async () => {
      const engine = engineOn(store);
      for (const job of [await queued(null), (await store.insertJobs([newDJob("heron", { route: routeOf([]) })], NOW - 60_000))[0]!.job]) {
        const events = await store.events(job.id);
        expect(await fallOver(engine.context, job, "queued", "D is halted")).toBe(false);
        expect(await store.getJob(job.id)).toEqual(job);
        expect(await store.events(job.id)).toEqual(events);
      }
      expect(engine.emitted).toEqual([]);
      expect(engine.wakes).toBe(0);
      expect(engine.warnings).toEqual([]);
    });

    it("a queued job another engine claimed meanwhile (the halts' page read before the claim) is left with that engine: false, nothing written, told or woken", async () => {
      const job = await queued([F_STEP]);
      const taken = await claimed(job, OTHER_OWNER);
      const engine = engineOn(store);
      expect(await fallOver(engine.context, job, "queued", "D is halted")).toBe(false);
      expect(await store.getJob(job.id)).toEqual(taken);
      expect((await lastEvent(store, job.id)).reason).not.toMatch(/^handed from/);
      expect(engine.emitted).toEqual([]);
      expect(engine.wakes).toBe(0);
      expect(engine.warnings).toEqual([]);
    });

    it("a job another engine holds (its lease, not this engine's) is not moved by this one: false, nothing written", async () => {
      const job = await claimed(await queued([F_STEP]), OTHER_OWNER);
      const engine = engineOn(store);
      expect(await fallOver(engine.context, job, "submitting", "D refused it before accepting (insufficient_credits: no credits)")).toBe(false);
      expect(await store.getJob(job.id)).toEqual(job);
      expect(engine.emitted).toEqual([]);
    });

    it("a queued job another engine moved on meanwhile is not moved back from a stale copy (two engines rerouting the same halted provider): false, the job stays on the target it reached", async () => {
      const job = await queued([F_STEP, G_STEP]);
      const first = engineOn(store);
      expect(await fallOver(first.context, job, "queued", "D is halted")).toBe(true);
      // F is halted too: the first engine moves the job on again, to A.
      expect(await fallOver(first.context, (await store.getJob(job.id))!, "queued", "F is halted")).toBe(true);
      const atA = (await store.getJob(job.id))!;
      const eventsAtA = await store.events(job.id);
      // The second engine read its page of D's routed jobs before the first moved this one.
      const second = engineOn(store, OTHER_OWNER);
      expect(await fallOver(second.context, job, "queued", "D is halted")).toBe(false);
      expect(await store.getJob(job.id)).toEqual(atA);
      expect(atA.route).toMatchObject({ current: "a/pix-1", next: [] });
      expect(atA.route!.tried.map((attempt) => attempt.name)).toEqual(["d/gen-2-pro", "f/img-v2"]);
      expect(await store.events(job.id)).toEqual(eventsAtA);
      expect(second.emitted).toEqual([]);
    });

    it("a job moved on already is not moved again from the same snapshot (a second target never skipped): the second call answers false", async () => {
      const job = await claimed(await queued([F_STEP, G_STEP]));
      const engine = engineOn(store);
      expect(await fallOver(engine.context, job, "submitting", "D refused it before accepting (insufficient_credits: no credits)")).toBe(true);
      const moved = (await store.getJob(job.id))!;
      expect(await fallOver(engine.context, job, "submitting", "D refused it before accepting (insufficient_credits: no credits)")).toBe(false);
      expect(await store.getJob(job.id)).toEqual(moved);
      expect(moved.route!.current).toBe("f/img-v2");
      expect(engine.emitted).toEqual([moved]);
      expect(engine.wakes).toBe(1);
    });
  });
}

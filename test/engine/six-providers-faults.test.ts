import { describe, it } from "vitest";
import { isTerminal, type Job } from "../../src/core/job.js";
import type { ProviderId } from "../../src/providers/adapter.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import type { FDeliveryFault } from "../../src/sandbox/f/index.js";
import type { FaultRule } from "../../src/sandbox/faults.js";
import type { Store } from "../../src/store/store.js";
import { fullDiskFor } from "../helpers/full-disk.js";
import { checkInvariants } from "../helpers/invariants.js";
import { sqliteFactory, storeFactories, type StoreFactory } from "../helpers/stores.js";
import { servedEngine } from "../helpers/webhook-server.js";
import { markerOf, PROVIDERS, READ_PATH, requestFor, RESULT_PATH, seededRandom, SUBMIT_PATH } from "../helpers/six-providers.js";
import { startWorld, type World } from "../helpers/world.js";

/**
 * Virtual time runs 20 times faster than real time: E's 4 requests a minute
 * keep a 50 ms real margin (more than loopback jitter), and a run of a few
 * virtual minutes takes seconds.
 */
const TIME_SCALE = 20;
const JOBS_PER_PROVIDER = 4;
/** Providers without idempotency: a submit whose answer is lost ends `unknown_submission`, never resent. */
const NOT_IDEMPOTENT = ["a", "c", "d", "e", "f"] as const;
/** The HTTP client gives up on an answer after 30 s of real time; a hung answer waits a little longer. */
const HUNG_MS = 30_500;
/** B's result links expire early: 10 virtual seconds instead of an hour. */
const B_LINK_TTL_MS = 10_000;
/** Real-time bound of one run (a hung answer alone takes 30 s). */
const RUN_BOUND_MS = 80_000;

/** What a seed draws: every fault bounded by a count, the outage by a virtual deadline. */
interface FaultPlan {
  rules: FaultRule[];
  fDeliveryFaults: FDeliveryFault[];
  /** When the whole host goes down, and for how long (virtual ms after the engine starts). */
  outage: { atMs: number; forMs: number };
  fullDiskWrites: number;
}

function drawFaults(seed: number, options: { hang: boolean }): FaultPlan {
  const random = seededRandom(seed);
  const between = (min: number, max: number) => Math.round(min + random() * (max - min));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const some = <T>(items: readonly T[], count: number): T[] => [...items].sort(() => random() - 0.5).slice(0, count);
  const rules: FaultRule[] = [];
  // 5xx bursts: on submits (a refusal: sent again later), on reads and on downloads (resent).
  for (const provider of some(PROVIDERS, 3)) {
    rules.push({ provider, method: "POST", path: SUBMIT_PATH[provider], fault: { kind: "status", status: pick([502, 503]) }, times: between(1, 2) });
  }
  for (const provider of some(PROVIDERS, 3)) {
    rules.push({ provider, method: "GET", path: READ_PATH[provider], fault: { kind: "status", status: pick([500, 502, 503]) }, times: between(1, 3) });
  }
  for (const provider of some(PROVIDERS, 2)) {
    rules.push({ provider, method: "GET", path: RESULT_PATH[provider], fault: { kind: "status", status: pick([500, 503]) }, times: between(1, 5) });
  }
  // Slow answers (none on A when one of its reads hangs, so the hung read is A's only delayed one).
  for (const provider of some(options.hang ? PROVIDERS.filter((id) => id !== "a") : PROVIDERS, 3)) {
    rules.push({ provider, path: pick([READ_PATH[provider], SUBMIT_PATH[provider]]), fault: { kind: "delay", ms: between(100, 400) }, times: between(1, 3) });
  }
  // Connection resets: a read (resent), a submit cut before it was handled, and submits cut after (B: same key; others: unknown).
  const readDropped = pick(PROVIDERS);
  rules.push({ provider: readDropped, method: "GET", path: READ_PATH[readDropped], fault: { kind: "drop" }, times: 1 });
  const [cutBefore, cutAfter] = some(NOT_IDEMPOTENT, 2) as [ProviderId, ProviderId];
  rules.push({ provider: cutBefore, method: "POST", path: SUBMIT_PATH[cutBefore], fault: { kind: "drop" }, times: 1 });
  rules.push({ provider: cutAfter, method: "POST", path: SUBMIT_PATH[cutAfter], fault: { kind: "drop_after_handling" }, times: 1 });
  rules.push({ provider: "b", method: "POST", path: SUBMIT_PATH.b, fault: { kind: "drop_after_handling" }, times: 1 });
  // B's result links live 10 virtual seconds: one download arrives after its link expired (B hands out a fresh one on every read).
  rules.push({ provider: "b", method: "GET", path: RESULT_PATH.b, fault: { kind: "delay", ms: B_LINK_TTL_MS / TIME_SCALE + 200 }, times: 1 });
  // A hung answer: the client's timeout ends it, and the read is resent (A's links live a day, so nothing expires meanwhile).
  if (options.hang) rules.push({ provider: "a", method: "GET", path: READ_PATH.a, fault: { kind: "delay", ms: HUNG_MS }, times: 1 });
  const fDeliveryFaults = some<FDeliveryFault>([{ kind: "drop" }, { kind: "duplicate" }, { kind: "delay", ms: between(10_000, 30_000) }, { kind: "reserialize" }], 4);
  // The first rule that matches a request applies: the cuts, the hang and the late download go first, so each one meets
  // a provider's first request of its kind, which every run makes (later ones may be held back by the budget).
  const first = new Set<FaultRule["fault"]["kind"]>(["drop", "drop_after_handling"]);
  const leading = rules.filter((rule) => first.has(rule.fault.kind) || (rule.fault.kind === "delay" && rule.fault.ms > 400));
  return { rules: [...leading, ...rules.filter((rule) => !leading.includes(rule))], fDeliveryFaults, outage: { atMs: between(15_000, 45_000), forMs: between(5_000, 15_000) }, fullDiskWrites: between(2, 4) };
}

function emulatorsFor(): ReturnType<typeof createAllEmulators> {
  return createAllEmulators({
    a: { queueMs: 1_000, renderMs: { min: 10_000, max: 30_000 } },
    b: {
      queueTimeMs: 1_000,
      renderTimeMs: { minMs: 5_000, maxMs: 15_000 },
      resultUrlTtlMs: B_LINK_TTL_MS,
      webhookFaults: { duplicateProbability: 0.3, dropProbability: 0.25, reserializeProbability: 0.3 },
      // The engine verifies deliveries on the sandbox's clock (20×), so B and F sign on it too.
      webhookTimestamps: "virtual",
    },
    // Refusals as HTTP statuses, so the sandbox's log tells a refused submit from an accepted one.
    c: { renderMs: { min: 10_000, max: 30_000 }, errorHttpStatus: "by-error" },
    d: { renderTimeMs: { minMs: 2_000, maxMs: 8_000 }, unknownStatus: { status: "Processing", polls: 2, probability: 0.5 } },
    e: { renderMs: { min: 5_000, max: 15_000 } },
    f: { renderMs: { min: 5_000, max: 15_000 }, webhookTimestampClock: "virtual" },
  });
}

/** Every job ended (its charge settled where the provider settles later) or held back by its budget, three looks in a row (longer than a budget re-check). */
async function untilQuiet(store: Store, ids: string[], boundMs: number): Promise<Job[]> {
  const deadline = Date.now() + boundMs;
  const quiet = (jobs: Job[]) =>
    jobs.every((job) => (isTerminal(job.state) && job.chargeState !== "pending" && job.chargeState !== "unavailable") || (job.state === "queued" && job.blockedCode === "over_budget"));
  let streak = 0;
  let jobs: Job[] = [];
  while (Date.now() < deadline) {
    jobs = await store.listJobs({ ids });
    streak = quiet(jobs) ? streak + 1 : 0;
    if (streak >= 3) return jobs;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const open = jobs.filter((job) => !quiet([job])).map((job) => `${job.ref}: ${job.state}/${job.chargeState} ${job.reason ?? ""}`);
  throw new Error(`the run did not settle in ${boundMs} ms:\n${open.join("\n")}`);
}

/** The hung read was handled by the sandbox: its client gave up (timed out), which releases it. */
function hungAnswerHandled(sandbox: World["sandbox"]): boolean {
  return sandbox.requests().some((entry) => entry.fault === "delay" && entry.provider === "a" && READ_PATH.a.test(entry.url) && entry.statusCode !== undefined);
}

/** Waits until `condition` holds, or the bound passes (then the run goes on: what it checks is asserted afterwards). */
async function waitUpTo(condition: () => boolean, boundMs: number): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** A world with all six emulators, the real server for their webhooks, and an engine on virtual time with a disk that is full at first. */
async function faultedRun(factory: StoreFactory, seed: number, options: { hang: boolean }, onFinished: (close: () => Promise<void>) => void) {
  const { store, cleanup } = await factory.open();
  const plan = drawFaults(seed, options);
  const emulators = emulatorsFor();
  const world = await startWorld(emulators.list, { timeScale: TIME_SCALE, seed });
  const { sandbox } = world;
  const clock = sandbox.clock;
  const outputs = fullDiskFor(plan.fullDiskWrites);
  const { engine, enqueue, server } = await servedEngine(world, store, { virtualTime: true, outputs });
  onFinished(async () => {
    await server.close();
    await cleanup();
    await world.close();
  });

  for (const rule of plan.rules) sandbox.injectFault(rule);
  for (const fault of plan.fDeliveryFaults) emulators.f.injectDeliveryFault(fault, 1);
  emulators.d.injectUnknownStatus("Task not found", 1, 1);
  emulators.e.injectUnknownStatus("queued", 8_000, 1);

  // One mixed batch, the providers interleaved, under a budget half a priced job short of the whole.
  const jobs: Job[] = [];
  for (let index = 0; index < JOBS_PER_PROVIDER; index++) {
    for (const provider of PROVIDERS) {
      const ref = `s${seed}-${provider}-${index}`;
      jobs.push(await enqueue(requestFor(provider, ref, index), ref, { budgetId: "faults" }));
    }
  }
  const estimates = jobs.map((job) => job.estimateMicroUsd ?? 0);
  await store.setBudget("faults", estimates.reduce((sum, value) => sum + value, 0) - Math.ceil(Math.max(...estimates) / 2), clock.now());

  engine.start();
  const outage = (async () => {
    // An outage cuts every connection: it comes after the cuts met the requests they were meant for (a submit cut by the
    // outage instead ends unknown and is never sent again), and after the hung answer ran into the client's timeout.
    const cuts = plan.rules.filter((rule) => rule.fault.kind === "drop" || rule.fault.kind === "drop_after_handling").length;
    await waitUpTo(() => sandbox.requests().filter((entry) => entry.fault === "drop" || entry.fault === "drop_after_handling").length >= cuts, RUN_BOUND_MS);
    if (options.hang) await waitUpTo(() => hungAnswerHandled(sandbox), RUN_BOUND_MS);
    await clock.sleep(plan.outage.atMs);
    await sandbox.startOutage();
    await clock.sleep(plan.outage.forMs);
    await sandbox.endOutage();
  })();
  let finished: Job[];
  try {
    finished = await untilQuiet(store, jobs.map((job) => job.id), RUN_BOUND_MS);
  } finally {
    await outage;
    await engine.stop();
    // Closing the server writes its refusal counters (refused deliveries are counted, not stored one by one).
    await server.close();
  }
  return { store, emulators, sandbox, outputs, plan, finished, outDir: world.env.MEDIAGATE_OUTPUT_DIR! };
}

const runs: Array<{ factory: StoreFactory; seed: number; hang: boolean }> = [
  { factory: sqliteFactory, seed: 1, hang: true },
  { factory: sqliteFactory, seed: 2, hang: false },
  { factory: sqliteFactory, seed: 3, hang: false },
  ...storeFactories.filter((factory) => factory.name === "postgres").map((factory) => ({ factory, seed: 4, hang: false })),
];

describe("six providers at once under seeded faults (virtual time, real sandbox, webhooks through the real server)", () => {
  // Concurrently: the hung answer keeps its run waiting 30 s of real time, while the others work.
  for (const { factory, seed, hang } of runs) {
    it.concurrent(
      `seed ${seed} (${factory.name}${hang ? ", a hung answer" : ""}): every job ends or waits on its budget, none is submitted or charged twice, limits and budget hold, every file is whole`,
      async ({ expect, onTestFinished }) => {
        const { store, emulators, sandbox, outputs, plan, finished, outDir } = await faultedRun(factory, seed, { hang }, onTestFinished);
        const violations = await checkInvariants({ store, sandbox, emulators, markerOf, budgetId: "faults", outputDirs: [outDir] });
        expect(violations).toEqual([]);

        // Every fault was recoverable: nothing failed. Only a submit whose outcome the engine could not know (a cut connection,
        // the outage, F's 502) may be unknown, and only on a provider without idempotency; the rest waits on its budget.
        const outcomes = finished.map((job) => `${job.ref}: ${job.state}${job.error ? ` (${job.error.code}: ${job.error.message})` : ""}`);
        for (const job of finished) {
          if (job.state === "succeeded") continue;
          if (job.state === "unknown_submission") expect(NOT_IDEMPOTENT as readonly string[], outcomes.join("\n")).toContain(job.provider);
          else expect([job.state, job.blockedCode], outcomes.join("\n")).toEqual(["queued", "over_budget"]);
        }
        expect(finished.filter((job) => job.state === "queued").length, outcomes.join("\n")).toBeGreaterThanOrEqual(1);

        // The faults happened: the disk was full, deliveries arrived through the server, each kind of fault met a request.
        expect(outputs.refused).toBe(plan.fullDiskWrites);
        // Every delivery `mediagate serve` accepted (2xx) was recorded and applied (a re-serialised F body is refused). The
        // senders are read first: a delivery they saw answered was recorded before its answer left.
        const accepted = (statusCode: number | null | undefined) => typeof statusCode === "number" && statusCode >= 200 && statusCode < 300;
        const acceptedFromB = new Set(emulators.b.deliveries.filter((delivery) => delivery.attempts.some((attempt) => accepted(attempt.statusCode))).map((delivery) => delivery.messageId));
        const acceptedFromF = new Set(emulators.f.deliveries().filter((attempt) => accepted(attempt.statusCode)).map((attempt) => attempt.generationId));
        const applied = async (provider: "b" | "f") => (await store.deliveries({ provider })).filter((delivery) => delivery.outcome === "applied").length;
        expect(await applied("b")).toBeGreaterThanOrEqual(acceptedFromB.size);
        expect(await applied("f")).toBeGreaterThanOrEqual(acceptedFromF.size);
        expect(acceptedFromB.size + acceptedFromF.size).toBeGreaterThanOrEqual(1);
        const faulted = new Set(sandbox.requests().map((entry) => entry.fault).filter(Boolean));
        expect([...faulted].sort()).toEqual(["delay", "drop", "drop_after_handling", "status"]);
        if (hang) {
          // The hung read was given up by the client's timeout and read again.
          const reads = sandbox.requests().filter((entry) => entry.provider === "a" && entry.method === "GET" && READ_PATH.a.test(entry.url));
          const hung = reads.findIndex((entry) => entry.fault === "delay");
          expect(hung).toBeGreaterThanOrEqual(0);
          expect(reads.slice(hung + 1).some((entry) => entry.url === reads[hung]!.url)).toBe(true);
        }
      },
      RUN_BOUND_MS + 20_000,
    );
  }
});

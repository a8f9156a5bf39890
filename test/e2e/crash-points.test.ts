import { existsSync, readdirSync } from "node:fs";
import { describe, it } from "vitest";
import { isTerminal, type Job } from "../../src/core/job.js";
import type { ProviderId } from "../../src/providers/adapter.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import type { LoggedRequest } from "../../src/sandbox/request-log.js";
import { openStore } from "../../src/store/open.js";
import { startEngineProcess } from "../helpers/engine-process.js";
import { checkInvariants, providerTasks } from "../helpers/invariants.js";
import { markerOf, PROVIDERS, requestFor, RESULT_PATH, seededRandom, SUBMIT_PATH } from "../helpers/six-providers.js";
import { startWorld, worldEngine } from "../helpers/world.js";

/** Virtual time runs 20 times faster than real time, in the process that is killed and in the one that resumes. */
const TIME_SCALE = 20;
/** Real ms the sandbox holds a request (or its answer) open, so the kill lands while it is in flight (the kill releases it). */
const HOLD_MS = 30_000;
/** Real-time bound of every wait. */
const WAIT_MS = 20_000;
/**
 * Providers whose download or file write is interrupted. Not A or E: after a
 * kill their rate windows stay full of the dead engine's unanswered requests
 * for ten virtual minutes, and reading the job again would wait for them.
 */
const CAPTURED = ["b", "c", "d", "f"] as const;
const WITHOUT_IDEMPOTENCY: ReadonlySet<ProviderId> = new Set(["a", "c", "d", "e", "f"]);

async function until<T>(what: string, probe: () => Promise<T | null | false> | T | null | false, boundMs = WAIT_MS, explain?: () => Promise<string>): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`not reached in ${boundMs} ms: ${what}${explain ? `\n${await explain()}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A request the sandbox is holding open (delayed or its answer held), not answered yet. */
const held = (entry: LoggedRequest) => (entry.fault === "delay" || entry.fault === "delay_answer") && entry.statusCode === undefined;
const isSubmit = (provider: ProviderId) => (entry: LoggedRequest) => entry.method === "POST" && SUBMIT_PATH[provider].test(entry.url.split("?")[0]!);

/** Where a job stood when its engine was killed, which decides what must become of it. */
type Step = "unsent" | "in_flight" | "rendering" | "capturing" | "settling" | "done";

function stepOf(job: Job): Step {
  if (job.state === "queued" || (job.state === "submitting" && job.submitSentAt === null)) return "unsent";
  if (job.state === "submitting") return "in_flight";
  if (job.state === "running") return "rendering";
  if (job.state === "capturing") return "capturing";
  if (job.chargeState === "pending" || job.chargeState === "unavailable") return "settling";
  return "done";
}

/** The documented outcome of each step, reached by the engine that resumes. */
function resumed(step: Step, job: Job): boolean {
  if (job.chargeState === "pending" || job.chargeState === "unavailable") return false;
  if (step === "in_flight" && WITHOUT_IDEMPOTENCY.has(job.provider)) return job.state === "unknown_submission";
  return job.state === "succeeded";
}

/**
 * One seeded iteration: an engine in a process of its own holds jobs at every
 * step at once (a claimed submit waiting for its rate token, one submit of
 * each provider accepted but unanswered, a download in flight, a file half
 * written, a settlement read in flight), is killed with SIGKILL, and an engine
 * in this process resumes. Each wait is on something observable (the store,
 * the sandbox's log, the output folder), never on time alone.
 */
async function killAtEveryStep(seed: number, onFinished: (close: () => Promise<void>) => void) {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const downloadCut = pick(CAPTURED.filter((provider) => provider !== "b"));
  const writeCut = pick(CAPTURED);

  const emulators = createAllEmulators({
    a: { queueMs: 500, renderMs: { min: 2_000, max: 4_000 } },
    // B settles a virtual minute after a job ends: the first read says pending, and a later one is held open.
    b: { queueTimeMs: 500, renderTimeMs: { minMs: 2_000, maxMs: 4_000 }, settlementDelayMs: 60_000 },
    c: { renderMs: { min: 2_000, max: 4_000 }, errorHttpStatus: "by-error" },
    d: { renderTimeMs: { minMs: 1_000, maxMs: 3_000 } },
    e: { renderMs: { min: 2_000, max: 4_000 } },
    f: { renderMs: { min: 2_000, max: 4_000 } },
  });
  const world = await startWorld(emulators.list, { timeScale: TIME_SCALE, seed });
  const store = await openStore(world.env.MEDIAGATE_STORE!);
  const { sandbox } = world;
  const log = () => sandbox.requests();
  // The engine that resumes after the kill; until then only its enqueue is used.
  const resumer = worldEngine(world, store, { virtualTime: true });
  let killed: Awaited<ReturnType<typeof startEngineProcess>> | undefined;
  onFinished(async () => {
    await killed?.kill();
    await resumer.engine.stop();
    // The sandbox closes once the requests it held open have been answered (to a dead client).
    await until("held requests answered", () => !log().some(held), 5_000).catch(() => undefined);
    await store.close();
    await world.close();
  });
  const enqueue = (provider: ProviderId, ref: string) => resumer.enqueue(requestFor(provider, ref, seed), ref);
  const current = async (ref: string) => (await store.findJob(ref))!;
  const explain = async () => (await store.listJobs()).map((job) => `${job.ref}: ${job.state}/${job.chargeState} ${job.reason ?? ""}`).join("\n");

  // Capture: one job's download held open at the sandbox, another's file half written on a slow disk. Settlement: a B job.
  sandbox.injectFault({ provider: downloadCut, method: "GET", path: RESULT_PATH[downloadCut], fault: { kind: "delay", ms: HOLD_MS }, times: 1 });
  const downloading = await enqueue(downloadCut, `k${seed}-downloading-${downloadCut}`);
  const writing = await enqueue(writeCut, `k${seed}-writing-${writeCut}`);
  const settling = await enqueue("b", `k${seed}-settling-b`);
  killed = await startEngineProcess(world, { slowWrite: writing.ref, maxMs: 60_000 });
  const outDir = world.env.MEDIAGATE_OUTPUT_DIR!;
  const pending = await until("B's first settlement read answered pending", async () => {
    const job = await current(settling.ref);
    return job.state === "succeeded" && job.chargeState === "pending" ? job : null;
  }, WAIT_MS, explain);
  sandbox.injectFault({ provider: "b", method: "GET", path: new RegExp(`^/b/v1/media/jobs/${pending.providerJobId}$`), fault: { kind: "delay", ms: HOLD_MS }, times: 1 });
  await until("a settlement read held open", () => log().some((entry) => held(entry) && entry.url.endsWith(`/jobs/${pending.providerJobId}`)), WAIT_MS, explain);
  await until("a download held open", () => log().some((entry) => held(entry) && RESULT_PATH[downloadCut].test(entry.url)), WAIT_MS, explain);
  await until("a result file half written", () => existsSync(outDir) && readdirSync(outDir).some((name) => name.startsWith(writing.ref) && name.includes(".tmp-")), WAIT_MS, explain);

  // Between send and record: one submit of each provider accepted, its answer held.
  for (const provider of PROVIDERS) sandbox.injectFault({ provider, method: "POST", path: SUBMIT_PATH[provider], fault: { kind: "delay_answer", ms: HOLD_MS }, times: 1 });
  const inFlight: Job[] = [];
  for (const provider of PROVIDERS) inFlight.push(await enqueue(provider, `k${seed}-in-flight-${provider}`));
  await until("every provider accepted a submit whose answer is held", () =>
    inFlight.every((job) => log().some((entry) => held(entry) && isSubmit(job.provider)(entry)) && providerTasks(emulators, job.provider)!.some((task) => task.text.includes(markerOf(job)))),
  WAIT_MS, explain);

  // Before submit: an A job claimed but waiting for its rate token (another client of the account used up A's minute).
  const aWindows = resumer.providers.get("a")!.adapter!.limits(inFlight[0]!).rateWindows;
  for (let taken = 0; taken < 1_000; taken++) {
    const take = await store.takeRateToken(aWindows, sandbox.clock.now());
    if (!take.granted) break;
    await store.answerRateToken(take.token, sandbox.clock.now());
  }
  const waiting = await enqueue("a", `k${seed}-waiting-a`);
  await until("an A job claimed and waiting for its rate token", async () => {
    const job = await current(waiting.ref);
    return job.state === "submitting" && job.submitSentAt === null;
  }, WAIT_MS, explain);

  const signal = await killed.kill();
  const atKill = await store.listJobs();

  resumer.engine.start();
  const steps = new Map(atKill.map((job) => [job.id, stepOf(job)]));
  const finished = await until("every job at the outcome its step documents", async () => {
    const jobs = await store.listJobs();
    // A job that ended elsewhere will not get there: fail now, saying which.
    const astray = jobs.filter((job) => isTerminal(job.state) && job.chargeState !== "pending" && job.chargeState !== "unavailable" && !resumed(steps.get(job.id)!, job));
    if (astray.length > 0) throw new Error(`ended elsewhere than their step documents:\n${astray.map((job) => `${job.ref} (${steps.get(job.id)}): ${job.state} ${job.error?.message ?? ""}`).join("\n")}`);
    return jobs.every((job) => resumed(steps.get(job.id)!, job)) ? jobs : null;
  }, 30_000, explain);
  await resumer.engine.stop();
  await until("held requests answered", () => !log().some(held), 5_000);
  return { store, sandbox, emulators, outDir, signal, steps, finished, refs: { downloading, writing, settling, inFlight, waiting } };
}

describe("crash points: the engine killed with SIGKILL at every step of a job, then resumed by another engine", () => {
  // Concurrently: each iteration mostly waits on held requests and the resumed engine's virtual clock.
  for (const seed of [1, 2, 3]) {
    it.concurrent(
      `seed ${seed}: a job claimed but not yet sent is sent once later; a submit in flight ends unknown_submission on A, C, D, E, F and is resumed with its key on B (one job at B); an interrupted capture is saved once, whole, its temporary file removed; an interrupted settlement settles once`,
      async ({ expect, onTestFinished }) => {
        const run = await killAtEveryStep(seed, onTestFinished);
        const { store, sandbox, emulators, finished, steps } = run;
        expect(run.signal).toBe("SIGKILL");
        const stepOfRef = (job: Job) => [job.ref, steps.get(job.id)];
        const byId = new Map(finished.map((job) => [job.id, job]));
        const submitsOf = (job: Job) => sandbox.requests().filter((entry) => isSubmit(job.provider)(entry) && JSON.stringify(entry.body ?? {}).includes(markerOf(job)));

        // The kill found each job at the step it was held at.
        const { downloading, writing, settling, inFlight, waiting } = run.refs;
        expect(inFlight.map(stepOfRef)).toEqual(inFlight.map((job) => [job.ref, "in_flight"]));
        expect([downloading, writing, settling].map(stepOfRef)).toEqual([
          [downloading.ref, "capturing"],
          [writing.ref, "capturing"],
          [settling.ref, "settling"],
        ]);
        expect(stepOfRef(waiting)).toEqual([waiting.ref, "unsent"]);

        for (const job of finished) {
          const step = steps.get(job.id)!;
          if (step === "unsent") {
            // Before submit: sent once, later, by the engine that resumed; one task at the provider.
            expect([job.ref, job.state, submitsOf(job).length]).toEqual([job.ref, "succeeded", 1]);
          }
          if (step === "in_flight" && WITHOUT_IDEMPOTENCY.has(job.provider)) {
            // Between send and record, without idempotency: unknown, never sent again (the provider holds the one task).
            expect([job.ref, job.state, job.error?.code]).toEqual([job.ref, "unknown_submission", "submit_outcome_unknown"]);
            if (job.provider !== "f") expect([job.ref, submitsOf(job).length]).toEqual([job.ref, 1]);
          }
          if (step === "in_flight" && job.provider === "b") {
            // Between send and record on B: resent under the same Idempotency-Key; B holds one job, which is tracked, saved and settled.
            expect([job.state, job.chargeState]).toEqual(["succeeded", "settled"]);
            expect(submitsOf(job).length).toBeGreaterThanOrEqual(2);
            expect([...new Set(submitsOf(job).map((entry) => entry.headers["idempotency-key"]))]).toEqual([job.idempotencyKey]);
            expect(emulators.b.jobs.filter((bJob) => JSON.stringify(bJob.body).includes(markerOf(job)))).toHaveLength(1);
          }
          if (step === "capturing") {
            // During capture: saved once (one output, its file whole: the checker reads it).
            expect([job.ref, job.state, (await store.outputs(job.id)).length]).toEqual([job.ref, "succeeded", 1]);
          }
        }
        // The half-written temporary file was removed by the capture that resumed it.
        expect(readdirSync(run.outDir).filter((name) => name.includes(".tmp-"))).toEqual([]);
        // During settlement: settled once, by one read's answer (the checker holds the ledger to one row equal to B's charge).
        expect((await store.events(settling.id)).filter((event) => /charge settled/.test(event.reason))).toHaveLength(1);
        expect(byId.get(settling.id)!.chargeState).toBe("settled");

        expect(await checkInvariants({ store, sandbox, emulators, markerOf, outputDirs: [run.outDir] })).toEqual([]);
      },
      90_000,
    );
  }
});

import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { batchLines, type DWorld, sha256File, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

interface JobLine {
  ref: string;
  state: string;
  error: { code: string } | null;
  outputs: Array<{ path: string; sha256: string }>;
}

const JOBS = 30;
/** spec D: 24 concurrent tasks; the engine takes a slot before noting a submit as sent. */
const D_SLOTS = 24;
const D_SUBMIT_PATH = /^\/d\/v1\//;
const D_RESULT_PATH = /^\/d-results\//;

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Submits that arrived at the sandbox so far, and whether one more can have
 * been noted as sent by the engine without having arrived yet. A submit is
 * noted after its slot is taken, and a slot is freed only once a poll has
 * seen its job done at D: so with `24 + jobs seen done` no greater than the
 * arrivals (or every job arrived), every submit noted has arrived.
 */
function submitsNow(world: DWorld): { arrived: number; allNotedHaveArrived: boolean } {
  const log = world.sandbox.requests();
  const arrived = log.filter((request) => request.method === "POST" && D_SUBMIT_PATH.test(request.url)).length;
  const seenDone = world.d.jobs.filter((job) =>
    log.some((request) => request.url.includes(`get_result?id=${encodeURIComponent(job.id)}`) && request.at >= job.finishesAt),
  ).length;
  return { arrived, allNotedHaveArrived: D_SLOTS + seenDone <= arrived || arrived === JOBS };
}

/**
 * Runs the batch, kills it with SIGKILL once at least `afterSubmits` submits
 * arrived and none is between being noted and arriving, then runs it again.
 * Returns what the store held at the kill and the second run's lines.
 */
async function killAndRestart(world: DWorld, afterSubmits: number) {
  const file = join(world.folder, "jobs.jsonl");
  writeFileSync(file, batchLines(JOBS));
  const first = startCli(["batch", file], { env: world.env });
  const firstDone = collect(first, 60_000);
  let atKill = submitsNow(world);
  await waitFor(() => {
    atKill = submitsNow(world);
    return atKill.arrived >= afterSubmits && atKill.allNotedHaveArrived;
  }, 45_000);
  first.kill("SIGKILL");
  expect((await firstDone).signal).toBe("SIGKILL");
  expect(submitsNow(world).arrived).toBe(atKill.arrived);

  const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
  const killed = await store.listJobs();
  await store.close();
  // Answers recorded before the kill; every other submit that arrived was in flight.
  const recorded = killed.filter((job) => job.providerJobId !== null).length;
  const inFlight = atKill.arrived - recorded;
  // The store agrees: exactly those jobs were noted as sent with no answer recorded.
  expect(killed.filter((job) => job.state === "submitting" && job.submitSentAt !== null)).toHaveLength(inFlight);
  return { file, killed, inFlight, restart: () => runCli(["batch", file, "--json"], { env: world.env, timeoutMs: 90_000 }) };
}

function parseLines(stdout: string): JobLine[] {
  return stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as JobLine);
}

/** After the restart: only the submits in flight at the kill are unknown, the rest succeeded, nothing was sent twice, every file is whole. */
function expectHonestRecovery(world: DWorld, lines: JobLine[], code: number | null, inFlight: number): void {
  expect(lines).toHaveLength(JOBS);
  const unknown = lines.filter((line) => line.state === "unknown_submission");
  expect(unknown).toHaveLength(inFlight);
  for (const line of unknown) expect(line.error?.code).toBe("submit_outcome_unknown");
  expect(lines.filter((line) => line.state === "succeeded")).toHaveLength(JOBS - inFlight);
  expect(code).toBe(inFlight === 0 ? 0 : 1);

  // One submit per job in all (the in-flight ones were not resent), and D never accepted a prompt twice.
  expect(world.submits()).toBe(JOBS);
  expect(world.d.rejected429Count).toBe(0);
  const prompts = world.d.jobs.map((job) => String(job.body.prompt));
  expect(new Set(prompts).size).toBe(prompts.length);

  // Every file in the output folder is a succeeded job's whole output: no temporary, no partial file.
  const outDir = world.env.MEDIAGATE_OUTPUT_DIR!;
  const saved = lines.filter((line) => line.state === "succeeded").map((line) => line.outputs[0]!);
  for (const output of saved) expect(sha256File(output.path)).toBe(output.sha256);
  expect(readdirSync(outDir).filter((name) => !name.endsWith(".json")).sort()).toEqual(saved.map((output) => basename(output.path)).sort());
}

describe("crash safety (SIGKILL of the engine mid-batch)", () => {
  it(`kill -9 while the first ${D_SLOTS} submits are in flight: exactly the submits whose answer was not recorded become unknown_submission; every other job is sent once and succeeds`, async () => {
    world = await startDWorld({ renderTimeMs: { minMs: 300, maxMs: 900 } });
    // Slow submit answers: the kill lands while they are in flight.
    world.sandbox.injectFault({ provider: "d", method: "POST", path: D_SUBMIT_PATH, fault: { kind: "delay", ms: 500 } });
    const { inFlight, restart } = await killAndRestart(world, D_SLOTS);
    expect(inFlight).toBeGreaterThan(0);
    const second = await restart();
    expectHonestRecovery(world, parseLines(second.stdout), second.code, inFlight);
  }, 120_000);

  it("kill -9 after 27 submits, with results downloading: only submits whose answer was not recorded become unknown; a half-written temporary file is removed; every file is whole", async () => {
    world = await startDWorld({ renderTimeMs: { minMs: 300, maxMs: 4_000 } });
    world.sandbox.injectFault({ provider: "d", method: "POST", path: D_SUBMIT_PATH, fault: { kind: "delay", ms: 150 } });
    // Slow downloads: the kill lands while results are being fetched.
    world.sandbox.injectFault({ provider: "d", method: "GET", path: D_RESULT_PATH, fault: { kind: "delay", ms: 3_000 } });
    const { killed, inFlight, restart } = await killAndRestart(world, 27);
    const capturing = killed.filter((job) => job.state === "capturing");
    expect(capturing.length).toBeGreaterThan(0);
    // What a kill during the write itself leaves behind: a temporary file beside where the image goes.
    const outDir = world.env.MEDIAGATE_OUTPUT_DIR!;
    expect(existsSync(outDir)).toBe(true);
    const leftover = join(outDir, `${capturing[0]!.ref}.png.tmp-0123abcd`);
    writeFileSync(leftover, Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    const second = await restart();
    expect(existsSync(leftover)).toBe(false);
    expectHonestRecovery(world, parseLines(second.stdout), second.code, inFlight);
  }, 120_000);
});

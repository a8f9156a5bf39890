import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { isTerminal } from "../../src/core/job.js";
import type { Store } from "../../src/store/store.js";
import { type CliResult, collect, runCli, startCli } from "../helpers/cli.js";
import { waitForOutput } from "../helpers/cli-output.js";
import { type DWorld, sha256File, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { type CliPostgresStore, cliPostgresStore } from "../helpers/pg-cli-store.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";

const databaseUrl = process.env.DATABASE_URL;

let world: DWorld | undefined;
let pgStore: CliPostgresStore | undefined;
let proxy: TcpProxy | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await proxy?.close();
  proxy = undefined;
  await pgStore?.cleanup();
  pgStore = undefined;
  await world?.close();
  world = undefined;
});

/** Polls `condition` (a store read, the sandbox's counters) until it holds; bounded, and given up at once if a process it needs has ended. */
async function until(condition: () => boolean | Promise<boolean>, what: string, needs?: { child: ChildProcess; output: () => string }): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await condition())) {
    if (needs && (needs.child.exitCode !== null || needs.child.signalCode !== null)) {
      throw new Error(`the process ended (${needs.child.exitCode ?? needs.child.signalCode}) before: ${what}\n${needs.output()}`);
    }
    if (Date.now() > deadline) throw new Error(`not reached within 60 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function enqueueD(store: Store, count: number): Promise<string[]> {
  const { enqueue } = engineFor(world!, store);
  const ids: string[] = [];
  for (let index = 0; index < count; index++) ids.push((await enqueue({ model: "gen-2-pro", input: { prompt: `fault ${index}`, width: 256, height: 256, seed: index } }, `fault-${index}`)).id);
  return ids;
}

async function allTerminal(store: Store, ids: string[]): Promise<boolean> {
  return (await store.listJobs({ ids })).every((job) => isTerminal(job.state));
}

/** A CLI process whose output is kept as it arrives. */
function started(args: string[], env: Record<string, string>): { child: ChildProcess; output: () => string; finished: Promise<CliResult> } {
  const child = startCli(args, { env });
  children.push(child);
  let output = "";
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output, finished: collect(child, 120_000) };
}

/** Nothing lost (every job succeeded with its file intact), nothing sent twice (one submit per job at D, no prompt accepted twice). */
async function expectEveryJobDoneOnce(store: Store, ids: string[]): Promise<void> {
  const jobs = await store.listJobs({ ids });
  expect(jobs.map((job) => [job.ref, job.state, job.error?.code ?? null]).filter(([, state]) => state !== "succeeded")).toEqual([]);
  for (const job of jobs) {
    const [output] = await store.outputs(job.id);
    expect(sha256File(output!.path)).toBe(output!.sha256);
  }
  expect(world!.submits()).toBe(ids.length);
  const prompts = world!.d.jobs.map((job) => String(job.body.prompt));
  expect(new Set(prompts).size).toBe(ids.length);
}

/** The log lines (pino JSON) a CLI process wrote to stderr. */
function logLines(stderr: string): Array<{ msg: string; [field: string]: unknown }> {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { msg: string });
}

describe.runIf(databaseUrl)("finding 6: the store under faults (real PostgreSQL; worker and serve as processes)", () => {
  it("worker survives pg_terminate_backend of its connections mid-batch: nothing lost, nothing sent twice", async () => {
    world = await startDWorld({ renderTimeMs: { minMs: 300, maxMs: 900 } });
    // Slow submits keep some in flight whenever the connections are cut.
    world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 100 } });
    pgStore = await cliPostgresStore(databaseUrl!);
    const ids = await enqueueD(pgStore.store, 30);
    const worker = started(["worker"], { ...world.env, MEDIAGATE_STORE: pgStore.address });
    let terminated = 0;
    for (const submits of [4, 12, 22]) {
      await until(() => world!.submits() >= submits, `${submits} submits`, worker);
      terminated += await pgStore.terminateCliConnections();
    }
    await until(() => allTerminal(pgStore!.store, ids), "every job terminal", worker);
    worker.child.kill("SIGTERM");
    const result = await worker.finished;

    expect(terminated).toBeGreaterThan(0);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("mediagate worker: stopped; leases released");
    await expectEveryJobDoneOnce(pgStore.store, ids);
  }, 120_000);

  it("serve survives pg_terminate_backend of its connections: its engine finishes every job and /healthz still answers", async () => {
    world = await startDWorld({ renderTimeMs: { minMs: 300, maxMs: 900 } });
    world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 100 } });
    pgStore = await cliPostgresStore(databaseUrl!);
    const ids = await enqueueD(pgStore.store, 12);
    const serve = started(["serve", "--port", "0"], { ...world.env, MEDIAGATE_STORE: pgStore.address });
    const [, address] = await waitForOutput(serve.child, /mediagate serve on (http:\/\/\S+);/);
    let terminated = 0;
    for (const submits of [3, 8]) {
      await until(() => world!.submits() >= submits, `${submits} submits`, serve);
      terminated += await pgStore.terminateCliConnections();
    }
    await until(() => allTerminal(pgStore!.store, ids), "every job terminal", serve);
    const health = await fetch(`${address}/healthz`);
    serve.child.kill("SIGTERM");
    const result = await serve.finished;

    expect(terminated).toBeGreaterThan(0);
    expect(health.status).toBe(200);
    expect(result.code, result.stderr).toBe(0);
    await expectEveryJobDoneOnce(pgStore.store, ids);
  }, 120_000);

  it("worker backs off while its store refuses connections and resumes when it is back: nothing lost, nothing sent twice", async () => {
    world = await startDWorld({ renderTimeMs: { minMs: 300, maxMs: 900 } });
    world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 200 } });
    proxy = await startTcpProxy({ host: new URL(databaseUrl!).hostname, port: Number(new URL(databaseUrl!).port || 5432) });
    pgStore = await cliPostgresStore(databaseUrl!, { viaPort: proxy.port });
    const ids = await enqueueD(pgStore.store, 30);
    const worker = started(["worker"], { ...world.env, MEDIAGATE_STORE: pgStore.address });
    await until(() => world!.submits() >= 8, "8 submits", worker);
    await proxy.cut();
    // The outage lasts until the engine has failed and backed off twice.
    await until(() => logLines(worker.output()).filter((line) => line.msg === "engine step failed; retrying").length >= 2, "two failed engine steps", worker);
    const submitsDuringOutage = world.submits();
    await proxy.restore();
    await until(() => allTerminal(pgStore!.store, ids), "every job terminal", worker);
    worker.child.kill("SIGTERM");
    const result = await worker.finished;

    expect(result.code, result.stderr).toBe(0);
    // The worker did not stop at the outage: submits went on after it.
    expect(world.submits()).toBeGreaterThan(submitsDuringOutage);
    await expectEveryJobDoneOnce(pgStore.store, ids);
  }, 120_000);

  it("SIGTERM during a store outage exits within the stop timeout; each answer it could not record is logged with its provider job id and is never resent", async () => {
    world = await startDWorld({ renderTimeMs: { minMs: 300, maxMs: 900 } });
    // Submits are answered half a second after they arrive, so some are in flight when the store goes away.
    world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 500 } });
    proxy = await startTcpProxy({ host: new URL(databaseUrl!).hostname, port: Number(new URL(databaseUrl!).port || 5432) });
    pgStore = await cliPostgresStore(databaseUrl!, { viaPort: proxy.port });
    const ids = await enqueueD(pgStore.store, 12);
    const first = started(["worker", "--stop-timeout", "3"], { ...world.env, MEDIAGATE_STORE: pgStore.address });
    await until(() => world!.submits() >= 3, "3 submits in flight", first);
    await proxy.cut();
    first.child.kill("SIGTERM");
    const stopped = await first.finished;

    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).toContain("mediagate worker: did not finish stopping within 3 s (the store is not answering); exiting anyway");
    const unrecorded = logLines(stopped.stderr)
      .map((line) => line.msg.match(/^the store failed while recording that D accepted it as (\S+);/)?.[1])
      .filter((id): id is string => id !== undefined);
    expect(unrecorded.length).toBeGreaterThan(0);

    // The store is back; a second worker resumes everything the first one left.
    await proxy.restore();
    const second = started(["worker"], { ...world.env, MEDIAGATE_STORE: pgStore.address });
    await until(() => allTerminal(pgStore!.store, ids), "every job terminal", second);
    second.child.kill("SIGTERM");
    expect((await second.finished).code).toBe(0);

    const jobs = await pgStore.store.listJobs({ ids });
    const refOfPrompt = new Map(jobs.map((job) => [String(job.body.prompt), job.ref]));
    const unknown = jobs.filter((job) => job.state === "unknown_submission");
    const acceptedRefs = unrecorded.map((id) => refOfPrompt.get(String(world!.d.job(id)!.body.prompt)));
    // Every logged answer became unknown (D has no idempotency): it was sent once, and not again.
    for (const ref of acceptedRefs) expect(unknown.map((job) => job.ref)).toContain(ref);
    // Any other unknown job is one whose "about to send" note reached the store as the connection was cut:
    // its submit was not sent (logged as going back to the queue), D never saw it, and the next engine
    // cannot tell it from a lost answer, so it is left unknown rather than risk a second charge.
    const notSent = new Set(
      logLines(stopped.stderr)
        .filter((line) => /^the store failed while recording that it goes back to the queue \(not sent/.test(line.msg))
        .map((line) => String(line.jobId)),
    );
    const sentPrompts = new Set(world.d.jobs.map((job) => String(job.body.prompt)));
    for (const job of unknown.filter((job) => !acceptedRefs.includes(job.ref))) {
      expect(notSent.has(job.id), `${job.ref} is unknown but was neither accepted nor logged as not sent`).toBe(true);
      expect(sentPrompts.has(String(job.body.prompt))).toBe(false);
    }
    expect(jobs.filter((job) => job.state !== "succeeded" && job.state !== "unknown_submission")).toEqual([]);
    const prompts = world.d.jobs.map((job) => String(job.body.prompt));
    expect(new Set(prompts).size).toBe(prompts.length);
    expect(world.submits()).toBe(prompts.length);
  }, 120_000);
});

describe("stopping worker and serve", () => {
  it("--stop-timeout must be a number of seconds from 0.001 to 86400: anything else exits 2 naming the flag, before the store is opened", async () => {
    for (const command of ["worker", "serve"]) {
      const result = await runCli([command, "--stop-timeout", "soon"], { env: { MEDIAGATE_STORE: "postgres://postgres@127.0.0.1:5999/never-opened" } });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe('mediagate: invalid input: --stop-timeout: "soon" is not a positive decimal number (allowed: a number of seconds from 0.001 to 86400, e.g. 20)\n');
    }
  });
});

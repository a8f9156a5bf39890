import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/open.js";
import type { Store } from "../../src/store/store.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";

/**
 * `mediagate wait` (issue 37, part 4): it only watches. The jobs are run
 * here by an engine in the test's process on the same SQLite store, as a
 * worker would run them; the command follows them from its own process.
 */

let world: DWorld | undefined;
let store: Store | undefined;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  await store?.close();
  store = undefined;
  await world?.close();
  world = undefined;
});

const image = (prompt: string) => ({ model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });

async function setUp() {
  world = await startDWorld({ renderTimeMs: { minMs: 100, maxMs: 300 } });
  store = await openStore(world.env.MEDIAGATE_STORE!);
  const worker = engineFor(world, store);
  stops.push(() => worker.engine.stop());
  return { world, store, worker };
}

/** Resolves once the child has written `text` to stderr. */
function saidOnStderr(child: ReturnType<typeof startCli>, text: string): Promise<void> {
  return new Promise((resolve) => {
    let seen = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(text)) resolve();
    });
  });
}

describe("mediagate wait (real sandbox D, a SQLite store shared with the process that runs the jobs)", { timeout: 120_000 }, () => {
  it("wait --batch blocks until every job of the batch has ended, prints each as show does (JSON lines with --json) and exits 0 when all succeeded", async () => {
    const { world, worker } = await setUp();
    const jobs = [];
    for (let index = 0; index < 3; index++) jobs.push(await worker.enqueue(image(`fox ${index}`), `w-${index}`, { batchId: "batch_wait" }));
    const waiting = startCli(["wait", "--batch", "batch_wait", "--json"], { env: world.env });
    const answered = collect(waiting);
    await saidOnStderr(waiting, "waiting for 3 jobs of batch batch_wait");
    worker.engine.start();
    const result = await answered;
    expect(result.code, result.stderr).toBe(0);
    const shown = result.stdout.trim().split("\n").map((line) => JSON.parse(line));
    expect(shown.map((job) => job.ref).sort()).toEqual(["w-0", "w-1", "w-2"]);
    for (const job of shown) {
      expect(job).toMatchObject({ state: "succeeded", provider: "d" });
      expect(job.outputs[0].sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(job.events.at(-1).to).toBe("succeeded");
    }
  });

  it("wait ID follows one job by id or ref, printing its states on stderr and the job as show does; a failed job exits 1 with its error", async () => {
    const { world, worker } = await setUp();
    world.d.failNextJobs("Failed");
    const job = await worker.enqueue(image("a doomed fox"), "doomed");
    const waiting = startCli(["wait", "doomed"], { env: world.env });
    const answered = collect(waiting);
    await saidOnStderr(waiting, `waiting for job ${job.id}`);
    worker.engine.start();
    const result = await answered;
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toContain(`${job.id}  ref doomed`);
    expect(result.stdout).toMatch(/state failed/);
    expect(result.stdout).toMatch(/\nerror \S+: /);
    expect(result.stderr).toContain("1 job(s): 0 succeeded, 1 failed, cancelled or expired");
  });

  it("a job that has ended already is printed at once; Ctrl-C while waiting stops waiting (130), not the job", async () => {
    const { world, worker } = await setUp();
    const done = await worker.enqueue(image("a quick fox"), "quick");
    worker.engine.start();
    await worker.wait([done.id]);
    await worker.engine.stop();
    const atOnce = await runCli(["wait", done.id, "--json"], { env: world.env });
    expect(atOnce.code, atOnce.stderr).toBe(0);
    expect(JSON.parse(atOnce.stdout)).toMatchObject({ id: done.id, state: "succeeded" });
    // Nothing runs this one: the command waits until told to stop.
    const stuck = await worker.enqueue(image("a fox nobody runs"), "stuck");
    const waiting = startCli(["wait", "stuck"], { env: world.env });
    const answered = collect(waiting);
    await saidOnStderr(waiting, "Ctrl-C stops waiting");
    waiting.kill("SIGINT");
    const result = await answered;
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toContain("stopped waiting; the jobs go on");
    expect((await store!.getJob(stuck.id))!.state).toBe("queued");
  });

  it("refuses, exit 2 naming what is wrong: no id and no --batch, both, an unknown job, an unknown batch", async () => {
    world = await startDWorld();
    const env = { ...world.env, MEDIAGATE_STORE: `sqlite:${join(world.folder, "empty.db")}` };
    const none = await runCli(["wait"], { env });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("ID: is required (or --batch)");
    const both = await runCli(["wait", "x", "--batch", "y"], { env });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--batch: cannot be given with a job id");
    const unknown = await runCli(["wait", "nope"], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('ID: no job with id or ref "nope"');
    const batch = await runCli(["wait", "--batch", "batch_nope", "--json"], { env });
    expect(batch.code).toBe(2);
    expect(JSON.parse(batch.stdout).error).toMatchObject({ code: "invalid_input", field: "--batch" });
  });
});

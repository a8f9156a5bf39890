import { hostname } from "node:os";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/core/job.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/store.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { waitForOutput } from "../helpers/cli-output.js";
import { D_KEY, type DWorld, sha256File, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";

let world: DWorld | undefined;
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
  await world?.close();
  world = undefined;
});

/** A lease owner naming a process of this host that does not exist: its jobs are orphans. */
const DEAD_OWNER = `mg:${hostname()}:999999:abcdef`;

async function storeOf(world: DWorld): Promise<Store> {
  store ??= await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
  return store;
}

async function queue(world: DWorld, ref: string): Promise<Job> {
  const [inserted] = await (await storeOf(world)).insertJobs(
    [
      {
        id: `job_${ref}`,
        ref,
        batchId: null,
        provider: "d",
        model: "gen-2-pro",
        operation: null,
        body: { prompt: `prompt ${ref}`, width: 256, height: 256 },
        facts: {},
        warnings: [],
        estimateMicroUsd: 30_000,
        estimateSource: "test",
        outDir: world.env.MEDIAGATE_OUTPUT_DIR!,
      },
    ],
    Date.now(),
  );
  return inserted!.job;
}

/** A job a dead engine submitted to D (really, at the sandbox) and was tracking when it died. */
async function orphanRunning(world: DWorld, ref: string): Promise<Job> {
  const job = await queue(world, ref);
  const response = await fetch(`${world.sandbox.url}/d/v1/gen-2-pro`, {
    method: "POST",
    headers: { "x-key": D_KEY, "content-type": "application/json" },
    body: JSON.stringify(job.body),
  });
  const accepted = (await response.json()) as { id: string; polling_url: string };
  const jobs = await storeOf(world);
  const now = Date.now();
  expect((await jobs.claimForSubmit(job.id, DEAD_OWNER, [], now, 60 * 60_000)).kind).toBe("claimed");
  const running = await jobs.transition(
    job.id,
    { state: "submitting", leaseOwner: DEAD_OWNER },
    "running",
    { providerJobId: accepted.id, handles: accepted, providerStatus: "submitted", submittedAt: now, trackingDeadlineAt: now + 30 * 60_000, nextAttemptAt: now },
    "accepted",
    now,
  );
  return running!;
}

/** Waits (bounded) until the job satisfies `predicate`, as another process moves it. */
async function until(world: DWorld, jobId: string, predicate: (job: Job) => boolean, timeoutMs = 20_000): Promise<Job> {
  const jobs = await storeOf(world);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = (await jobs.getJob(jobId))!;
    if (predicate(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${jobId} is still ${job.state}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("mediagate --version", () => {
  it("--version and -V print the package's version and exit 0, with nothing else on stdout", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ["--version", "-V"]) {
      const result = await runCli([flag], { env: {} });
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    }
  });
});

describe("mediagate resubmit", () => {
  it("resubmit queues an unknown_submission job again (nothing is sent by the command) and the next engine sends it once; any other state is refused with exit 2", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    const jobs = await storeOf(world);
    const lost = await queue(world, "lost-answer");
    await jobs.claimForSubmit(lost.id, DEAD_OWNER, [], Date.now(), 60_000);
    await jobs.transition(lost.id, { state: "submitting" }, "unknown_submission", { error: { code: "submit_outcome_unknown", message: "lost" }, leaseOwner: null }, "lost", Date.now());
    const queued = await queue(world, "never-sent");

    const refused = await runCli(["resubmit", queued.ref], { env: world.env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/is queued; only unknown_submission jobs can be resubmitted/);

    const resubmitted = await runCli(["resubmit", lost.ref], { env: world.env });
    expect(resubmitted.code, resubmitted.stderr).toBe(0);
    expect(resubmitted.stderr).toMatch(new RegExp(`queued ${lost.id} again`));
    const again = (await jobs.getJob(lost.id))!;
    expect(again).toMatchObject({ state: "queued", error: null });
    expect((await jobs.events(lost.id)).at(-1)).toMatchObject({ fromState: "unknown_submission", toState: "queued", reason: expect.stringMatching(/resubmitted by the user/) });
    expect(world.submits()).toBe(0);

    // The next engine (here in-process, on the same store) sends it like any queued job.
    const { engine, wait } = engineFor(world, jobs);
    engine.start();
    const outcome = await wait([lost.id, queued.id]);
    await engine.stop();
    expect(outcome.jobs.map((job) => job.state)).toEqual(["succeeded", "succeeded"]);
    const [output] = await jobs.outputs(lost.id);
    expect(sha256File(output!.path)).toBe(output!.sha256);
    expect(world.submits()).toBe(2);
    expect(world.d.jobs.map((job) => job.body.prompt).sort()).toEqual(["prompt lost-answer", "prompt never-sent"]);
  }, 60_000);
});

describe("mediagate serve", () => {
  it("serve listens, answers /healthz, runs the engine on the store's jobs (an orphan included), and on SIGTERM releases its leases and exits 0", async () => {
    world = await startDWorld({ renderTimeMs: 60_000 });
    world.d.configure({ renderTimeMs: 300 });
    const orphan = await orphanRunning(world, "orphan");
    world.d.configure({ renderTimeMs: 60_000 });
    const longJob = await queue(world, "long");

    const server = startCli(["serve", "--port", "0", "--json"], { env: world.env });
    const stopped = collect(server, 50_000);
    const [statusLine] = await waitForOutput(server, /^\{"url":.*\}$/m, 30_000);
    const { url } = JSON.parse(statusLine) as { url: string };
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });

    expect((await until(world, orphan.id, (job) => job.state === "succeeded")).leaseOwner).toBeNull();
    const running = await until(world, longJob.id, (job) => job.state === "running");
    expect(running.leaseOwner).not.toBeNull();
    server.kill("SIGTERM");
    const result = await stopped;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/mediagate serve: stopped; leases released/);
    expect(await (await storeOf(world)).getJob(longJob.id)).toMatchObject({ state: "running", leaseOwner: null, leaseExpiresAt: null });
    expect(world.submits()).toBe(2);
  }, 60_000);
});

describe("configuration files", () => {
  it("--config FILE supplies MEDIAGATE_* values; the environment overrides the file and a flag overrides both", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    const folder = world.folder;
    const config = join(folder, "settings.json");
    writeFileSync(
      config,
      JSON.stringify({
        MEDIAGATE_D_BASE_URL: world.env.MEDIAGATE_D_BASE_URL,
        MEDIAGATE_D_API_KEY: world.env.MEDIAGATE_D_API_KEY,
        MEDIAGATE_STORE: `sqlite:${join(folder, "from-file.db")}`,
        MEDIAGATE_OUTPUT_DIR: join(folder, "out-from-file"),
      }),
    );
    const env = { MEDIAGATE_OUTPUT_DIR: join(folder, "out-from-env"), MEDIAGATE_STORE: `sqlite:${join(folder, "from-env.db")}` };
    const args = ["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "configured", "--width", "256", "--height", "256", "--json"];
    const result = await runCli(["--config", config, "--store", `sqlite:${join(folder, "from-flag.db")}`, ...args], { env });
    expect(result.code, result.stderr).toBe(0);
    const job = JSON.parse(result.stdout) as { state: string; outputs: Array<{ path: string }> };
    expect(job.state).toBe("succeeded");
    expect(job.outputs[0]!.path.startsWith(join(folder, "out-from-env"))).toBe(true);
    expect(existsSync(join(folder, "from-flag.db"))).toBe(true);
    expect(existsSync(join(folder, "from-env.db"))).toBe(false);
    expect(existsSync(join(folder, "from-file.db"))).toBe(false);
    expect(existsSync(join(folder, "out-from-file"))).toBe(false);
    expect(world.submits()).toBe(1);
  });

  it("./mediagate.config.json in the working folder is read without --config", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    await queue(world, "listed");
    const cwd = join(world.folder, "project");
    mkdirSync(cwd);
    writeFileSync(join(cwd, "mediagate.config.json"), JSON.stringify({ MEDIAGATE_STORE: world.env.MEDIAGATE_STORE }));
    const result = await runCli(["jobs", "--json"], { env: {}, cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { ref: string }).ref)).toEqual(["listed"]);
  });

  const refusals = [
    { file: { MEDIAGATE_D_API_KEY: "k", MEDIAGATE_D_BASEURL: "http://127.0.0.1:1/d" }, named: /unknown key MEDIAGATE_D_BASEURL/ },
    { file: null, named: /config file .*missing\.json does not exist/ },
  ];
  for (const { file, named } of refusals) {
    it(`a config file ${file ? "with an unknown key" : "that does not exist"} is refused with exit 3, naming it, and nothing is sent`, async () => {
      world = await startDWorld({ renderTimeMs: 300 });
      const config = join(world.folder, file ? "typo.json" : "missing.json");
      if (file) writeFileSync(config, JSON.stringify(file));
      const result = await runCli(["--config", config, "generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "x", "--width", "256", "--height", "256"], { env: world.env });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(named);
      expect(world.sandbox.requests()).toEqual([]);
    });
  }
});

describe("MEDIAGATE_LOG_LEVEL", () => {
  it("at info the engine's info lines appear on stderr as JSON; at the default level (warn) they do not", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    const runWorker = async (ref: string, env: Record<string, string>) => {
      const orphan = await orphanRunning(world!, ref);
      const worker = startCli(["worker"], { env: { ...world!.env, ...env } });
      const stopped = collect(worker, 30_000);
      await until(world!, orphan.id, (job) => job.state === "succeeded");
      worker.kill("SIGTERM");
      const result = await stopped;
      expect(result.code, result.stderr).toBe(0);
      return { orphan, lines: result.stderr.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>) };
    };
    const verbose = await runWorker("adopted-verbose", { MEDIAGATE_LOG_LEVEL: "info" });
    expect(verbose.lines).toContainEqual(expect.objectContaining({ level: 30, msg: "resuming a job left by a stopped engine", jobId: verbose.orphan.id, state: "running" }));
    const quiet = await runWorker("adopted-quiet", {});
    expect(quiet.lines).toEqual([]);
  }, 60_000);
});

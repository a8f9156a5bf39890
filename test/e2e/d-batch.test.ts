import { readdirSync, writeFileSync } from "node:fs";
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
  cost: { charge_micro_usd: number | null };
}

function parseLines(stdout: string): JobLine[] {
  return stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as JobLine);
}

describe("mediagate batch on D", () => {
  it("runs every job within the 24-slot cap with no 429, one JSON line per job", async () => {
    world = await startDWorld({ renderTimeMs: 600 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(40));
    const result = await runCli(["batch", file, "--json"], { env: world.env });
    expect(result.code, result.stderr).toBe(0);
    const lines = parseLines(result.stdout);
    expect(lines).toHaveLength(40);
    expect(new Set(lines.map((line) => line.ref)).size).toBe(40);
    expect(lines.every((line) => line.state === "succeeded")).toBe(true);
    for (const line of lines) expect(sha256File(line.outputs[0]!.path)).toBe(line.outputs[0]!.sha256);
    expect(world.d.peakActive).toBeLessThanOrEqual(24);
    expect(world.d.peakActive).toBeGreaterThan(1);
    expect(world.d.rejected429Count).toBe(0);
    expect(world.submits()).toBe(40);
  });

  it("MEDIAGATE_BUDGET_USD below the batch's total estimate refuses the whole batch: nothing queued, nothing sent", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(5));
    const result = await runCli(["batch", file], { env: { ...world.env, MEDIAGATE_BUDGET_USD: "0.10" } });
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/exceeds the budget/);
    expect(world.submits()).toBe(0);
    const jobs = await runCli(["jobs", "--json"], { env: world.env });
    expect(jobs.stdout.trim()).toBe("");
    const within = await runCli(["batch", file, "--budget-usd", "1"], { env: world.env });
    expect(within.code, within.stderr).toBe(0);
    expect(world.submits()).toBe(5);
  });

  it("two batches started together on one fresh SQLite store both finish, sharing D's 24 slots: no 429, nothing sent twice", async () => {
    world = await startDWorld({ renderTimeMs: 800 });
    const files = ["one", "two"].map((name) => {
      const file = join(world!.folder, `${name}.jsonl`);
      writeFileSync(file, batchLines(36, { prefix: name }));
      return file;
    });
    const [one, two] = await Promise.all(files.map((file) => collect(startCli(["batch", file, "--json"], { env: world!.env }), 90_000)));
    for (const result of [one!, two!]) {
      expect(result.code, result.stderr).toBe(0);
      expect(parseLines(result.stdout).filter((line) => line.state === "succeeded")).toHaveLength(36);
    }
    expect(world.submits()).toBe(72);
    expect(world.d.rejected429Count).toBe(0);
    expect(world.d.peakActive).toBeLessThanOrEqual(24);
  });

  it("re-running a finished batch reports its jobs and submits nothing", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(5));
    expect((await runCli(["batch", file], { env: world.env })).code).toBe(0);
    const again = await runCli(["batch", file, "--json"], { env: world.env });
    expect(again.code, again.stderr).toBe(0);
    expect(parseLines(again.stdout)).toHaveLength(5);
    expect(world.submits()).toBe(5);
  });

  it("a ref reused with a different request is refused before anything is queued", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(2));
    expect((await runCli(["batch", file], { env: world.env })).code).toBe(0);
    writeFileSync(file, batchLines(2, { width: 512 }));
    const result = await runCli(["batch", file], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/already used by job/);
    expect(world.submits()).toBe(2);
  });

  it("every invalid line is reported at once with its line number, and nothing is queued", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(
      file,
      [
        JSON.stringify({ ref: "ok", provider: "d", model: "gen-2-pro", input: { prompt: "x", width: 256, height: 256 } }),
        JSON.stringify({ ref: "bad-width", provider: "d", model: "gen-2-pro", input: { prompt: "x", width: 250, height: 256 } }),
        "{not json",
        JSON.stringify({ ref: "neg", provider: "d", model: "gen-2-pro", input: { prompt: "x", width: 256, height: 256, negative_prompt: "blur" } }),
      ].join("\n"),
    );
    const result = await runCli(["batch", file], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/line 2: .*width/);
    expect(result.stderr).toMatch(/line 3: not valid JSON/);
    expect(result.stderr).toMatch(/line 4: .*negative/i);
    const jobs = await runCli(["jobs", "--json"], { env: world.env });
    expect(jobs.stdout.trim()).toBe("");
    expect(world.submits()).toBe(0);
  });

  it("D 402 midway: the job fails insufficient_credits, no further D job is sent, the summary says which never ran", async () => {
    // Credits for exactly 5 jobs of gen-2-pro at 1 MP ($0.03 each).
    world = await startDWorld({ renderTimeMs: 400, balanceMicroUsd: 150_000 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(40));
    const result = await runCli(["batch", file], { env: world.env });
    expect(result.code).toBe(1);
    const jobs = parseLines((await runCli(["jobs", "--json", "--limit", "100"], { env: world.env })).stdout);
    const succeeded = jobs.filter((job) => job.state === "succeeded");
    const failed = jobs.filter((job) => job.state === "failed");
    const neverRan = jobs.filter((job) => job.state === "queued");
    expect(succeeded).toHaveLength(5);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((job) => job.error?.code === "insufficient_credits")).toBe(true);
    expect(neverRan.length).toBeGreaterThan(0);
    // Only the first wave was ever offered to D: nothing was sent after the first 402 came back.
    expect(world.submits()).toBe(40 - neverRan.length);
    expect(world.submits()).toBeLessThanOrEqual(24);
    expect(result.stderr).toMatch(/5 succeeded, \d+ failed, \d+ never ran/);
    expect(result.stderr).toMatch(/never ran \(not sent, not charged\)/);
    expect(result.stderr).toMatch(/insufficient_credits/);
    // What the ledger says was paid is what the sandbox charged.
    const charged = succeeded.reduce((sum, job) => sum + (job.cost.charge_micro_usd ?? 0), 0);
    expect(charged).toBe(150_000);
    expect(world.d.balanceMicroUsd).toBe(0);
  });

  it("Ctrl-C during the downloads detaches cleanly: the jobs stay capturing, no temporary or partial file is left, and the same command resumes them without resubmitting", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    // Slow downloads: the interrupt lands while results are being fetched.
    world.sandbox.injectFault({ provider: "d", method: "GET", path: /^\/d-results\//, fault: { kind: "delay", ms: 4_000 } });
    const downloadsInFlight = () => world!.sandbox.requests().filter((request) => request.url.startsWith("/d-results/") && request.statusCode === undefined).length;
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(30));
    const child = startCli(["batch", file], { env: world.env });
    const finished = collect(child, 60_000);
    const deadline = Date.now() + 30_000;
    while (downloadsInFlight() < 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(downloadsInFlight()).toBeGreaterThanOrEqual(10);
    child.kill("SIGINT");
    const interrupted = await finished;
    expect(interrupted.code).toBe(130);
    expect(interrupted.stderr).toMatch(/Resume with:\n {2}mediagate --store sqlite:\S+ --output-dir \S+ batch \S+jobs\.jsonl\n/);

    const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
    const jobs = await store.listJobs();
    const outputs = (await Promise.all(jobs.map((job) => store.outputs(job.id)))).flat();
    await store.close();
    expect(jobs.filter((job) => job.state === "capturing").length).toBeGreaterThanOrEqual(10);
    expect(jobs.filter((job) => job.state === "submitting")).toEqual([]);
    // Nothing half-written: the only images are the whole outputs of jobs that succeeded before the interrupt.
    const outDir = world.env.MEDIAGATE_OUTPUT_DIR!;
    expect(readdirSync(outDir).filter((name) => name.includes(".tmp-"))).toEqual([]);
    expect(readdirSync(outDir).filter((name) => !name.endsWith(".json")).sort()).toEqual(outputs.map((output) => basename(output.path)).sort());
    for (const output of outputs) expect(sha256File(output.path)).toBe(output.sha256);

    const resumed = await runCli(["batch", file, "--json"], { env: world.env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const lines = parseLines(resumed.stdout);
    expect(lines.filter((line) => line.state === "succeeded")).toHaveLength(30);
    for (const line of lines) expect(sha256File(line.outputs[0]!.path)).toBe(line.outputs[0]!.sha256);
    expect(readdirSync(outDir).filter((name) => name.includes(".tmp-"))).toEqual([]);
    expect(world.submits()).toBe(30);
  }, 90_000);

  it("plan prints waves and expected wall time without sending anything", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(50));
    const result = await runCli(["plan", file, "--json"], { env: world.env });
    expect(result.code, result.stderr).toBe(0);
    const plan = JSON.parse(result.stdout) as { providers: Array<{ provider: string; jobs: number; slots: number; waves: number }> };
    expect(plan.providers[0]).toMatchObject({ provider: "d", jobs: 50, slots: 24, waves: 3 });
    expect(world.submits()).toBe(0);
  });
});

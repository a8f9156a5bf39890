import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Mediagate } from "../../src/index.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { batchLines, type DWorld, sha256File, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

interface JobLine {
  id: string;
  ref: string;
  state: string;
  outputs: Array<{ path: string; sha256: string }>;
}

function parseLines(stdout: string): JobLine[] {
  return stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as JobLine);
}

async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The words of a printed command line, as the shell splits them (so the test runs exactly what a user would paste). */
function shellWords(line: string): string[] {
  const result = spawnSync("sh", ["-c", `printf '%s\\0' ${line}`], { encoding: "utf8" });
  return result.stdout.split("\0").slice(0, -1);
}

/** The command after "Resume with:" (or "resume it … with:"), without the program name. */
function printedResume(stderr: string): string[] {
  const match = /(?:Resume with:\n {2}|resume it \(not pay again\) with: )mediagate (.+)\n/.exec(stderr);
  if (!match) throw new Error(`no resume line in:\n${stderr}`);
  return shellWords(match[1]!);
}

/** The environment of `world` without the variables that select the store and the output folder. */
function keysOnly(env: Record<string, string>): Record<string, string> {
  const { MEDIAGATE_STORE: _store, MEDIAGATE_OUTPUT_DIR: _out, ...rest } = env;
  return rest;
}

// Each test starts the CLI two to four times against a real sandbox: more than the default 30 s on a loaded machine.
describe("money and data are safe outside the tested path (issue 9, findings 1–5)", { timeout: 150_000 }, () => {
  it("finding 1: an output folder under a regular file is refused before anything is queued or sent (--out exit 2, MEDIAGATE_OUTPUT_DIR exit 3)", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(3));
    const blocker = join(world.folder, "a-file");
    writeFileSync(blocker, "not a folder");

    const byFlag = await runCli(["batch", file, "--out", join(blocker, "sub")], { env: world.env });
    expect(byFlag.code, byFlag.stderr).toBe(2);
    expect(byFlag.stderr).toMatch(/--out: cannot create the output folder .*a-file\/sub: part of the path is a file, not a folder \(ENOTDIR\); nothing was sent/);

    const byVariable = await runCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a fox", "--width", "256", "--height", "256"], {
      env: { ...world.env, MEDIAGATE_OUTPUT_DIR: join(blocker, "sub") },
    });
    expect(byVariable.code, byVariable.stderr).toBe(3);
    expect(byVariable.stderr).toMatch(/MEDIAGATE_OUTPUT_DIR \(or --output-dir\): cannot create the output folder/);

    expect(world.submits()).toBe(0);
    const stored = await runCli(["jobs", "--json"], { env: world.env });
    expect(stored.stdout.trim()).toBe("");
  });

  it("finding 1: results that cannot be saved stay capturing (not failed), and a re-run with a writable --out saves them without paying again", async () => {
    world = await startDWorld({ renderTimeMs: 1_500 });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(6));
    const firstOut = join(world.folder, "first-out");
    const first = startCli(["batch", file, "--out", firstOut], { env: world.env });
    const firstDone = collect(first, 60_000);
    await waitFor(() => world!.submits() >= 6, 20_000, "six submits");
    // The folder turns into a file while the images render: every save now fails with ENOTDIR.
    rmSync(firstOut, { recursive: true, force: true });
    writeFileSync(firstOut, "in the way");
    const stuck = await firstDone;
    expect(stuck.code, stuck.stderr).toBe(1);
    expect(stuck.stderr).toMatch(/0 succeeded, 0 failed, 0 never ran, 6 not saved yet/);
    expect(stuck.stderr).toMatch(/not saved yet: job-\d.*: rendered, but cannot create the output folder .*first-out: a file of that name is in the way \(EEXIST\)/);
    const capturing = parseLines((await runCli(["jobs", "--json", "--state", "capturing"], { env: world.env })).stdout);
    expect(capturing).toHaveLength(6);

    const secondOut = join(world.folder, "second-out");
    const second = await runCli(["batch", file, "--out", secondOut, "--json"], { env: world.env });
    expect(second.code, second.stderr).toBe(0);
    const lines = parseLines(second.stdout);
    expect(lines.map((line) => line.state)).toEqual(Array(6).fill("succeeded"));
    for (const line of lines) {
      expect(line.outputs[0]!.path.startsWith(secondOut)).toBe(true);
      expect(sha256File(line.outputs[0]!.path)).toBe(line.outputs[0]!.sha256);
    }
    expect(world.submits()).toBe(6);
  });

  it("finding 2: generate works only on its own job: 16 jobs queued by another command stay queued and only one submit is sent, within the budget", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const library = await Mediagate.open({ env: world.env, runEngine: false });
    for (let index = 0; index < 16; index++) {
      await library.submit({ provider: "d", model: "gen-2-pro", input: { prompt: `left over ${index}`, width: 256, height: 256 } }, { ref: `left-${index}` });
    }
    await library.close();

    const result = await runCli(
      ["--budget-usd", "0.05", "generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "one image", "--width", "256", "--height", "256", "--ref", "mine", "--json"],
      { env: world.env },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ ref: "mine", state: "succeeded" });
    expect(world.submits()).toBe(1);
    const queued = parseLines((await runCli(["jobs", "--json", "--state", "queued"], { env: world.env })).stdout);
    expect(queued).toHaveLength(16);
  });

  it("finding 3: the interruption hint repeats the store, output folder and budget flags; run as printed from another folder it resumes without paying again", async () => {
    world = await startDWorld({ renderTimeMs: 1_500 });
    writeFileSync(join(world.folder, "h.jsonl"), batchLines(12));
    const elsewhere = join(world.folder, "elsewhere");
    mkdirSync(elsewhere);
    // Relative flags and no MEDIAGATE_STORE / MEDIAGATE_OUTPUT_DIR in the environment: only the printed flags can find them again.
    const env = keysOnly(world.env);
    const first = startCli(["--store", "sqlite:h.db", "--output-dir", "o", "--budget-usd", "5", "batch", "h.jsonl"], { env, cwd: world.folder });
    const firstDone = collect(first, 60_000);
    await waitFor(() => world!.submits() >= 4, 20_000, "four submits");
    first.kill("SIGINT");
    const interrupted = await firstDone;
    expect(interrupted.code, interrupted.stderr).toBe(130);
    const words = printedResume(interrupted.stderr);
    expect(words).toEqual([
      "--store", `sqlite:${join(world.folder, "h.db")}`,
      "--output-dir", join(world.folder, "o"),
      "--budget-usd", "5.0000",
      "batch", join(world.folder, "h.jsonl"),
    ]);
    const sentBefore = world.submits();

    const resumed = await runCli([...words, "--json"], { env, cwd: elsewhere, timeoutMs: 60_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(parseLines(resumed.stdout).filter((line) => line.state === "succeeded")).toHaveLength(12);
    expect(world.submits()).toBe(12);
    expect(world.submits()).toBeGreaterThanOrEqual(sentBefore);
    expect(readdirSync(join(world.folder, "o")).filter((name) => name.endsWith(".png"))).toHaveLength(12);
  });

  it("finding 4: SIGHUP (a closed terminal) detaches like Ctrl-C: no job becomes unknown_submission, and the re-run sends nothing twice", async () => {
    world = await startDWorld({ renderTimeMs: { minMs: 500, maxMs: 1_500 } });
    // Slow submits, so the hang-up lands while several are in flight.
    world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 300 } });
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(20));
    const child = startCli(["batch", file], { env: world.env });
    const done = collect(child, 60_000);
    await waitFor(() => world!.submits() >= 6, 20_000, "six submits");
    child.kill("SIGHUP");
    const hungUp = await done;
    expect(hungUp.signal).toBeNull();
    expect(hungUp.code, hungUp.stderr).toBe(130);
    expect(hungUp.stderr).toMatch(/SIGHUP: detaching/);
    const unknown = parseLines((await runCli(["jobs", "--json", "--state", "unknown_submission"], { env: world.env })).stdout);
    expect(unknown).toEqual([]);

    const resumed = await runCli(["batch", file, "--json"], { env: world.env, timeoutMs: 60_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(parseLines(resumed.stdout).filter((line) => line.state === "succeeded")).toHaveLength(20);
    expect(world.submits()).toBe(20);
  });

  it("finding 5: generate without --ref prints its resume line at once; killed with SIGKILL and run as printed, it resumes the same job with one submit", async () => {
    world = await startDWorld({ renderTimeMs: 2_000 });
    const child = startCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a lighthouse", "--width", "256", "--height", "256"], { env: world.env });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const done = collect(child, 60_000);
    await waitFor(() => /resume it \(not pay again\) with: /.test(stderr), 20_000, "the resume line");
    // Killed once D accepted the job and the answer is recorded (a kill mid-submit is the documented unknown_submission).
    const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
    const deadline = Date.now() + 20_000;
    while ((await store.listJobs({ states: ["running"] })).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await store.close();
    child.kill("SIGKILL");
    await done;
    const words = printedResume(stderr);
    expect(words).toContain("--ref");

    const resumed = await runCli([...words, "--json"], { env: world.env, timeoutMs: 60_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const job = JSON.parse(resumed.stdout) as JobLine;
    expect(job.state).toBe("succeeded");
    expect(world.submits()).toBe(1);
    const all = parseLines((await runCli(["jobs", "--json"], { env: world.env })).stdout);
    expect(all).toHaveLength(1);
  });
});

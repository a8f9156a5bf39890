import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { waitForOutput } from "../helpers/cli-output.js";
import { batchLines, type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { serveSandbox, type Served } from "../helpers/dashboard.js";
import { cliPostgresStore } from "../helpers/pg-cli-store.js";
import { until } from "../helpers/until.js";

let world: DWorld | undefined;
let served: Served | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
  await served?.close();
  served = undefined;
});

const databaseUrl = process.env.DATABASE_URL;

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

/** The flags of a command line that name the output folder. */
function outputFlags(words: readonly string[]): string[] {
  return words.filter((word) => word === "--out" || word === "--output-dir");
}

/** The environment without the variables that select the store and the output folder. */
function keysOnly(env: Record<string, string>): Record<string, string> {
  const { MEDIAGATE_STORE: _store, MEDIAGATE_OUTPUT_DIR: _out, ...rest } = env;
  return rest;
}

/** Every request the sandbox received for a provider (none means nothing was sent, not even a quote). */
function providerRequests(world: DWorld): number {
  return world.sandbox.requests().filter((request) => request.provider !== null).length;
}

// Each test starts the CLI several times: more than the default 30 s on a loaded machine.
describe("careless input and small lies (issue 36, item 10)", { timeout: 120_000 }, () => {
  it("jobs: --limit 0, negative, fractional, in e-notation or past 100000 is refused with exit 2 naming --limit and the range, never answered 'no jobs'", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    for (const [limit, reason] of [
      ["0", "0 is below 1"],
      ["-5", "-5 is below 1"],
      ["2.5", '"2.5" is not a whole number'],
      ["1e3", '"1e3" is not a whole number'],
      ["99999999999999999999999", "99999999999999999999999 is above 100000"],
    ] as const) {
      const result = await runCli(["jobs", "--limit", limit], { env: world.env });
      expect(result.code, `--limit ${limit}: ${result.stderr}`).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toBe(`mediagate: invalid input: --limit: ${reason} (allowed: a whole number from 1 to 100000)\n`);
    }
    const json = await runCli(["--json", "jobs", "--limit", "0"], { env: world.env });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({ error: { code: "invalid_input", field: "--limit", message: "invalid input: --limit: 0 is below 1 (allowed: a whole number from 1 to 100000)" } });
  });

  it("every numeric flag of generate, quote, worker and serve refuses 0, negatives, fractions and huge numbers with exit 2 naming the flag and its range; nothing is sent", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const native = ["--provider", "d", "--model", "gen-2-pro", "--prompt", "a lighthouse"];
    const common = ["--task", "image", "--model", "d/gen-2-pro", "--prompt", "a lighthouse", "--size", "256x256"];
    const cases: Array<[string[], string]> = [
      [["generate", ...native, "--width", "0", "--height", "256"], "--width: 0 is below 1 (allowed: a whole number from 1 to 999999)"],
      [["quote", ...native, "--width", "256", "--height", "-256"], "--height: -256 is below 1 (allowed: a whole number from 1 to 999999)"],
      [["generate", ...native, "--width", "256", "--height", "256", "--seed", "99999999999999999999"], "--seed: 99999999999999999999 is above 9007199254740991 (allowed: a whole number from -9007199254740991 to 9007199254740991)"],
      [["generate", ...common, "--seed", "-1"], "--seed: -1 is below 0 (allowed: a whole number from 0 to 9007199254740991)"],
      [["quote", ...common, "--n", "0"], "--n: 0 is below 1 (allowed: a whole number from 1 to 9007199254740991)"],
      [["generate", ...common, "--n", "1.5"], '--n: "1.5" is not a whole number (allowed: a whole number from 1 to 9007199254740991)'],
      [["generate", "--task", "video", "--model", "d/gen-2-pro", "--prompt", "a kite", "--duration", "0"], "--duration: 0 is not above 0 (allowed: a number of seconds above 0, e.g. 5 or 7.5)"],
      // A timer of more than about 24.8 days fires at once: the stop would end as timed out immediately.
      [["worker", "--stop-timeout", "99999999999"], "--stop-timeout: 99999999999 is above 86400 (allowed: a number of seconds from 0.001 to 86400, e.g. 20)"],
      [["serve", "--stop-timeout", "0.0001"], "--stop-timeout: 0.0001 is below 0.001 (allowed: a number of seconds from 0.001 to 86400, e.g. 20)"],
      [["serve", "--port", "0x50"], '--port: "0x50" is not a whole number (allowed: a whole number from 0 to 65535)'],
      [["token", "create", "careless", "--weight", "0"], "--weight: 0 is below 1 (allowed: a whole number from 1 to 1000)"],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, { env: world.env, timeoutMs: 20_000 });
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toBe(`mediagate: invalid input: ${message}\n`);
    }
    expect(providerRequests(world)).toBe(0);
  });

  it("batch --out: the line printed at Ctrl-C names the folder once, with --out (no --output-dir beside it), and run as printed from another folder it resumes without paying again", async () => {
    world = await startDWorld({ renderTimeMs: { minMs: 200, maxMs: 4_000 } });
    writeFileSync(join(world.folder, "h.jsonl"), batchLines(8));
    const elsewhere = join(world.folder, "elsewhere");
    mkdirSync(elsewhere);
    // Relative paths and no MEDIAGATE_STORE / MEDIAGATE_OUTPUT_DIR: only the printed flags can find them again.
    const env = keysOnly(world.env);
    const first = startCli(["--json", "--store", "sqlite:h.db", "--output-dir", "unused", "batch", "h.jsonl", "--out", "o"], { env, cwd: world.folder });
    const firstDone = collect(first, 60_000);
    await waitForOutput(first, /"state":"succeeded"/);
    first.kill("SIGINT");
    const interrupted = await firstDone;
    expect(interrupted.code, interrupted.stderr).toBe(130);
    const words = printedResume(interrupted.stderr);
    expect(outputFlags(words)).toEqual(["--out"]);
    expect(words).toEqual(["--store", `sqlite:${join(world.folder, "h.db")}`, "--json", "batch", join(world.folder, "h.jsonl"), "--out", join(world.folder, "o")]);
    const sentBefore = world.submits();

    const resumed = await runCli(words, { env, cwd: elsewhere, timeoutMs: 60_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { state: string }).state)).toEqual(Array(8).fill("succeeded"));
    expect(world.submits()).toBe(8);
    expect(world.submits()).toBeGreaterThanOrEqual(sentBefore);
    expect(readdirSync(join(world.folder, "o")).filter((name) => name.endsWith(".png"))).toHaveLength(8);
  });

  it("generate: the resume line printed at once names the output folder once, with the flag the user gave (--out, else --output-dir), and after Ctrl-C run as printed it resumes the same job", async () => {
    world = await startDWorld({ renderTimeMs: 3_000 });
    const env = keysOnly(world.env);
    const request = ["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a lighthouse", "--width", "256", "--height", "256"];
    const store = ["--store", `sqlite:${join(world.folder, "g.db")}`];

    const withOut = startCli([...store, "--output-dir", "unused", ...request, "--out", "mine"], { env, cwd: world.folder });
    const withOutDone = collect(withOut, 60_000);
    await waitForOutput(withOut, /resume it \(not pay again\) with: .*\n/);
    // Ctrl-C once the job is at D (before that the command has not started waiting, and nothing is in flight).
    await until(() => world!.submits() === 1, "D to receive the submit");
    withOut.kill("SIGINT");
    const interrupted = await withOutDone;
    expect(interrupted.code, interrupted.stderr).toBe(130);
    const atOnce = printedResume(interrupted.stderr);
    expect(outputFlags(atOnce)).toEqual(["--out"]);
    expect(atOnce).toContain(join(world.folder, "mine"));
    // The line printed at Ctrl-C is the same one.
    expect(printedResume(interrupted.stderr.slice(interrupted.stderr.indexOf("Resume with:")))).toEqual(atOnce);
    const resumed = await runCli([...atOnce, "--json"], { env, cwd: world.folder, timeoutMs: 60_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const job = JSON.parse(resumed.stdout) as { ref: string; state: string; outputs: Array<{ path: string }> };
    expect(job.state).toBe("succeeded");
    expect(job.outputs[0]!.path.startsWith(join(world.folder, "mine"))).toBe(true);
    expect(world.submits()).toBe(1);

    // Without --out the folder comes from --output-dir (or MEDIAGATE_OUTPUT_DIR), printed as --output-dir, once.
    const withoutOut = await runCli([...store, "--output-dir", "theirs", ...request], { env, cwd: world.folder, timeoutMs: 60_000 });
    expect(withoutOut.code, withoutOut.stderr).toBe(0);
    const printed = printedResume(withoutOut.stderr);
    expect(outputFlags(printed)).toEqual(["--output-dir"]);
    expect(printed[printed.indexOf("--output-dir") + 1]).toBe(join(world.folder, "theirs"));
  });

  it.skipIf(!databaseUrl)("generate on a PostgreSQL store with a password: the resume line shows it masked (***) with a note saying what to put back, never the password", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const password = "resume-line-secret-36";
    const pgStore = await cliPostgresStore(databaseUrl!, { password });
    try {
      const result = await runCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a lighthouse", "--width", "256", "--height", "256"], {
        env: { ...world.env, MEDIAGATE_STORE: pgStore.address },
        timeoutMs: 60_000,
      });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr + result.stdout).not.toContain(password);
      const words = printedResume(result.stderr);
      expect(words[words.indexOf("--store") + 1]).toMatch(/^postgres:\/\/postgres:\*\*\*@/);
      expect(result.stderr).toMatch(/\n {2}\(the store's password is shown as \*\*\*: put it back/);
    } finally {
      await pgStore.cleanup();
    }
  });

  it("MEDIAGATE_ALLOW_PRIVATE_URLS=1: serve (with its engine, and with --no-engine) warns at start that the URL-safety check is lifted, as the README promises, and so does generate; without it, no such warning", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const warning = /"level":40,[^\n]*"msg":"MEDIAGATE_ALLOW_PRIVATE_URLS=1 lifts the URL-safety check: provider-returned URLs and notification addresses may use http and reach loopback, private, link-local and cloud-metadata addresses/;
    const started = (args: string[], env: Record<string, string>) => {
      const serve = startCli(["--json", "serve", "--port", "0", ...args], { env });
      // Both attached at once: each sees only what is written after it is attached.
      return { serve, stopped: collect(serve, 30_000), up: waitForOutput(serve, /^\{"url":/m), warned: waitForOutput(serve, warning) };
    };
    for (const args of [[], ["--no-engine"]]) {
      const { serve, stopped, up, warned } = started(args, { ...world.env, MEDIAGATE_ALLOW_PRIVATE_URLS: "1" });
      await Promise.all([up, warned]);
      serve.kill("SIGTERM");
      const result = await stopped;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr.match(new RegExp(warning.source, "g")), `serve ${args.join(" ")}: said once`).toHaveLength(1);
    }
    // Any command that runs an engine says it too (generate, batch, worker: the engine warns at its start).
    const generate = await runCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a lighthouse", "--width", "256", "--height", "256", "--ref", "private-ok"], {
      env: { ...world.env, MEDIAGATE_ALLOW_PRIVATE_URLS: "1" },
      timeoutMs: 60_000,
    });
    expect(generate.code, generate.stderr).toBe(0);
    expect(generate.stderr.match(new RegExp(warning.source, "g"))).toHaveLength(1);
    const { serve, stopped, up, warned } = started([], world.env);
    warned.catch(() => undefined);
    await up;
    serve.kill("SIGTERM");
    const result = await stopped;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/MEDIAGATE_ALLOW_PRIVATE_URLS/);
  });

  it("batch: each routed line prints its route (and each line its warnings) as generate prints them for its request, named by line; quote --file does the same; a native line prints none", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const routed = { task: "image", prompt: "a fox", size: "1000x750", route: ["e/v3", "d/gen-2-pro"] };
    const file = join(world.folder, "mixed.jsonl");
    writeFileSync(
      file,
      [
        { ref: "fox-1", ...routed },
        { ref: "native-2", provider: "d", model: "gen-2-pro", input: { prompt: "a hen", width: 256, height: 256 } },
        { ref: "fox-3", task: "image", prompt: "a fox", size: "512x512", model: "d/gen-2-pro" },
      ]
        .map((line) => JSON.stringify(line))
        .join("\n"),
    );
    const generate = await runCli(["generate", "--task", "image", "--prompt", "a fox", "--size", "1000x750", "--route", "e/v3,d/gen-2-pro", "--ref", "fox-0"], { env: world.env, timeoutMs: 60_000 });
    expect(generate.code, generate.stderr).toBe(0);
    const routeOfGenerate = /^route: [^\n]*\n(?: {2}[^\n]*\n)*/m.exec(generate.stderr)![0];
    expect(routeOfGenerate).toMatch(/^route: d\/gen-2-pro\n {2}e\/v3 cannot take it: /);
    const warningOfGenerate = /^mediagate: warning: (size 1000x750 sent as [^\n]*)\n/m.exec(generate.stderr)![1]!;

    const batch = await runCli(["batch", file], { env: world.env, timeoutMs: 60_000 });
    expect(batch.code, batch.stderr).toBe(0);
    expect(batch.stderr).toContain(`mediagate: warning (line 1): ${warningOfGenerate}\n`);
    expect(batch.stderr).toContain(`line 1: ${routeOfGenerate}`);
    expect(batch.stderr).toMatch(/^line 3: route: d\/gen-2-pro\n/m);
    expect(batch.stderr).not.toMatch(/line 2/);

    const quote = await runCli(["quote", "--file", file], { env: world.env });
    expect(quote.code, quote.stderr).toBe(0);
    expect(quote.stderr).toContain(`mediagate: warning (line 1): ${warningOfGenerate}\n`);
    expect(quote.stderr).toContain(`line 1: ${routeOfGenerate}`);
    expect(quote.stderr).toMatch(/^line 3: route: d\/gen-2-pro\n/m);
  });

  it("--json: a routing refusal has the API's 422 shape: code no_eligible_target, field, and targets with each target's reasons, the same entries the API answers", async () => {
    served = await serveSandbox({ engine: false });
    const answer = await fetch(`${served.url}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ task: "image", prompt: "a fox", n: 3, route: ["c/v6", "d/gen-2-pro"] }),
    });
    expect(answer.status).toBe(422);
    const api = ((await answer.json()) as { error: Record<string, unknown> }).error;
    expect(api).toMatchObject({ code: "no_eligible_target", field: "route" });

    for (const command of ["generate", "quote"]) {
      const result = await runCli(["--json", command, "--task", "image", "--prompt", "a fox", "--n", "3", "--route", "c/v6,d/gen-2-pro"], { env: served.env });
      expect(result.code, result.stdout).toBe(2);
      const cli = (JSON.parse(result.stdout) as { error: Record<string, unknown> }).error;
      expect(Object.keys(cli).sort()).toEqual(Object.keys(api).sort());
      // The CLI names the flag the user typed; the API the request's field.
      expect(cli).toMatchObject({ code: "no_eligible_target", field: "--route" });
      expect(cli.targets).toEqual(api.targets);
      expect(cli.targets).toEqual([
        { target: "c/v6", reasons: ["task: C makes videos, not images"] },
        { target: "d/gen-2-pro", reasons: [expect.stringMatching(/^size: D needs a size or aspect_ratio/), "n: D makes one image per request, not 3"] },
      ]);
    }
    expect(served.world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
  });

  it("batch: the command its summary prints to list the failures it leaves out lists them all, from another folder too: the --store it was given, and a --limit past the default 50", async () => {
    world = await startDWorld({ renderTimeMs: 100, outcomeRates: { errorRate: 1 } });
    writeFileSync(join(world.folder, "failing.jsonl"), batchLines(51));
    const elsewhere = join(world.folder, "elsewhere");
    mkdirSync(elsewhere);
    const env = keysOnly(world.env);
    const batch = await runCli(["--store", "sqlite:f.db", "--output-dir", "o", "batch", "failing.jsonl"], { env, cwd: world.folder, timeoutMs: 60_000 });
    expect(batch.code, batch.stderr).toBe(1);
    const printed = /\n {2}… and 31 more: mediagate (.+)\n/.exec(batch.stderr);
    expect(printed, batch.stderr).not.toBeNull();
    const words = shellWords(printed![1]!);
    expect(words).toEqual(["--store", `sqlite:${join(world.folder, "f.db")}`, "jobs", "--batch", expect.stringMatching(/^batch_/), "--limit", "51"]);
    const listed = await runCli([...words, "--json"], { env, cwd: elsewhere });
    expect(listed.code, listed.stderr).toBe(0);
    const jobs = listed.stdout.trim().split("\n").map((line) => JSON.parse(line) as { state: string });
    expect(jobs).toHaveLength(51);
    expect(new Set(jobs.map((job) => job.state))).toEqual(new Set(["failed"]));
  });
});

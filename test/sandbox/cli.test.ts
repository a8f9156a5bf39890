import type { ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT } from "../../src/cli/exit-codes.js";
import { registerSandbox } from "../../src/cli/sandbox.js";
import { InputError } from "../../src/core/errors.js";
import { collect, runCli, startCli, type CliResult } from "../helpers/cli.js";

/**
 * `mediagate sandbox` as a real process (from the sources, as every CLI test
 * here), driven over loopback HTTP as another project's test suite would.
 */

const D_KEY = { "x-key": "sandbox-d-key", "content-type": "application/json" };
const SMALL_D = JSON.stringify({ prompt: "a lighthouse", width: 512, height: 512 });

interface RunningCli {
  child: ChildProcess;
  /** What stdout held once the sandbox was listening. */
  stdout: string;
  stop(): Promise<CliResult>;
}

const running: RunningCli[] = [];
afterEach(async () => {
  for (const cli of running.splice(0)) await cli.stop();
});

/** Starts `mediagate ARGS` and waits until stdout holds `ready` (the sandbox listens once it has printed). */
async function startSandboxCli(args: string[], ready: (stdout: string) => boolean): Promise<RunningCli> {
  const child = startCli(args, { env: {} });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + 20_000;
  while (!ready(stdout)) {
    if (gone || Date.now() > deadline) throw new Error(`the sandbox did not start\nstdout: ${stdout}\nstderr: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  let stopped: Promise<CliResult> | undefined;
  const cli: RunningCli = {
    child,
    stdout,
    stop() {
      if (!stopped) {
        const done = collect(child, 10_000).then((result) => ({ ...result, stdout: stdout + result.stdout, stderr: stderr + result.stderr }));
        child.kill("SIGINT");
        stopped = done;
      }
      return stopped;
    },
  };
  running.push(cli);
  return cli;
}

const jsonLine = (stdout: string) => stdout.includes("\n");

describe("mediagate sandbox (the command)", () => {
  it("--json prints one status line (url, port, providers, time scale, webhook timestamps, environment), serves what the flags set, and SIGINT stops it with exit 0", async () => {
    const cli = await startSandboxCli(
      ["--json", "sandbox", "--port", "0", "--providers", "d,b", "--time-scale", "60", "--slots", "d=2", "--render-ms", "d=600000", "--credits", "b=7000000"],
      jsonLine,
    );
    const lines = cli.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const status = JSON.parse(lines[0]!) as Record<string, any>;
    expect(status).toMatchObject({ providers: ["b", "d"], time_scale: 60, seed: 1, webhook_timestamps: "real" });
    expect(status.url).toBe(`http://127.0.0.1:${status.port}`);
    expect(status.base_urls).toEqual({ b: `${status.url}/b`, d: `${status.url}/d` });
    expect(status.environment).toMatchObject({ MEDIAGATE_D_BASE_URL: `${status.url}/d`, MEDIAGATE_D_API_KEY: "sandbox-d-key", MEDIAGATE_D_CONCURRENCY: "2" });
    expect(Object.keys(status.environment).some((name) => name.startsWith("MEDIAGATE_A_"))).toBe(false);

    const submit = () => fetch(`${status.url}/d/v1/gen-2-pro`, { method: "POST", headers: D_KEY, body: SMALL_D });
    const first = (await (await submit()).json()) as { polling_url: string };
    expect((await submit()).status).toBe(200);
    expect((await submit()).status).toBe(429);
    const poll = async () => ((await (await fetch(first.polling_url, { headers: D_KEY })).json()) as { status: string }).status;
    expect(await poll()).toBe("Pending");
    expect((await fetch(`${status.url}/_sandbox/advance?ms=600000`, { method: "POST" })).status).toBe(200);
    expect(await poll()).toBe("Ready");
    const stats = (await (await fetch(`${status.url}/_sandbox/stats`)).json()) as Record<string, any>;
    expect(Object.keys(stats.providers)).toEqual(["b", "d"]);
    expect(stats.timeScale).toBe(60);
    expect(stats.providers.d).toMatchObject({ peakConcurrency: 2, limitRefusals: 1, responses429: 1 });
    expect(stats.providers.b.creditsLeft).toEqual({ amount: 7_000_000, unit: "micro_usd" });

    const result = await cli.stop();
    expect(result.code).toBe(EXIT.ok);
  });

  it("without --json, stdout is only the export lines of the started providers, and stderr says what runs", async () => {
    const cli = await startSandboxCli(["sandbox", "--port", "0", "--providers", "c", "--slots", "c=20"], (stdout) => stdout.includes("MEDIAGATE_C_TIER"));
    const result = await cli.stop();
    const lines = result.stdout.trim().split("\n");
    expect(lines.every((line) => /^export MEDIAGATE_C_[A-Z_]+=\S+$/.test(line))).toBe(true);
    expect(lines).toContain("export MEDIAGATE_C_TIER=scale");
    expect(result.stderr).toMatch(/^mediagate sandbox on http:\/\/127\.0\.0\.1:\d+ \(providers C; time scale 1; webhook timestamps real\)/);
  });

  it("--faults @FILE applies from the start, and POST /_sandbox/reset brings the file's faults back", async () => {
    const folder = mkdtempSync(join(tmpdir(), "mediagate-sandbox-cli-"));
    const file = join(folder, "faults.json");
    writeFileSync(file, JSON.stringify({ d: { status5xx: 1, times: 1 } }));
    const cli = await startSandboxCli(["--json", "sandbox", "--port", "0", "--providers", "d", "--faults", `@${file}`], jsonLine);
    const { url } = JSON.parse(cli.stdout) as { url: string };
    const submit = async () => (await fetch(`${url}/d/v1/gen-2-pro`, { method: "POST", headers: D_KEY, body: SMALL_D })).status;
    expect([await submit(), await submit()]).toEqual([503, 200]);
    expect((await fetch(`${url}/_sandbox/reset`, { method: "POST" })).status).toBe(200);
    expect([await submit(), await submit()]).toEqual([503, 200]);
  });

  it("a port in use exits 3 (configuration) with one line naming --port, not a stack trace", async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as { port: number };
    try {
      const [human, json] = await Promise.all([
        runCli(["sandbox", "--port", String(port)], { env: {}, timeoutMs: 20_000 }),
        runCli(["--json", "sandbox", "--port", String(port)], { env: {}, timeoutMs: 20_000 }),
      ]);
      expect(human.code).toBe(EXIT.notConfigured);
      expect(human.stdout).toBe("");
      expect(human.stderr).toBe(`mediagate: --port: port ${port} on 127.0.0.1 is already in use; choose another port, or 0 for a free one\n`);
      expect(json.code).toBe(EXIT.notConfigured);
      expect(JSON.parse(json.stdout)).toEqual({ error: { code: "port_in_use", field: "--port", message: expect.stringContaining(`port ${port}`) } });
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it("every bad flag value is an InputError naming the flag, what was wrong and what is allowed, before anything listens", async () => {
    const cases: [string[], string, string][] = [
      [["--port", "99999"], "--port", "a whole number from 0 to 65535"],
      [["--port", "80x"], "--port", "a whole number from 0 to 65535"],
      [["--time-scale", "fast"], "--time-scale", "a number above 0"],
      [["--time-scale", "0x10"], "--time-scale", "a number above 0"],
      [["--time-scale", "0"], "--time-scale", "a number above 0"],
      [["--seed", "1.5"], "--seed", "a whole number"],
      [["--providers", "d,x"], "--providers", "a, b, c, d, e, f"],
      [["--render-ms", "8000-2000"], "--render-ms", "MIN ≤ MAX"],
      [["--render-ms", "d=fast"], "--render-ms", "whole milliseconds or a range MIN-MAX"],
      [["--render-ms", "d=5,d=6"], "--render-ms", "each provider once"],
      [["--render-ms", "q=5"], "--render-ms", "providers a to f"],
      [["--providers", "d", "--render-ms", "a=100"], "--render-ms", "the started providers: d"],
      [["--queue-ms", "d=100"], "--queue-ms", "providers a, b"],
      [["--queue-ms", "b=100-200"], "--queue-ms", "one whole number of milliseconds for b"],
      [["--slots", "4"], "--slots", "provider=value pairs"],
      [["--slots", "a=4"], "--slots", "providers b, c, d"],
      [["--slots", "c=4"], "--slots", "3 (free), 15 (essential), 20 (scale) or 25 (business)"],
      [["--slots", "d=0"], "--slots", "a whole number from 1 to 10000"],
      [["--rate", "f=10"], "--rate", "providers a, b, e"],
      [["--credits", "e=10"], "--credits", "providers b, c, d"],
      [["--credits", "d=-1"], "--credits", "a whole number"],
      [["--faults", "{not json"], "--faults", "a JSON object"],
      [["--faults", '{"d": {"status5xx": 5}}'], "--faults", "a number from 0 to 1"],
      [["--faults", '{"d": {"jitter": 5}}'], "--faults", "status5xx, status429"],
      [["--faults", "@/nonexistent/faults.json"], "--faults", "@FILE naming a readable JSON file"],
      [["--webhook-timestamps", "wall"], "--webhook-timestamps", "real or virtual"],
    ];
    for (const [args, flag, allowed] of cases) {
      const program = new Command("mediagate").option("--json").exitOverride();
      registerSandbox(program, () => program.opts());
      const error = await program.parseAsync(["sandbox", "--port", "0", ...args], { from: "user" }).then(
        () => null,
        (caught: unknown) => caught,
      );
      const context = `mediagate sandbox ${args.join(" ")}`;
      expect(error, context).toBeInstanceOf(InputError);
      expect((error as InputError).field, context).toBe(flag);
      expect((error as InputError).allowed, context).toContain(allowed);
      expect((error as InputError).message, context).not.toContain("\n");
    }
  });

  it("a bad flag value exits 2 with one line on stderr (or one JSON error with --json), and nothing on stdout", async () => {
    const [syntax, refused, json] = await Promise.all([
      runCli(["sandbox", "--port", "0", "--render-ms", "8000-2000"], { env: {}, timeoutMs: 20_000 }),
      runCli(["sandbox", "--port", "0", "--slots", "a=4"], { env: {}, timeoutMs: 20_000 }),
      runCli(["--json", "sandbox", "--port", "0", "--faults", '{"d": {"drop": 2}}'], { env: {}, timeoutMs: 20_000 }),
    ]);
    expect([syntax.code, syntax.stdout, syntax.stderr]).toEqual([
      EXIT.invalidInput,
      "",
      'mediagate: invalid input: --render-ms: the range "8000-2000" runs backwards (allowed: MIN-MAX with MIN ≤ MAX, e.g. 2000-8000)\n',
    ]);
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([
      EXIT.invalidInput,
      "",
      "mediagate: invalid input: --slots: provider a has no concurrency cap the sandbox can set (allowed: providers b, c, d)\n",
    ]);
    expect(json.code).toBe(EXIT.invalidInput);
    expect(JSON.parse(json.stdout)).toEqual({
      error: { code: "invalid_input", field: "--faults", message: 'invalid input: --faults: "d.drop" is 2, not a probability (allowed: a number from 0 to 1)' },
    });
  });
});

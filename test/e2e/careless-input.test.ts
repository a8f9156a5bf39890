import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

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
});

import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const generate = ["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a fox", "--width", "256", "--height", "256"];

/**
 * A setting given by a global flag (--store, --output-dir) is the command
 * line's: its mistake is exit 2 naming the flag, as every flag's is (issue
 * 36, finding 10's class); the same mistake in the environment stays a
 * configuration error, exit 3, naming the variable. Nothing is sent.
 */
describe("a global flag's setting refused names the flag (exit 2); the variable's stays exit 3", { timeout: 120_000 }, () => {
  it("--store that is no store address, or a PostgreSQL address that does not parse (its password masked)", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const wrong = await runCli(["--store", "foo:bar", ...generate], { env: world.env });
    expect(wrong.code, wrong.stderr).toBe(2);
    expect(wrong.stderr).toContain('--store: must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE, got "foo:bar"');
    const unparsed = await runCli(["--json", "--store", "postgres://u:hunter2@h:port/db", "jobs"], { env: world.env });
    expect(unparsed.code, unparsed.stderr).toBe(2);
    expect(JSON.parse(unparsed.stdout || unparsed.stderr).error).toMatchObject({ code: "invalid_input", field: "--store" });
    expect(unparsed.stdout + unparsed.stderr).not.toContain("hunter2");
    const byVariable = await runCli(generate, { env: { ...world.env, MEDIAGATE_STORE: "foo:bar" } });
    expect(byVariable.code, byVariable.stderr).toBe(3);
    expect(byVariable.stderr).toContain("MEDIAGATE_STORE (or --store) must be");
    expect(world.submits()).toBe(0);
  });

  it("--output-dir carrying a user and password, or a folder that cannot be made", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const credentials = await runCli(["--output-dir", "s3://key:secret@bucket/x", ...generate], { env: world.env });
    expect(credentials.code, credentials.stderr).toBe(2);
    expect(credentials.stderr).toContain("--output-dir: must not carry a user or password");
    expect(credentials.stderr).not.toContain("secret@");
    const folder = await runCli(["--output-dir", "/proc/mediagate-flag", ...generate], { env: world.env });
    expect(folder.code, folder.stderr).toBe(2);
    expect(folder.stderr).toMatch(/--output-dir: cannot create the output folder \/proc\/mediagate-flag: .*; nothing was sent/);
    expect(world.submits()).toBe(0);
  });
});

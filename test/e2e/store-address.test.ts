import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { waitForOutput } from "../helpers/cli-output.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { type CliPostgresStore, cliPostgresStore } from "../helpers/pg-cli-store.js";

const databaseUrl = process.env.DATABASE_URL;
const PASSWORD = "pw-sentinel-5c1e7b";

let world: DWorld | undefined;
let pgStore: CliPostgresStore | undefined;
afterEach(async () => {
  await pgStore?.cleanup();
  pgStore = undefined;
  await world?.close();
  world = undefined;
});

describe("finding 8: a store that cannot be opened is a configuration error (exit 3), nothing sent", () => {
  it("a PostgreSQL address nothing listens at exits 3 with one sentence naming MEDIAGATE_STORE/--store and the refused address, password masked", async () => {
    world = await startDWorld();
    const store = `postgres://postgres:${PASSWORD}@127.0.0.1:5999/x`;
    const result = await runCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a kite", "--width", "256", "--height", "256"], {
      env: { ...world.env, MEDIAGATE_STORE: store },
    });
    expect(result.code).toBe(3);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      "mediagate: MEDIAGATE_STORE (or --store) postgres://postgres:***@127.0.0.1:5999/x cannot be opened: nothing accepts connections at 127.0.0.1:5999 (connection refused); is PostgreSQL running there?",
    );
    expect(world.submits()).toBe(0);
  });

  it("--json gives one error object: code store_unreachable, field MEDIAGATE_STORE, no password", async () => {
    const result = await runCli(["jobs", "--json", "--store", `postgres://postgres:${PASSWORD}@127.0.0.1:5999/x`], { env: {} });
    expect(result.code).toBe(3);
    const answer = JSON.parse(result.stdout) as { error: { code: string; field: string; message: string } };
    expect(answer.error).toMatchObject({ code: "store_unreachable", field: "MEDIAGATE_STORE" });
    expect(result.stdout + result.stderr).not.toContain(PASSWORD);
  });

  it("a malformed address (notaport, a port that is not a number) exits 3 naming the setting and what is expected", async () => {
    const bare = await runCli(["jobs"], { env: { MEDIAGATE_STORE: "notaport" } });
    expect(bare.code).toBe(3);
    expect(bare.stderr).toBe('mediagate: MEDIAGATE_STORE (or --store) must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE, got "notaport"\n');
    const badPort = await runCli(["worker"], { env: { MEDIAGATE_STORE: `postgres://postgres:${PASSWORD}@127.0.0.1:notaport/x` } });
    expect(badPort.code).toBe(3);
    expect(badPort.stderr).toMatch(/^mediagate: MEDIAGATE_STORE \(or --store\) postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:notaport\/x is not a valid PostgreSQL address: .*numeric port/);
    expect(badPort.stderr).not.toContain(PASSWORD);
    // Given by --store, the same address is the command line's mistake: exit 2 naming the flag (issue 36, finding 10's class).
    const byFlag = await runCli(["worker", "--store", `postgres://postgres:${PASSWORD}@127.0.0.1:notaport/x`], { env: {} });
    expect(byFlag.code).toBe(2);
    expect(byFlag.stderr).toMatch(/^mediagate: invalid input: --store: postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:notaport\/x is not a valid PostgreSQL address: .*numeric port/);
    expect(byFlag.stderr).not.toContain(PASSWORD);
  });

  it("SQLite under a missing folder exits 3 naming the folder, and creates nothing", async () => {
    world = await startDWorld();
    const missing = join(world.folder, "no-such-folder");
    const result = await runCli(["jobs"], { env: { MEDIAGATE_STORE: `sqlite:${join(missing, "jobs.db")}` } });
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(
      `mediagate: MEDIAGATE_STORE (or --store) sqlite:${join(missing, "jobs.db")} cannot be opened: the folder ${missing} does not exist (create it, or choose a file in an existing folder)\n`,
    );
    expect(existsSync(missing)).toBe(false);
  });

  it("a file that is not a SQLite database exits 3 with SQLite's reason", async () => {
    const result = await runCli(["jobs"], { env: { MEDIAGATE_STORE: `sqlite:${join(process.cwd(), "package.json")}` } });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/cannot be opened: SQLite cannot use .*package\.json: .*\(SQLITE_NOTADB\)\n$/);
  });

  it.runIf(databaseUrl)("a database that does not exist exits 3 with PostgreSQL's reason and its SQLSTATE", async () => {
    const address = new URL(databaseUrl!);
    address.pathname = "/mg_no_such_database";
    address.password = PASSWORD;
    const result = await runCli(["jobs"], { env: { MEDIAGATE_STORE: address.toString() } });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/cannot be opened: PostgreSQL refused: database "mg_no_such_database" does not exist \(SQLSTATE 3D000\)\n$/);
    expect(result.stderr).not.toContain(PASSWORD);
  });
});

describe.runIf(databaseUrl)("finding 7: credentials in a store address are masked wherever it is printed", () => {
  for (const command of [["worker"], ["serve", "--port", "0"]]) {
    it(`${command[0]} on postgres://user:PASSWORD@… prints the address with the password masked, in its start line and its debug log`, async () => {
      world = await startDWorld();
      pgStore = await cliPostgresStore(databaseUrl!, { password: PASSWORD });
      const child = startCli(command, { env: { ...world.env, MEDIAGATE_STORE: pgStore.address, MEDIAGATE_LOG_LEVEL: "debug" } });
      const finished = collect(child, 30_000);
      const [startLine] = await waitForOutput(child, /^mediagate (worker|serve) .*$/m);
      child.kill("SIGTERM");
      const result = await finished;
      expect(result.code, `${result.signal} ${result.stdout} ${result.stderr}`).toBe(0);
      expect(startLine).toContain(`postgres://postgres:***@`);
      expect(startLine).toContain(pgStore.applicationName);
      expect(result.stdout + result.stderr).not.toContain(PASSWORD);
    });
  }
});

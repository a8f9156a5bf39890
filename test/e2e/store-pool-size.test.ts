import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { batchLines, type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { type CliPostgresStore, cliPostgresStore, watchConnections } from "../helpers/pg-cli-store.js";

const databaseUrl = process.env.DATABASE_URL;

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/**
 * Runs a 48-job D batch through the CLI on a sandbox and a schema of its own, counting the CLI's connections (by their
 * application name) every 5 ms; both are removed after.
 */
async function batchCountingConnections(extraEnv: Record<string, string>): Promise<{ code: number | null; stderr: string; succeeded: number; most: number }> {
  const batchWorld = await startDWorld({ renderTimeMs: 150 });
  let pgStore: CliPostgresStore | undefined;
  try {
    pgStore = await cliPostgresStore(databaseUrl!);
    const file = join(batchWorld.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(48));
    const watcher = await watchConnections(databaseUrl!, pgStore.applicationName);
    let most = 0;
    let result: Awaited<ReturnType<typeof runCli>>;
    try {
      result = await runCli(["batch", file, "--json"], { env: { ...batchWorld.env, MEDIAGATE_STORE: pgStore.address, ...extraEnv }, timeoutMs: 60_000 });
    } finally {
      most = await watcher.stop();
    }
    const succeeded = result.stdout.trim().split("\n").filter((line) => line && (JSON.parse(line) as { state: string }).state === "succeeded").length;
    return { code: result.code, stderr: result.stderr, succeeded, most };
  } finally {
    await pgStore?.cleanup();
    await batchWorld.close();
  }
}

describe("MEDIAGATE_STORE_POOL_SIZE: the most connections a process opens to a PostgreSQL store", () => {
  it("a value that is not a whole number from 1 to 1000 exits 3 naming it, before the store is opened or anything is sent", async () => {
    world = await startDWorld();
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(2));
    const result = await runCli(["batch", file], { env: { ...world.env, MEDIAGATE_STORE_POOL_SIZE: "0" } });
    expect(result.code).toBe(3);
    expect(result.stderr).toBe('mediagate: MEDIAGATE_STORE_POOL_SIZE must be a whole number of connections from 1 to 1000 (default 10), got "0"\n');
    expect(world.submits()).toBe(0);
  });

  it.runIf(databaseUrl)("a batch of 48 D jobs with MEDIAGATE_STORE_POOL_SIZE=1 runs every job on one connection; by default the same batch opens more", async () => {
    const one = await batchCountingConnections({ MEDIAGATE_STORE_POOL_SIZE: "1" });
    expect(one.code, one.stderr).toBe(0);
    expect(one.succeeded).toBe(48);
    expect(one.most).toBe(1);
    const byDefault = await batchCountingConnections({});
    expect(byDefault.code, byDefault.stderr).toBe(0);
    expect(byDefault.succeeded).toBe(48);
    expect(byDefault.most).toBeGreaterThan(1);
    expect(byDefault.most).toBeLessThanOrEqual(10);
  }, 120_000);
});

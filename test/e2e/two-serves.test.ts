import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import { collect, startCli } from "../helpers/cli.js";
import { waitForOutput } from "../helpers/cli-output.js";
import { startDWorld } from "../helpers/d-sandbox.js";
import { cliPostgresStore, type CliPostgresStore } from "../helpers/pg-cli-store.js";

const databaseUrl = process.env.DATABASE_URL;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `mediagate serve` as a process of its own (the built CLI) on `env`'s store; its URL from its status line. */
async function startServe(env: Record<string, string>): Promise<string> {
  const server: ChildProcess = startCli(["serve", "--port", "0", "--no-engine", "--json"], { env });
  const finished = collect(server, 120_000);
  cleanups.push(async () => {
    server.kill("SIGTERM");
    await finished;
  });
  const [line] = await waitForOutput(server, /^\{"url":.*\}$/m, 40_000);
  return (JSON.parse(line) as { url: string }).url;
}

async function post(url: string, token: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}/v1/jobs`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

const image = (ref?: string) => ({ ...(ref ? { ref } : {}), provider: "d", model: "gen-2-pro", input: { prompt: "a shared store", width: 512, height: 512 } });

describe.skipIf(!databaseUrl)("two `mediagate serve` processes on one PostgreSQL store", () => {
  it("admission is atomic across them: 50 concurrent POSTs of $0.03 split between both under a $0.09 token budget get exactly 3 × 201; 20 concurrent POSTs under one Idempotency-Key split between both make one job", async () => {
    const world = await startDWorld({ renderTimeMs: 200 });
    cleanups.push(() => world.close());
    const database: CliPostgresStore = await cliPostgresStore(databaseUrl!);
    cleanups.push(() => database.cleanup());
    const budgeted = await createToken(database.store, { name: "alice", budgetMicroUsd: 90_000, now: Date.now() });
    const keyed = await createToken(database.store, { name: "bob", now: Date.now() });
    const env = { ...world.env, MEDIAGATE_STORE: database.address };
    const servers = await Promise.all([startServe(env), startServe(env)]);

    const answers = await Promise.all(Array.from({ length: 50 }, (_, index) => post(servers[index % 2]!, budgeted.secret, image(`shared-${index}`))));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(3);
    expect(answers.filter((answer) => answer.status === 402)).toHaveLength(47);
    expect((await database.store.budget(budgeted.token.budgetId!))!.committedMicroUsd).toBe(90_000);
    expect(await database.store.listJobs({ tenant: budgeted.token.id })).toHaveLength(3);

    const retries = await Promise.all(Array.from({ length: 20 }, (_, index) => post(servers[index % 2]!, keyed.secret, image(), { "idempotency-key": "shared-key" })));
    expect(retries.map((answer) => answer.status)).toEqual(Array(20).fill(201));
    expect(new Set(retries.map((answer) => answer.body.id)).size).toBe(1);
    expect(await database.store.listJobs({ tenant: keyed.token.id })).toHaveLength(1);
  });
});

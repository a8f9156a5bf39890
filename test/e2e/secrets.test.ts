import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config.js";
import { isTerminal } from "../../src/core/job.js";
import { Engine } from "../../src/engine/engine.js";
import type { JobRequest } from "../../src/providers/adapter.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import { type AllEmulators, type Sandbox, startSandbox } from "../../src/sandbox/index.js";
import type { KyselyStore } from "../../src/store/kysely-store.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/store.js";
import { type CliResult, collect, runCli, startCli } from "../helpers/cli.js";
import { waitForOutput } from "../helpers/cli-output.js";
import { type CliPostgresStore, cliPostgresStore } from "../helpers/pg-cli-store.js";
import { tempDir } from "../helpers/stores.js";

const databaseUrl = process.env.DATABASE_URL;

/** Every secret, with a value found nowhere else, so any appearance of one is a leak. */
const SECRETS = {
  MEDIAGATE_A_API_KEY: "sk-sentinel-a-3f9c1d0e",
  MEDIAGATE_B_API_KEY: "sk-sentinel-b-7a2e4b91",
  MEDIAGATE_C_API_KEY: "sk-sentinel-c-5b8e2a64",
  MEDIAGATE_D_API_KEY: "sk-sentinel-d-1c7f3e28",
  MEDIAGATE_E_CLIENT_SECRET: "sentinel-e-client-secret-4d6a",
  MEDIAGATE_F_API_KEY: "sk-sentinel-f-8e3b7c05",
} as const;
const B_WEBHOOK_KEY = "sentinel-b-webhook-key-9d1f";
const B_WEBHOOK_SECRET = `whsec_${Buffer.from(B_WEBHOOK_KEY).toString("base64")}`;
const STORE_PASSWORD = "sentinel-store-pw-2b9d";
/** Credentials the providers refuse (the 401 flows): secrets all the same. */
const WRONG = {
  MEDIAGATE_B_API_KEY: "sk-sentinel-wrong-b-0f4d",
  MEDIAGATE_D_API_KEY: "sk-sentinel-wrong-d-6e0a",
  MEDIAGATE_E_CLIENT_SECRET: "sentinel-wrong-e-secret-1a2b",
  MEDIAGATE_F_API_KEY: "sk-sentinel-wrong-f-93c7",
} as const;

let sandbox: Sandbox;
let emulators: AllEmulators;
let folder: { path: string; remove(): void };
let pgStore: CliPostgresStore | undefined;
let store: Store;
let env: Record<string, string>;

/** Every sentinel, plus the access tokens E has issued so far (secrets too). */
function sentinels(): string[] {
  return [
    ...Object.values(SECRETS),
    ...Object.values(WRONG),
    B_WEBHOOK_SECRET,
    B_WEBHOOK_SECRET.slice("whsec_".length),
    B_WEBHOOK_KEY,
    STORE_PASSWORD,
    ...emulators.e.tokens().map((token) => token.accessToken),
  ];
}

/** Where a secret shows up in `text`, as "label: …context…"; empty when it is clean. */
function leaks(label: string, text: string): string[] {
  const found: string[] = [];
  for (const secret of sentinels()) {
    const at = text.indexOf(secret);
    if (at >= 0) found.push(`${label}: …${text.slice(Math.max(0, at - 80), at + secret.length + 40)}…`);
  }
  return found;
}

function expectClean(label: string, ...texts: string[]): void {
  expect(texts.flatMap((text, index) => leaks(`${label}#${index}`, text))).toEqual([]);
}

function expectRunClean(label: string, result: CliResult): void {
  expectClean(label, result.stdout, result.stderr);
}

/** Every row of every table of the store, and every URL the sandbox was sent (keys never go in a URL). */
async function expectStoreAndRequestUrlsClean(): Promise<void> {
  const db = (store as KyselyStore).db;
  const tables =
    store.dialect === "sqlite"
      ? (await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.execute(db)).rows.map((row) => row.name)
      : (await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`.execute(db)).rows.map((row) => row.name);
  expect(tables).toContain("job_events");
  for (const table of tables) {
    const rows = (await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)}`.execute(db)).rows;
    expectClean(`store table ${table}`, JSON.stringify(rows));
  }
  expectClean("request URLs at the sandbox", sandbox.requests().map((request) => request.url).join("\n"));
}

const JOBS: Record<string, JobRequest & { ref?: string }> = {
  a: { provider: "a", model: "vidgen-2-0-250601", input: { prompt: "a secret-free lighthouse", duration: 5, resolution: "480p" } },
  b: { provider: "b", model: "vendorx/video-2.5", operation: "text-to-video", input: { prompt: "a secret-free paper boat", resolution: "720p", duration_s: 5 } },
  c: { provider: "c", model: "v6", input: { prompt: "a secret-free kite" } },
  d: { provider: "d", model: "gen-2-pro", input: { prompt: "a secret-free harbour", width: 256, height: 256 } },
  e: { provider: "e", model: "v3", input: { prompt: "a secret-free crane" } },
  f: { provider: "f", model: "img-v2", input: { text_prompt: "a secret-free red kite", resolution: "1024x1024" } },
};

function batchFile(name: string, lines: Array<{ ref: string } & JobRequest>): string {
  const file = join(folder.path, name);
  writeFileSync(file, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  return file;
}

/** Queues a job in the store as `generate` would, without running it (for `worker` and `serve` to pick up). */
async function queueJob(ref: string, request: JobRequest): Promise<string> {
  const providers = createProviderRegistry(loadConfig({ env, cwd: folder.path }));
  const adapter = providers.get(request.provider)!.adapter!;
  // B checks a request against its catalog, read first (never started: this engine only lends its HTTP context).
  if (adapter.prefetch) await adapter.prefetch(request, await new Engine({ store, providers, secrets: () => sentinels() }).providerContext(request.provider));
  const validated = adapter.validate(request);
  const [result] = await store.insertJobs(
    [
      {
        id: `job_${ref}`,
        ref,
        batchId: null,
        provider: request.provider,
        model: validated.model,
        operation: validated.operation,
        body: validated.body,
        facts: validated.facts,
        warnings: validated.warnings,
        estimateMicroUsd: null,
        estimateSource: "test",
        outDir: join(folder.path, "out"),
      },
    ],
    Date.now(),
  );
  return result!.job.id;
}

async function untilTerminal(ids: string[], alive: ChildProcess): Promise<void> {
  for (let tries = 0; ; tries++) {
    if ((await store.listJobs({ ids })).every((job) => isTerminal(job.state))) return;
    if (alive.exitCode !== null || alive.signalCode !== null) throw new Error("the process ended before its jobs did");
    if (tries > 2_400) throw new Error("jobs not terminal within 120 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return typeof address === "object" && address ? address.port : 0;
}

/**
 * `serve` on a port picked here, since its public URL (where B's webhooks go) must name the port before it starts;
 * started again on another port when something took that one between the pick and serve's listen (an outgoing
 * connection of a test running beside it: CI saw EADDRINUSE). serve listens before its engine starts, so a start
 * that failed sent nothing.
 */
async function startServe(env: Record<string, string>): Promise<{ serve: ChildProcess; finished: Promise<CliResult>; publicUrl: string }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const serve = startCli(["serve", "--port", String(port)], { env: { ...env, MEDIAGATE_PUBLIC_URL: publicUrl } });
    const finished = collect(serve, 120_000);
    try {
      await waitForOutput(serve, /mediagate serve on /);
      return { serve, finished, publicUrl };
    } catch (error) {
      const { stderr } = await finished;
      if (attempt < 5 && /EADDRINUSE/.test(stderr)) continue;
      throw error;
    }
  }
}

beforeAll(async () => {
  sandbox = await startSandbox({
    emulators: {
      a: { standardKeys: [SECRETS.MEDIAGATE_A_API_KEY], queueMs: 0, renderMs: 1_000 },
      b: { apiKeys: [SECRETS.MEDIAGATE_B_API_KEY], webhookSecret: B_WEBHOOK_SECRET, queueTimeMs: 100, renderTimeMs: 500, settlementDelayMs: 500 },
      c: { apiKey: SECRETS.MEDIAGATE_C_API_KEY, renderMs: 1_000 },
      d: { apiKeys: [SECRETS.MEDIAGATE_D_API_KEY], renderTimeMs: 300 },
      e: { clients: [{ clientId: "sandbox-e-client", clientSecret: SECRETS.MEDIAGATE_E_CLIENT_SECRET }], renderMs: 1_000 },
      f: { apiKey: SECRETS.MEDIAGATE_F_API_KEY, renderMs: 800 },
    },
  });
  // All six are started.
  emulators = sandbox.emulators as AllEmulators;
  folder = tempDir("mediagate-secrets-");
  let storeAddress: string;
  if (databaseUrl) {
    pgStore = await cliPostgresStore(databaseUrl, { password: STORE_PASSWORD });
    store = pgStore.store;
    storeAddress = pgStore.address;
  } else {
    const file = join(folder.path, "mediagate.db");
    store = await openSqliteStore(file);
    storeAddress = `sqlite:${file}`;
  }
  env = {
    ...sandbox.environment,
    ...SECRETS,
    MEDIAGATE_B_WEBHOOK_SECRET: B_WEBHOOK_SECRET,
    MEDIAGATE_STORE: storeAddress,
    MEDIAGATE_OUTPUT_DIR: join(folder.path, "out"),
    MEDIAGATE_LOG_LEVEL: "debug",
  };
});

afterAll(async () => {
  if (pgStore) await pgStore.cleanup();
  else await store?.close();
  await sandbox?.stop();
  folder?.remove();
});

describe(`secrets never leave (${databaseUrl ? "PostgreSQL store with a password" : "SQLite store"}; every key and secret a sentinel; debug logs)`, () => {
  it("generate and batch on A–F, then jobs, show, balance, plan and quote (text and --json): no key, secret or store password in any output or log line, stored record or request URL", async () => {
    const generate = await runCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a secret-free quay", "--width", "256", "--height", "256", "--ref", "gen-d"], { env, timeoutMs: 120_000 });
    expect(generate.code, generate.stderr).toBe(0);
    expectRunClean("generate", generate);

    const file = batchFile("all.jsonl", Object.entries(JOBS).map(([provider, request]) => ({ ref: `all-${provider}`, ...request })));
    const batch = await runCli(["batch", file, "--json"], { env, timeoutMs: 180_000 });
    expect(batch.code, batch.stderr).toBe(0);
    expectRunClean("batch --json", batch);
    const lines = batch.stdout.trim().split("\n").map((line) => JSON.parse(line) as { id: string; provider: string; state: string });
    expect(lines.map((line) => [line.provider, line.state]).sort()).toEqual(["a", "b", "c", "d", "e", "f"].map((provider) => [provider, "succeeded"]));
    expect(emulators.e.tokens().length).toBeGreaterThan(0);

    for (const args of [["jobs"], ["jobs", "--json"], ["balance", "--json"], ["plan", file, "--json"], ["quote", "--file", file]]) {
      const result = await runCli(args, { env });
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
      expectRunClean(args.join(" "), result);
    }
    for (const line of lines.filter((item) => item.provider === "b" || item.provider === "e")) {
      for (const args of [["show", line.id], ["show", line.id, "--json"]]) {
        const show = await runCli(args, { env });
        expect(show.code, show.stderr).toBe(0);
        expectRunClean(args.join(" "), show);
      }
    }
    await expectStoreAndRequestUrlsClean();
  }, 600_000);

  it("worker --json works a queued job with debug logs and shows no secret", async () => {
    const id = await queueJob("worker-d", { ...JOBS.d!, input: { prompt: "a secret-free worker job", width: 256, height: 256 } });
    const worker = startCli(["worker", "--json"], { env });
    const finished = collect(worker, 120_000);
    await untilTerminal([id], worker);
    worker.kill("SIGTERM");
    const result = await finished;
    expect(result.code, result.stderr).toBe(0);
    expect((await store.getJob(id))!.state).toBe("succeeded");
    expectRunClean("worker --json", result);
    await expectStoreAndRequestUrlsClean();
  }, 180_000);

  it("serve: a B job with its signed webhook, a forged webhook, an unknown provider and /healthz: no secret in any answer or line", async () => {
    const id = await queueJob("serve-b", JOBS.b!);
    const { serve, finished, publicUrl } = await startServe(env);
    await untilTerminal([id], serve);
    // A job B fails with a message quoting the key: its signed delivery brings that status, which is then kept.
    emulators.b.failNextJobs(1, { code: "generation_failed", message: `the key ${SECRETS.MEDIAGATE_B_API_KEY} may not use this model` });
    const quoting = await queueJob("serve-b-failing", { ...JOBS.b!, input: { ...JOBS.b!.input, prompt: "a secret-free failure" } });
    await untilTerminal([quoting], serve);
    expect((await store.getJob(quoting))!.error?.code).toBe("generation_failed");
    await emulators.b.flushWebhooks();
    const answers: string[] = [];
    const ask = async (path: string, init?: RequestInit) => {
      const response = await fetch(`${publicUrl}${path}`, init);
      answers.push(`${response.status} ${JSON.stringify([...response.headers])} ${await response.text()}`);
      return response.status;
    };
    const forged = { "content-type": "application/json", "webhook-id": "msg_forged", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,Zm9yZ2Vk" };
    expect(await ask(`/webhooks/b/${id}`, { method: "POST", headers: forged, body: JSON.stringify({ id: "forged" }) })).toBe(401);
    expect(await ask("/webhooks/zz", { method: "POST", body: "{}" })).toBe(404);
    expect(await ask("/healthz")).toBe(200);
    serve.kill("SIGTERM");
    const result = await finished;

    expect(result.code, result.stderr).toBe(0);
    expect((await store.getJob(id))!.state).toBe("succeeded");
    expect(emulators.b.deliveries.some((delivery) => delivery.url === `${publicUrl}/webhooks/b/${id}` && delivery.state === "delivered")).toBe(true);
    expect((await store.deliveries({ provider: "b" })).map((delivery) => delivery.outcome)).toContain("applied");
    // Refused deliveries are counted, not stored one by one (their counters, flushed when serve stops, hold no request data).
    expect((await store.webhookRejections({ provider: "b" })).reduce((sum, count) => sum + count.refused, 0)).toBeGreaterThanOrEqual(1);
    expectRunClean("serve", result);
    expectClean("serve answers", ...answers);
    await expectStoreAndRequestUrlsClean();
  }, 180_000);

  it("errors: keys the providers refuse (D 401, E's token 401, F 401, B 401 at submit): no secret in messages, job errors or stored details", async () => {
    const wrongEnv = { ...env, ...WRONG };
    const file = batchFile(
      "refused.jsonl",
      (["d", "e", "f"] as const).map((provider) => ({ ref: `refused-${provider}`, ...JOBS[provider]! })),
    );
    for (const args of [[...["batch", file]], ["batch", file, "--json"]]) {
      const batch = await runCli(args, { env: wrongEnv, timeoutMs: 180_000 });
      expect(batch.code, batch.stderr).toBe(1);
      expectRunClean(args.join(" "), batch);
    }
    const refused = await store.listJobs({ states: ["failed"] });
    expect(refused.map((job) => job.ref).filter((ref) => ref.startsWith("refused-")).sort()).toEqual(["refused-d", "refused-e", "refused-f"]);
    for (const job of refused.filter((item) => item.ref.startsWith("refused-"))) {
      const show = await runCli(["show", job.id, "--json"], { env: wrongEnv });
      expectRunClean(`show ${job.ref}`, show);
    }
    // spec B: the catalog and quotes need no key, so B refuses the key at submit.
    const bRequest = ["--provider", "b", "--model", "vendorx/video-2.5", "--operation", "text-to-video", "--input", JSON.stringify(JOBS.b!.input)];
    const generateB = await runCli(["generate", ...bRequest, "--ref", "refused-b"], { env: wrongEnv, timeoutMs: 120_000 });
    expect(generateB.code, generateB.stderr).toBe(1);
    expect((await store.findJob("refused-b"))!.error!.message).not.toBe("");
    expectRunClean("generate b", generateB);
    const quoteB = await runCli(["quote", ...bRequest, "--json"], { env: wrongEnv });
    expectRunClean("quote b", quoteB);
    await expectStoreAndRequestUrlsClean();
  }, 600_000);

  it("a provider that quotes the key back (D's 401 on submit and on a poll, a D failure status, B's spend read listing it): redacted in every message, stored detail and output", async () => {
    const quoted = { kind: "status", status: 401, body: { detail: `invalid key ${SECRETS.MEDIAGATE_D_API_KEY} for this account` } } as const;
    try {
      sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: quoted, times: 1 });
      const submit = await runCli(["generate", ...["--provider", "d", "--model", "gen-2-pro", "--prompt", "quoted on submit", "--width", "256", "--height", "256"], "--ref", "quoted-submit", "--json"], { env, timeoutMs: 120_000 });
      expect(submit.code, submit.stderr).toBe(1);
      expectRunClean("generate, 401 quoting the key on submit", submit);

      sandbox.injectFault({ provider: "d", method: "GET", path: /get_result/, fault: quoted });
      const poll = await runCli(["generate", ...["--provider", "d", "--model", "gen-2-pro", "--prompt", "quoted on poll", "--width", "256", "--height", "256"], "--ref", "quoted-poll"], { env, timeoutMs: 120_000 });
      expect(poll.code, poll.stderr).toBe(1);
      expectRunClean("generate, 401 quoting the key on a poll", poll);
      sandbox.clearFaults();

      // A failure status that quotes the key: its raw answer is kept as the job's error detail.
      sandbox.injectFault({ provider: "d", method: "GET", path: /get_result/, fault: { kind: "status", status: 200, body: { status: "Failed", details: `rejected for key ${SECRETS.MEDIAGATE_D_API_KEY}` } } });
      const failed = await runCli(["generate", ...["--provider", "d", "--model", "gen-2-pro", "--prompt", "quoted in a status", "--width", "256", "--height", "256"], "--ref", "quoted-status"], { env, timeoutMs: 120_000 });
      expect(failed.code, failed.stderr).toBe(1);
      expect((await store.findJob("quoted-status"))!.error!.code).toBe("provider_failed");
      expectRunClean("generate, a Failed status quoting the key", failed);
      for (const ref of ["quoted-submit", "quoted-poll", "quoted-status"]) expectRunClean(`show ${ref}`, await runCli(["show", ref, "--json"], { env }));
      sandbox.clearFaults();

      const today = new Date().toISOString().slice(0, 10);
      const spendAnswer = { total_micro_usd: 1_000, days: [{ date: today, items: [{ key: SECRETS.MEDIAGATE_B_API_KEY, model: "vendorx/video-2.5", charge_micro_usd: 1_000, jobs: 1 }] }] };
      sandbox.injectFault({ provider: "b", method: "GET", path: /spend/, fault: { kind: "status", status: 200, body: spendAnswer } });
      for (const args of [["spend", "--from", today, "--to", today], ["spend", "--from", today, "--to", today, "--json"]]) {
        const spend = await runCli(args, { env });
        expect(spend.code, spend.stderr).toBe(0);
        expectRunClean(args.join(" "), spend);
      }
    } finally {
      sandbox.clearFaults();
    }
    await expectStoreAndRequestUrlsClean();
  }, 300_000);

  it("a store that cannot be opened, with its password in the address (refused, malformed): no password in any message, text or --json", async () => {
    for (const address of [`postgres://postgres:${STORE_PASSWORD}@127.0.0.1:5999/x`, `postgres://postgres:${STORE_PASSWORD}@127.0.0.1:notaport/x`]) {
      for (const args of [["jobs"], ["jobs", "--json"], ["worker"], ["jobs", "--store", address, "--json"]]) {
        const result = await runCli(args, { env: { ...env, MEDIAGATE_STORE: address } });
        // A malformed address given by --store is the command line's mistake (exit 2); the rest the configuration's.
        expect(result.code).toBe(args.includes("--store") && address.includes("notaport") ? 2 : 3);
        expectRunClean(`${args.join(" ")} on ${address}`, result);
      }
    }
  }, 300_000);
});

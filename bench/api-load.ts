/**
 * Issue 12's load check: 200 concurrent API clients against one `mediagate
 * serve` (the built CLI in its own process, SQLite by default, or PostgreSQL
 * with BENCH_STORES=postgres and DATABASE_URL), sandbox D in a child process
 * with a raised cap so jobs also run while the API is loaded. Each client
 * loops for BENCH_API_SECONDS (60): submit a job (POST /v1/jobs), read it
 * (GET /v1/jobs/{id}), list a page (GET /v1/jobs?limit=20), and every tenth
 * turn fetch the output of a job found succeeded. Reports p50/p99 latency per route,
 * requests per second, errors (any non-2xx/304 or network error), the
 * server's CPU per request and peak RSS. Bounded: the clients stop at the
 * deadline and the run is killed past it plus 60 s.
 *
 * BENCH_API_CLIENTS (200), BENCH_API_SECONDS (60), BENCH_STORES (sqlite).
 * Needs `npm run build` first.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { checkBuiltCli, cliEnvironment, quantile, recordResult, startSandboxChild, tempFolder, withDatabase } from "./harness.js";

const CLIENTS = Number(process.env.BENCH_API_CLIENTS ?? 200);
const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 60);
/** Seconds of load before the measured ones (BENCH_API_WARMUP_SECONDS). */
const WARMUP_SECONDS = Number(process.env.BENCH_API_WARMUP_SECONDS ?? 10);
const STORES = (process.env.BENCH_STORES ?? "sqlite").split(",").filter((kind) => kind !== "postgres" || process.env.DATABASE_URL);
const CLI = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const USAGE_REPORT = fileURLToPath(new URL("./usage-report.mjs", import.meta.url));

type Route = "POST /v1/jobs" | "GET /v1/jobs/{id}" | "GET /v1/jobs" | "GET /v1/jobs/{id}/outputs/0";

interface Row {
  store: string;
  clients: number;
  seconds: number;
  requests: number;
  errors: number;
  errorKinds: Record<string, number>;
  byRoute: Record<string, { count: number; p50: number; p99: number }>;
  jobsSubmitted: number;
  jobsSucceeded: number;
  serverCpuMsPerRequest: number;
  serverPeakRssMb: number;
}

async function startServe(env: NodeJS.ProcessEnv, cwd: string): Promise<{ url: string; stop(): Promise<{ cpuMs: number; maxRssMb: number } | null> }> {
  const usageFile = join(cwd, `.usage-serve-${Date.now()}.json`);
  const child = spawn(process.execPath, ["--import", USAGE_REPORT, CLI, "--json", "serve", "--port", "0"], { cwd, env: { ...env, BENCH_USAGE_FILE: usageFile }, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start in 20 s: ${stderr}`)), 20_000);
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const line = out.split("\n").find((text) => text.startsWith("{"));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    child.once("exit", (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
      if (!existsSync(usageFile)) return null;
      const raw = JSON.parse(readFileSync(usageFile, "utf8")) as { userMs: number; systemMs: number; maxRssKb: number };
      rmSync(usageFile, { force: true });
      return { cpuMs: raw.userMs + raw.systemMs, maxRssMb: (raw.maxRssKb * 1024) / 1e6 };
    },
  };
}

async function runOne(kind: string): Promise<Row> {
  const folder = tempFolder();
  // A raised cap: the jobs the clients submit run while the API is under load, and the queue does not grow without end.
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: { minMs: 300, maxMs: 800 }, concurrencyLimit: 400 } });
  try {
    const measure = async (store: string): Promise<Row> => {
      const env = cliEnvironment(sandbox.url, join(folder.path, "out"), { MEDIAGATE_STORE: store, MEDIAGATE_D_CONCURRENCY: "400" });
      const serve = await startServe(env, folder.path);
      const latencies = new Map<Route, number[]>();
      const errorKinds: Record<string, number> = {};
      let requests = 0;
      let submitted = 0;
      const finished: string[] = [];
      // The first seconds are not counted: 200 clients arriving at once at a process whose code is not compiled yet
      // measure its start, not its steady state (the first wave of submits took up to 11 s to be answered).
      const warmUntil = Date.now() + WARMUP_SECONDS * 1000;
      const deadline = warmUntil + SECONDS * 1000;
      const timed = async (route: Route, path: string, init?: RequestInit): Promise<Response | null> => {
        const started = performance.now();
        const counted = Date.now() >= warmUntil;
        if (counted) requests++;
        try {
          const response = await fetch(`${serve.url}${path}`, init);
          await response.arrayBuffer().catch(() => undefined);
          if (counted) {
            const list = latencies.get(route) ?? [];
            list.push(performance.now() - started);
            latencies.set(route, list);
          }
          // Errors count during the warm-up too: none is acceptable.
          if (!response.ok && response.status !== 304) errorKinds[`${route} ${response.status}`] = (errorKinds[`${route} ${response.status}`] ?? 0) + 1;
          return response;
        } catch (error) {
          const kind = `${route} ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name}`;
          errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
          return null;
        }
      };
      const client = async (index: number) => {
        for (let turn = 0; Date.now() < deadline; turn++) {
          const ref = `load-${index}-${turn}`;
          const created = await timed("POST /v1/jobs", "/v1/jobs", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ ref, provider: "d", model: "gen-2-pro", input: { prompt: `load ${index} ${turn}`, width: 256, height: 256 } }),
          });
          if (!created?.ok) continue;
          submitted++;
          const read = await fetch(`${serve.url}/v1/jobs?ref=${ref}`).then((response) => response.json() as Promise<{ jobs: Array<{ id: string; state: string }> }>).catch(() => null);
          const id = read?.jobs[0]?.id;
          if (id) await timed("GET /v1/jobs/{id}", `/v1/jobs/${id}`);
          // Outputs of jobs found succeeded in a listing (a job just submitted has none yet).
          if (turn % 10 === 0) {
            const done = await fetch(`${serve.url}/v1/jobs?state=succeeded&limit=20`).then((response) => response.json() as Promise<{ jobs: Array<{ id: string }> }>).catch(() => null);
            for (const job of done?.jobs ?? []) if (!finished.includes(job.id)) finished.push(job.id);
          }
          await timed("GET /v1/jobs", "/v1/jobs?limit=20");
          if (turn % 10 === 9 && finished.length > 0) await timed("GET /v1/jobs/{id}/outputs/0", `/v1/jobs/${finished[Math.floor(Math.random() * finished.length)]}/outputs/0`);
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, (_, index) => client(index)));
      const succeeded = await fetch(`${serve.url}/v1/jobs?state=succeeded&limit=200`).then((response) => response.json() as Promise<{ jobs: unknown[] }>).then((page) => page.jobs.length).catch(() => 0);
      const usage = await serve.stop();
      const byRoute: Row["byRoute"] = {};
      for (const [route, values] of latencies) {
        const sorted = [...values].sort((left, right) => left - right);
        byRoute[route] = { count: sorted.length, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
      }
      const errors = Object.values(errorKinds).reduce((sum, count) => sum + count, 0);
      return {
        store: kind,
        clients: CLIENTS,
        seconds: SECONDS,
        requests,
        errors,
        errorKinds,
        byRoute,
        jobsSubmitted: submitted,
        jobsSucceeded: succeeded,
        serverCpuMsPerRequest: (usage?.cpuMs ?? Number.NaN) / requests,
        serverPeakRssMb: usage?.maxRssMb ?? Number.NaN,
      };
    };
    return kind === "sqlite" ? await measure(`sqlite:${join(folder.path, "api.db")}`) : await withDatabase(measure);
  } finally {
    await sandbox.stop();
    folder.remove();
  }
}

export async function runApiLoad(): Promise<void> {
  checkBuiltCli();
  const rows: Row[] = [];
  for (const kind of STORES) {
    process.stderr.write(`api-load: ${kind}, ${CLIENTS} clients for ${SECONDS} s…\n`);
    const row = await runOne(kind);
    process.stderr.write(`  ${JSON.stringify(row)}\n`);
    rows.push(row);
  }
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const lines = [
    `## The REST API under load: ${CLIENTS} concurrent clients for ${SECONDS} s against one \`mediagate serve\` (issue 12)`,
    "",
    `Run ${new Date().toISOString()} on ${process.version}; \`mediagate serve\` as the built CLI in its own process (its engine running), sandbox D in a child process (400 slots, renders 0.3–0.8 s), all on loopback. Each client loops: POST /v1/jobs (a D job), GET /v1/jobs/{id}, GET /v1/jobs?limit=20, and every tenth turn GET the output of a job found succeeded. Latency is the client's, from send to the last byte, over the ${SECONDS} s after ${WARMUP_SECONDS} s of the same load (errors are counted over both).`,
    "",
    "| store | route | requests | p50 | p99 |",
    "|---|---|---|---|---|",
    ...rows.flatMap((row) => Object.entries(row.byRoute).map(([route, stats]) => `| ${row.store} | ${route} | ${stats.count} | ${ms(stats.p50)} | ${ms(stats.p99)} |`)),
    "",
    "| store | requests | per second | errors | jobs submitted | jobs succeeded by the end (first 200 counted) | server CPU per request | server peak RSS |",
    "|---|---|---|---|---|---|---|---|",
    ...rows.map((row) => `| ${row.store} | ${row.requests} | ${(row.requests / row.seconds).toFixed(0)} | ${row.errors}${row.errors ? ` (${Object.entries(row.errorKinds).map(([kind, count]) => `${kind}: ${count}`).join(", ")})` : ""} | ${row.jobsSubmitted} | ${row.jobsSucceeded} | ${ms(row.serverCpuMsPerRequest)} | ${row.serverPeakRssMb.toFixed(0)} MB |`),
  ];
  recordResult("api-load", lines.join("\n"));
}

/**
 * Issue 35's intake check: how fast `POST /v1/jobs` admits jobs, against the
 * floor of any HTTP intake on the same machine and store, both measured in
 * one run. 50 clients (BENCH_INTAKE_CLIENTS) each loop: POST a D job with a
 * ref of its own, wait for the answer, POST the next. Two servers, each in
 * its own process, taking turns (BENCH_ROUNDS rounds, default 2):
 *
 * - intake: `mediagate serve --no-engine` (the built CLI; no token, so the
 *   local operator), which validates, estimates, checks the budget and the
 *   ref, proves the output folder and stores the job and its first event;
 * - floor: a bare Fastify route parsing the JSON and inserting one row into a
 *   store of the same kind (bench/intake-floor.ts).
 *
 * For each: requests a second over BENCH_INTAKE_SECONDS (15) after
 * BENCH_INTAKE_WARMUP_SECONDS (5) of the same load, p50 and p99 latency, and
 * for intake its CPU per request. Target (issue 35): intake ÷ floor ≥ 0.33,
 * intake's p99 under 4× its p50. Nothing is sent to a provider: D's address
 * is configured but the engine does not run. Needs `npm run build` first.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { checkBuiltCli, cliEnvironment, median, quantile, recordResult, tempFolder, withDatabase } from "./harness.js";

const CLIENTS = Number(process.env.BENCH_INTAKE_CLIENTS ?? 50);
const SECONDS = Number(process.env.BENCH_INTAKE_SECONDS ?? 15);
const WARMUP_SECONDS = Number(process.env.BENCH_INTAKE_WARMUP_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const STORES = (process.env.BENCH_STORES ?? "sqlite,postgres").split(",").filter((kind) => kind !== "postgres" || process.env.DATABASE_URL);
const CLI = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const FLOOR = fileURLToPath(new URL("./intake-floor.ts", import.meta.url));
const USAGE_REPORT = fileURLToPath(new URL("./usage-report.mjs", import.meta.url));

interface Server {
  url: string;
  /** Stops it; its own CPU time when it reports one (the intake does, through usage-report.mjs). */
  stop(): Promise<number | null>;
}

interface Measure {
  side: "intake" | "floor";
  store: string;
  round: number;
  requests: number;
  perSecond: number;
  p50: number;
  p99: number;
  errors: Record<string, number>;
  cpuMsPerRequest: number | null;
}

/** A child that prints `{"url": …}` (the first line starting with `{`) once listening. */
async function started(child: ChildProcess, usageFile: string | null): Promise<Server> {
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start in 30 s: ${stderr}`)), 30_000);
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const line = out.split("\n").find((text) => text.startsWith("{"));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    child.once("exit", (code) => reject(new Error(`the server exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
      if (usageFile === null || !existsSync(usageFile)) return null;
      const raw = JSON.parse(readFileSync(usageFile, "utf8")) as { userMs: number; systemMs: number };
      rmSync(usageFile, { force: true });
      return raw.userMs + raw.systemMs;
    },
  };
}

function startIntake(store: string, folder: string): Promise<Server> {
  const usageFile = join(folder, `.usage-intake-${Date.now()}.json`);
  // D's address is never called: the engine does not run.
  const env = { ...cliEnvironment("http://127.0.0.1:59999", join(folder, "out"), { MEDIAGATE_STORE: store }), BENCH_USAGE_FILE: usageFile };
  const child = spawn(process.execPath, ["--import", USAGE_REPORT, CLI, "--json", "serve", "--no-engine", "--port", "0"], { cwd: folder, env, stdio: ["ignore", "pipe", "pipe"] });
  return started(child, usageFile);
}

function startFloor(store: string): Promise<Server> {
  // From the repository, where `tsx` resolves.
  const child = spawn(process.execPath, ["--import", "tsx", FLOOR, store], { cwd: fileURLToPath(new URL("..", import.meta.url)), stdio: ["ignore", "pipe", "pipe"] });
  return started(child, null);
}

/** CLIENTS loops of POST /v1/jobs for WARMUP_SECONDS + SECONDS; latency and count over the last SECONDS. */
async function load(url: string, tag: string): Promise<Omit<Measure, "side" | "store" | "round" | "cpuMsPerRequest">> {
  const latencies: number[] = [];
  const errors: Record<string, number> = {};
  // undici's own client, a connection a client kept alive: fetch costs the measuring process several times more a
  // request, and on two cores its CPU would be what is measured.
  const pool = new Pool(url, { connections: CLIENTS, pipelining: 1 });
  const warmUntil = Date.now() + WARMUP_SECONDS * 1000;
  const deadline = warmUntil + SECONDS * 1000;
  const client = async (index: number) => {
    for (let turn = 0; Date.now() < deadline; turn++) {
      const body = JSON.stringify({ ref: `${tag}-${index}-${turn}`, provider: "d", model: "gen-2-pro", input: { prompt: `intake ${index} ${turn}`, width: 256, height: 256 } });
      const began = performance.now();
      const counted = Date.now() >= warmUntil;
      try {
        const response = await pool.request({ method: "POST", path: "/v1/jobs", headers: { "content-type": "application/json" }, body });
        await response.body.arrayBuffer();
        if (response.statusCode !== 201) errors[`HTTP ${response.statusCode}`] = (errors[`HTTP ${response.statusCode}`] ?? 0) + 1;
        else if (counted && Date.now() <= deadline) latencies.push(performance.now() - began);
      } catch (error) {
        const kind = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
        errors[kind] = (errors[kind] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, index) => client(index)));
  await pool.close();
  const sorted = latencies.sort((left, right) => left - right);
  return { requests: sorted.length, perSecond: sorted.length / SECONDS, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), errors };
}

async function measureSide(side: Measure["side"], kind: string, store: string, folder: string, round: number): Promise<Measure> {
  const server = side === "intake" ? await startIntake(store, folder) : await startFloor(store);
  const measured = await load(server.url, `${side}-${round}`);
  const cpuMs = await server.stop();
  return { side, store: kind, round, ...measured, cpuMsPerRequest: cpuMs === null ? null : cpuMs / measured.requests };
}

async function runStore(kind: string): Promise<Measure[]> {
  const measures: Measure[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // A fresh store for each side and round: neither inherits the other's rows.
    for (const side of ["floor", "intake"] as const) {
      const folder = tempFolder();
      try {
        const run = (store: string) => measureSide(side, kind, store, folder.path, round);
        const measure = kind === "sqlite" ? await run(`sqlite:${join(folder.path, `${side}.db`)}`) : await withDatabase(run);
        process.stderr.write(`  ${JSON.stringify(measure)}\n`);
        measures.push(measure);
      } finally {
        folder.remove();
      }
    }
  }
  return measures;
}

export async function runIntake(): Promise<void> {
  checkBuiltCli();
  const measures: Measure[] = [];
  for (const kind of STORES) {
    process.stderr.write(`intake: ${kind}, ${CLIENTS} clients, ${ROUNDS} round(s) of floor then intake, ${SECONDS} s each after ${WARMUP_SECONDS} s…\n`);
    measures.push(...(await runStore(kind)));
  }
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const summary = STORES.map((kind) => {
    const of = (side: Measure["side"]) => measures.filter((measure) => measure.store === kind && measure.side === side);
    const intake = median(of("intake").map((measure) => measure.perSecond));
    const floor = median(of("floor").map((measure) => measure.perSecond));
    const tails = of("intake").map((measure) => measure.p99 / measure.p50);
    return `| ${kind} | ${intake.toFixed(0)} | ${floor.toFixed(0)} | ${(intake / floor).toFixed(2)} | ${tails.map((tail) => tail.toFixed(1)).join(", ")} |`;
  });
  const lines = [
    `## Intake: POST /v1/jobs against a bare insert, ${CLIENTS} clients (issue 35)`,
    "",
    `Run ${new Date().toISOString()} on ${process.version}, ${ROUNDS} round(s) per store, each a fresh store per side: the floor (a bare Fastify route inserting one row, bench/intake-floor.ts) then intake (\`mediagate serve --no-engine\`, the built CLI, no token). ${CLIENTS} clients each POST a D job with its own ref and wait for the answer; counted over ${SECONDS} s after ${WARMUP_SECONDS} s of the same load. Targets: intake ÷ floor ≥ 0.33, intake's p99 under 4× its p50.`,
    "",
    "| store | side | round | requests | per second | p50 | p99 | errors | server CPU per request |",
    "|---|---|---|---|---|---|---|---|---|",
    ...measures.map(
      (measure) =>
        `| ${measure.store} | ${measure.side} | ${measure.round} | ${measure.requests} | ${measure.perSecond.toFixed(0)} | ${ms(measure.p50)} | ${ms(measure.p99)} | ${Object.entries(measure.errors).map(([kind, count]) => `${kind}: ${count}`).join(", ") || "0"} | ${measure.cpuMsPerRequest === null ? "–" : ms(measure.cpuMsPerRequest)} |`,
    ),
    "",
    "| store | intake per second (median) | floor per second (median) | intake ÷ floor | intake p99 ÷ p50 (each round) |",
    "|---|---|---|---|---|",
    ...summary,
  ];
  recordResult("intake", lines.join("\n"));
}

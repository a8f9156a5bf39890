/**
 * Issue 37, part 3: what traces cost, and that they cost nothing unset.
 * Alternating rounds of fresh processes (bench/trace-cost-child.ts), each the
 * library running BENCH_JOBS D jobs against the sandbox (a child process of
 * its own) on a fresh SQLite store: `before` (the code before traces existed,
 * extracted from git at the commit before src/core/trace-context.ts was
 * added, run on the same node_modules), `unset` (this code, no OTEL_
 * variable), `unset again` (the same, for the noise between two identical
 * runs), and `exporting` (OTEL_EXPORTER_OTLP_ENDPOINT at a sink in this
 * process answering 200, the default http/protobuf). Reports CPU per job
 * (median over the rounds, and the ratios within each round), and which
 * @opentelemetry packages each process loaded: none unset.
 */
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { median, recordResult, startSandboxChild, tempFolder } from "./harness.js";

const JOBS = Number(process.env.BENCH_JOBS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const RENDER_MS = Number(process.env.BENCH_RENDER_MS ?? 300);

interface ChildRun {
  cpuMs: number;
  wallMs: number;
  succeeded: number;
  packages: string[];
  modules: number;
}

const VARIANTS = ["before", "unset", "unset again", "exporting"] as const;
type Variant = (typeof VARIANTS)[number];

const REPOSITORY = fileURLToPath(new URL("..", import.meta.url));

/**
 * The sources as they were before traces (BENCH_TRACE_BASELINE, default the parent of the commit that added
 * src/core/trace-context.ts), with this child script beside them and this checkout's node_modules: the baseline
 * that `unset` must not be measurably worse than.
 */
function extractBaseline(folder: string): { commit: string; script: string } {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: REPOSITORY, encoding: "utf8" }).trim();
  const commit = process.env.BENCH_TRACE_BASELINE ?? git("rev-parse", `${git("log", "-1", "--format=%H", "--diff-filter=A", "--", "src/core/trace-context.ts")}^`);
  execFileSync("sh", ["-c", `git archive ${commit} src package.json | tar -x -C "${folder}"`], { cwd: REPOSITORY });
  symlinkSync(join(REPOSITORY, "node_modules"), join(folder, "node_modules"));
  mkdirSync(join(folder, "bench"));
  copyFileSync(fileURLToPath(new URL("./trace-cost-child.ts", import.meta.url)), join(folder, "bench", "trace-cost-child.ts"));
  return { commit: commit.slice(0, 7), script: join(folder, "bench", "trace-cost-child.ts") };
}

function runChild(env: NodeJS.ProcessEnv, script = fileURLToPath(new URL("./trace-cost-child.ts", import.meta.url))): Promise<ChildRun> {
  const child = spawn(process.execPath, ["--import", "tsx", script], { env, stdio: ["ignore", "pipe", "inherit"] });
  let stdout = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as ChildRun) : reject(new Error(`trace-cost child exited with ${code}`))));
  });
}

export async function runTraceCost(): Promise<void> {
  // The collector stand-in: reads each export whole and answers OTLP's empty success.
  let exports = 0;
  let exportedBytes = 0;
  const sink = createServer((request, response) => {
    request.on("data", (chunk: Buffer) => (exportedBytes += chunk.length));
    request.on("end", () => {
      exports++;
      response.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const baselineFolder = tempFolder();
  const baseline = extractBaseline(baselineFolder.path);
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: RENDER_MS } });
  const runs = new Map<Variant, ChildRun[]>(VARIANTS.map((variant) => [variant, []]));
  const ratios: Array<{ unset: number; again: number; exporting: number }> = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const cpuPerJob: Partial<Record<Variant, number>> = {};
      for (const variant of VARIANTS) {
        const folder = tempFolder();
        try {
          const env: NodeJS.ProcessEnv = {
            PATH: process.env.PATH,
            BENCH_JOBS: String(JOBS),
            MEDIAGATE_STORE: `sqlite:${folder.path}/bench.db`,
            MEDIAGATE_OUTPUT_DIR: `${folder.path}/out`,
            MEDIAGATE_D_BASE_URL: `${sandbox.url}/d`,
            MEDIAGATE_D_API_KEY: "sandbox-d-key",
            ...(variant === "exporting" ? { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } : {}),
          };
          const run = await runChild(env, variant === "before" ? baseline.script : undefined);
          if (run.succeeded !== JOBS) throw new Error(`${variant}: ${run.succeeded} of ${JOBS} jobs succeeded`);
          runs.get(variant)!.push(run);
          cpuPerJob[variant] = run.cpuMs / JOBS;
          process.stderr.write(`round ${round + 1} ${variant}: ${(run.cpuMs / JOBS).toFixed(2)} ms CPU a job, ${run.packages.length} @opentelemetry packages\n`);
        } finally {
          folder.remove();
        }
      }
      ratios.push({ unset: cpuPerJob.unset! / cpuPerJob.before!, again: cpuPerJob["unset again"]! / cpuPerJob.unset!, exporting: cpuPerJob.exporting! / cpuPerJob.unset! });
    }
  } finally {
    baselineFolder.remove();
    await sandbox.stop();
    await new Promise<void>((resolve) => sink.close(() => resolve()));
  }

  const row = (variant: Variant) => {
    const list = runs.get(variant)!;
    const cpu = list.map((run) => run.cpuMs / JOBS);
    const packages = [...new Set(list.flatMap((run) => run.packages))];
    return `| ${variant} | ${median(cpu).toFixed(2)} | ${Math.min(...cpu).toFixed(2)}–${Math.max(...cpu).toFixed(2)} | ${median(list.map((run) => run.wallMs)).toFixed(0)} | ${packages.length === 0 ? "none" : `${packages.length}: ${packages.map((name) => name.replace("@opentelemetry/", "")).join(", ")}`} |`;
  };
  const fmt = (values: number[]) => `${median(values).toFixed(3)} (${Math.min(...values).toFixed(3)}–${Math.max(...values).toFixed(3)})`;
  recordResult(
    "trace-cost",
    `## Traces: what they cost, and nothing unset (issue 37, part 3)

${new Date().toISOString().slice(0, 10)}: ${ROUNDS} rounds, each four fresh processes in turn running the library with ${JOBS} D jobs against the sandbox (a child process; renders ${RENDER_MS} ms, 24 slots) on a fresh SQLite store, CPU of the measured process from its first submit to its close (the exporter's final flush included). \`before\` is the code before traces (${baseline.commit}, extracted from git, on the same node_modules); the others this code.

| run | CPU ms a job (median) | range | wall ms (median) | @opentelemetry packages loaded |
|---|---|---|---|---|
${VARIANTS.map(row).join("\n")}

Within each round, CPU a job, median (range) over the rounds: unset ÷ before ${fmt(ratios.map((ratio) => ratio.unset))}; unset again ÷ unset ${fmt(ratios.map((ratio) => ratio.again))}, the noise between two identical runs; exporting ÷ unset ${fmt(ratios.map((ratio) => ratio.exporting))}. The sink received ${exports} export requests, ${(exportedBytes / 1024).toFixed(0)} KiB in all (${ROUNDS} exporting runs).

Unset, no OpenTelemetry package is loaded (the process's module cache holds none): the tracer is imported only when an endpoint is configured, and a job's path then costs a null check at admission, at each provider call context and at each notification. "Not measurably different" means unset ÷ before inside the spread of unset again ÷ unset.`,
  );
}

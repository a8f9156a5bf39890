import { fork, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { JobRequest, ProviderAdapter } from "../src/providers/adapter.js";
import type { NewJob } from "../src/store/store.js";
import { BUILT_CLI as CLI, staleBuild } from "../test/helpers/built-cli.js";

export interface SandboxChild {
  url: string;
  stats<T>(): Promise<T>;
  /** The sandbox's virtual time now (for an engine clock that runs in step with it). */
  now(): Promise<number>;
  /**
   * When each POST to `provider` arrived (real time), of those that arrived at or after virtual time `since`: a
   * small answer, for a loop that asks often (`stats` sends the whole request log, which loads the machine it measures).
   */
  postsSince(provider: string, since: number): Promise<number[]>;
  stop(): Promise<void>;
}

/** Starts the sandbox in a child process (so the engine's CPU time is measured alone). */
export async function startSandboxChild(options: unknown): Promise<SandboxChild> {
  const script = fileURLToPath(new URL("./sandbox-child.ts", import.meta.url));
  const child: ChildProcess = fork(script, [JSON.stringify(options)], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("sandbox child did not start in 20 s")), 20_000);
    child.once("message", (message: { type: string; url: string }) => {
      clearTimeout(timer);
      resolve(message.url);
    });
    child.once("exit", (code) => reject(new Error(`sandbox child exited with ${code}`)));
  });
  return {
    url,
    stats<T>() {
      return new Promise<T>((resolve) => {
        child.once("message", (message: { type: string; stats: T }) => resolve(message.stats));
        child.send({ type: "stats" });
      });
    },
    now() {
      return new Promise<number>((resolve) => {
        child.once("message", (message: { type: string; now: number }) => resolve(message.now));
        child.send({ type: "now" });
      });
    },
    postsSince(provider: string, since: number) {
      return new Promise<number[]>((resolve) => {
        child.once("message", (message: { type: string; posts: number[] }) => resolve(message.posts));
        child.send({ type: "posts", provider, since });
      });
    },
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.send({ type: "stop" });
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function tempFolder(): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), "mediagate-bench-"));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** The machine's CPU time in ticks since boot (Linux /proc/stat's first line); null where there is none. */
interface CpuTicks {
  total: number;
  steal: number;
}

function cpuTicks(): CpuTicks | null {
  if (!existsSync("/proc/stat")) return null;
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is counted in user already).
  const counted = fields.slice(0, 8);
  return { total: counted.reduce((sum, value) => sum + value, 0), steal: counted[7] ?? 0 };
}

/** How often the host's steal time is sampled while a benchmark runs, and the window its worst share is given for. */
const STEAL_SAMPLE_MS = 5_000;
const STEAL_WINDOW_SAMPLES = 2;

/**
 * The host's steal time while one benchmark runs: on a virtual machine the host can take a share of the CPU, and a
 * benchmark run while it took a fifth of it measures the host, not the code (it happened here: 22–50% for minutes).
 * Each section of RESULTS.md says what its run lost, over the whole run and in its worst ten seconds.
 */
let stealWatch: { samples: CpuTicks[]; timer: NodeJS.Timeout } | null = null;

/** Starts watching the host's steal time for the benchmark about to run (bench/run.ts calls it before each). */
export function watchStealTime(): void {
  if (stealWatch) clearInterval(stealWatch.timer);
  const first = cpuTicks();
  if (!first) {
    stealWatch = null;
    return;
  }
  const samples = [first];
  const timer = setInterval(() => {
    const sample = cpuTicks();
    if (sample) samples.push(sample);
  }, STEAL_SAMPLE_MS);
  timer.unref();
  stealWatch = { samples, timer };
}

/** The steal line of a section: the share of the machine's CPU time the host took since `watchStealTime`. */
function stealTimeLine(): string | null {
  if (!stealWatch) return null;
  const last = cpuTicks();
  if (!last) return null;
  const samples = [...stealWatch.samples, last];
  const share = (from: CpuTicks, to: CpuTicks) => (to.total > from.total ? (to.steal - from.steal) / (to.total - from.total) : 0);
  let worst = 0;
  for (let index = STEAL_WINDOW_SAMPLES; index < samples.length; index++) worst = Math.max(worst, share(samples[index - STEAL_WINDOW_SAMPLES]!, samples[index]!));
  const whole = share(samples[0]!, last);
  const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
  const worstText = samples.length > STEAL_WINDOW_SAMPLES ? `, ${percent(worst)} in its worst ${(STEAL_SAMPLE_MS * STEAL_WINDOW_SAMPLES) / 1000} s` : "";
  const warning = Math.max(whole, worst) > 0.05 ? " More than 5%: these figures measure the host as much as the code; run again." : "";
  return `Host steal time during this run (from /proc/stat): ${percent(whole)} of the machine's CPU time${worstText}.${warning}`;
}

/** BENCH_CLI_NODE_FLAGS: flags for the node of each measured CLI process (V8's heap settings, a CPU profile). */
export function benchNodeFlags(): string[] {
  return process.env.BENCH_CLI_NODE_FLAGS?.split(" ").filter(Boolean) ?? [];
}

/** Replaces (or appends) the section of bench/RESULTS.md between this benchmark's markers, with the run's steal time. */
export function recordResult(name: string, markdown: string): void {
  const file = fileURLToPath(new URL("./RESULTS.md", import.meta.url));
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const steal = stealTimeLine();
  const block = `${begin}\n${markdown.trim()}${steal ? `\n\n${steal}` : ""}\n${end}`;
  const current = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmark results\n\nEach section is rewritten by its benchmark (`npm run bench -- NAME`).\n";
  const pattern = new RegExp(`${begin}[\\s\\S]*?${end}`);
  writeFileSync(file, pattern.test(current) ? current.replace(pattern, block) : `${current.trimEnd()}\n\n${block}\n`);
}

/** Requests per sliding window: the most that fell in any window of `windowMs` (real time), and where. */
export function busiestWindow(times: number[], windowMs: number): { count: number; startsAt: number } {
  const sorted = [...times].sort((left, right) => left - right);
  let best = { count: 0, startsAt: sorted[0] ?? 0 };
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= windowMs) start++;
    if (end - start + 1 > best.count) best = { count: end - start + 1, startsAt: sorted[start]! };
  }
  return best;
}

export function mean(values: number[]): number {
  return values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : 0;
}

/** The value at `q` (0–1) of `sorted` (ascending), nearest rank; NaN for none. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** The middle value of `values` (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** `count` jobs of `request(index)`, validated and priced by the adapter, as the store takes them. */
export async function benchJobs(
  adapter: ProviderAdapter,
  count: number,
  request: (index: number) => JobRequest,
  options: { idPrefix: string; refPrefix: string; batchId: string; outDir: string; idDigits: number },
): Promise<NewJob[]> {
  const jobs: NewJob[] = [];
  for (let index = 0; index < count; index++) {
    const validated = adapter.validate(request(index));
    const estimate = await adapter.estimate(validated);
    jobs.push({
      id: `${options.idPrefix}${String(index).padStart(options.idDigits, "0")}`,
      ref: `${options.refPrefix}${index}`,
      batchId: options.batchId,
      provider: validated.provider,
      model: validated.model,
      operation: null,
      body: validated.body,
      facts: validated.facts,
      warnings: validated.warnings,
      estimateMicroUsd: estimate.microUsd,
      estimateSource: estimate.source,
      outDir: options.outDir,
    });
  }
  return jobs;
}

/** N D jobs of gen-2-pro at 256×256 (see `benchJobs`). */
export function dBenchJobs(
  adapter: ProviderAdapter,
  count: number,
  options: { idPrefix: string; refPrefix: string; prompt: string; batchId: string; outDir: string; idDigits: number },
): Promise<NewJob[]> {
  return benchJobs(adapter, count, (index) => ({ provider: "d", model: "gen-2-pro", input: { prompt: `${options.prompt} ${index}`, width: 256, height: 256, seed: index } }), options);
}

const USAGE_REPORT = fileURLToPath(new URL("./usage-report.mjs", import.meta.url));

/** Benchmarks that run the built CLI refuse a dist/ older than src/: it would measure other code than the one under review. */
export function checkBuiltCli(): void {
  const stale = staleBuild();
  if (stale) throw new Error(`${stale}: run \`npm run build\` first, so the CLI measured is the code in src/`);
}

/** Only the sandbox's D: no MEDIAGATE_* setting of the caller's shell (another store, a budget) leaks into the run. */
export function cliEnvironment(sandboxUrl: string, outputDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(([name]) => !name.startsWith("MEDIAGATE_"));
  return { ...Object.fromEntries(inherited), MEDIAGATE_D_BASE_URL: `${sandboxUrl}/d`, MEDIAGATE_D_API_KEY: "sandbox-d-key", MEDIAGATE_OUTPUT_DIR: outputDir, ...extra };
}

export interface CliExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The CLI process's own CPU time and peak RSS (from its exit), when it exited normally. */
  usage: { cpuMs: number; maxRssMb: number; peakHeapMb: number; cpuMsAfter(realAt: number): number } | null;
}

/** Runs the built CLI as a user would, killed at `deadlineMs`; its own CPU time and peak RSS come back with its exit. */
export function runCli(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; deadlineMs: number }): Promise<CliExit> {
  const usageFile = join(options.cwd, `.usage-${process.pid}-${Date.now()}.json`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...benchNodeFlags(), "--import", USAGE_REPORT, CLI, ...args], {
      cwd: options.cwd,
      env: { ...options.env, BENCH_USAGE_FILE: usageFile },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.deadlineMs);
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      let usage: CliExit["usage"] = null;
      if (existsSync(usageFile)) {
        const raw = JSON.parse(readFileSync(usageFile, "utf8")) as { userMs: number; systemMs: number; maxRssKb: number; peakHeapBytes: number; cpuTrace: Array<[number, number]>; heapTrace?: number[][] };
        if (raw.heapTrace) process.stderr.write(`  heap (s: heap used/committed/RSS/external/peak RSS MiB): ${raw.heapTrace.map((sample) => `${sample[0]}:${sample.slice(1).join("/")}`).join(" ")}\n`);
        const cpuMs = raw.userMs + raw.systemMs;
        // The CPU spent after a moment: the total less what the last sample before it had counted (at most 250 ms early).
        const cpuMsAfter = (realAt: number) => cpuMs - (raw.cpuTrace.filter(([at]) => at <= realAt).at(-1)?.[1] ?? 0);
        usage = { cpuMs, maxRssMb: (raw.maxRssKb * 1024) / 1e6, peakHeapMb: raw.peakHeapBytes / 1e6, cpuMsAfter };
        rmSync(usageFile, { force: true });
      }
      resolve({ code, signal, stdout, stderr, usage });
    });
  });
}

/** A PostgreSQL database of its own (from DATABASE_URL) for one run, dropped afterwards; `sizeOut` gets the bytes it grew by. */
export async function withDatabase<T>(run: (address: string) => Promise<T>, sizeOut?: (bytes: number) => void): Promise<T> {
  const name = `mg_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const address = new URL(process.env.DATABASE_URL!);
    address.pathname = `/${name}`;
    const result = await run(address.toString());
    if (sizeOut) {
      const size = await admin.query<{ bytes: string }>("select pg_database_size($1) as bytes", [name]);
      const empty = await admin.query<{ bytes: string }>("select pg_database_size('template1') as bytes");
      sizeOut(Number(size.rows[0]!.bytes) - Number(empty.rows[0]!.bytes));
    }
    return result;
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

/** A batch file of `count` D jobs on gen-2-pro, square images of `side` pixels, as a user writes one for `mediagate batch`. */
export function dBatchFile(count: number, options: { refPrefix: string; prompt: (index: number) => string; side: number }): string {
  const lines = Array.from({ length: count }, (_, index) =>
    JSON.stringify({ ref: `${options.refPrefix}${index}`, provider: "d", model: "gen-2-pro", input: { prompt: options.prompt(index), width: options.side, height: options.side, seed: index } }),
  );
  return `${lines.join("\n")}\n`;
}

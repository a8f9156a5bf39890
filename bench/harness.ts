import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ProviderAdapter } from "../src/providers/adapter.js";
import type { NewJob } from "../src/store/store.js";

export interface SandboxChild {
  url: string;
  stats<T>(): Promise<T>;
  /** The sandbox's virtual time now (for an engine clock that runs in step with it). */
  now(): Promise<number>;
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

/** Replaces (or appends) the section of bench/RESULTS.md between this benchmark's markers. */
export function recordResult(name: string, markdown: string): void {
  const file = fileURLToPath(new URL("./RESULTS.md", import.meta.url));
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const block = `${begin}\n${markdown.trim()}\n${end}`;
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

/** N D jobs of gen-2-pro at 256×256, validated and priced by the adapter, as the store takes them. */
export async function dBenchJobs(
  adapter: ProviderAdapter,
  count: number,
  options: { idPrefix: string; refPrefix: string; prompt: string; batchId: string; outDir: string; idDigits: number },
): Promise<NewJob[]> {
  const jobs: NewJob[] = [];
  for (let index = 0; index < count; index++) {
    const validated = adapter.validate({ provider: "d", model: "gen-2-pro", input: { prompt: `${options.prompt} ${index}`, width: 256, height: 256, seed: index } });
    const estimate = await adapter.estimate(validated);
    jobs.push({
      id: `${options.idPrefix}${String(index).padStart(options.idDigits, "0")}`,
      ref: `${options.refPrefix}${index}`,
      batchId: options.batchId,
      provider: "d",
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

import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BUILT_CLI } from "./built-cli.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** The built command (test/global-setup.ts builds it from src/ before the tests when it is missing or stale). */
const entry = BUILT_CLI;
/** tsx by absolute URL, so the CLI runs from any working folder (a bare "tsx" resolves from the cwd). */
export const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment a CLI run gets: only what the test gives, plus PATH (no MEDIAGATE_* leaking from the machine). */
export function cliEnvironment(values: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, ...values };
}

/** Starts `mediagate ARGS` as built from the sources under test (see test/global-setup.ts). */
export function startCli(args: string[], options: { env: Record<string, string>; cwd?: string }): ChildProcess {
  return spawn(process.execPath, [entry, ...args], {
    cwd: options.cwd ?? root,
    env: cliEnvironment(options.env),
    stdio: ["ignore", "pipe", "pipe"],
  });
}

export function collect(child: ChildProcess, timeoutMs = 60_000): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`CLI did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export async function runCli(args: string[], options: { env: Record<string, string>; cwd?: string; timeoutMs?: number }): Promise<CliResult> {
  return collect(startCli(args, options), options.timeoutMs);
}

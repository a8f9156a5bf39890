import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { cliEnvironment, tsxLoader } from "./cli.js";
import type { World } from "./world.js";

const entry = fileURLToPath(new URL("./engine-process-main.ts", import.meta.url));

export interface EngineProcess {
  child: ChildProcess;
  /** The engine's lease-owner name (host, pid, tag). */
  owner: string;
  /** SIGKILL, and the exit seen. */
  kill(): Promise<NodeJS.Signals | null>;
}

/**
 * Starts an engine in its own process on the world's store and sandbox, on a
 * clock in step with the sandbox's virtual time; resolves once it runs.
 */
export async function startEngineProcess(world: World, options: { slowWrite?: string; maxMs?: number } = {}): Promise<EngineProcess> {
  const clock = world.sandbox.clock;
  const child = spawn(process.execPath, ["--import", tsxLoader, entry], {
    env: cliEnvironment({
      ...world.env,
      ENGINE_TIME_SCALE: String(clock.scale),
      ENGINE_VIRTUAL_AT: String(clock.now()),
      ENGINE_REAL_AT: String(Date.now()),
      ENGINE_MAX_MS: String(options.maxMs ?? 60_000),
      ...(options.slowWrite ? { ENGINE_SLOW_WRITE: options.slowWrite } : {}),
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
  const owner = await new Promise<string>((resolve, reject) => {
    let stdout = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the engine process did not start in 20 s\n${stderr}`));
    }, 20_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const ready = stdout.match(/^ready (\S+)$/m);
      if (ready) {
        clearTimeout(timer);
        resolve(ready[1]!);
      }
    });
    child.on("exit", () => {
      clearTimeout(timer);
      reject(new Error(`the engine process exited before it started\n${stderr}`));
    });
  });
  return {
    child,
    owner,
    async kill() {
      child.kill("SIGKILL");
      return exited;
    },
  };
}

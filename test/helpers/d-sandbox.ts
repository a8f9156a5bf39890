import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startSandbox, type DEmulator, type DEmulatorOptions, type Sandbox } from "../../src/sandbox/index.js";
import { tempDir } from "./stores.js";

export const D_KEY = "sandbox-d-key";

export interface DWorld {
  sandbox: Sandbox;
  d: DEmulator;
  folder: string;
  /** Environment for a CLI run against this sandbox with a fresh SQLite store and output folder. */
  env: Record<string, string>;
  /** Submit requests the sandbox received for D (accepted or not). */
  submits(): number;
  close(): Promise<void>;
}

export async function startDWorld(options: DEmulatorOptions = {}, timeScale = 1): Promise<DWorld> {
  const sandbox = await startSandbox({ providers: ["d"], emulators: { d: options }, timeScale });
  const folder = tempDir();
  return {
    sandbox,
    d: sandbox.emulators.d!,
    folder: folder.path,
    env: {
      MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`,
      MEDIAGATE_OUTPUT_DIR: join(folder.path, "out"),
      ...sandbox.environment,
    },
    submits: () => sandbox.requests({ provider: "d" }).filter((request) => request.method === "POST" && request.url.startsWith("/d/v1/")).length,
    async close() {
      await sandbox.stop();
      folder.remove();
    },
  };
}

export function sha256File(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** A batch file of `count` D jobs with distinct prompts. */
export function batchLines(count: number, options: { model?: string; width?: number; height?: number; prefix?: string } = {}): string {
  const lines: string[] = [];
  for (let index = 0; index < count; index++) {
    lines.push(
      JSON.stringify({
        ref: `${options.prefix ?? "job"}-${index}`,
        provider: "d",
        model: options.model ?? "gen-2-pro",
        input: { prompt: `${options.prefix ?? "job"} prompt ${index}`, width: options.width ?? 256, height: options.height ?? 256, seed: index },
      }),
    );
  }
  return `${lines.join("\n")}\n`;
}

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createDEmulator, type DEmulator } from "../../src/sandbox/d/index.js";
import { startSandbox, type RunningSandbox } from "../../src/sandbox/server.js";
import { tempDir } from "./stores.js";

export const D_KEY = "sandbox-d-key";

export interface DWorld {
  sandbox: RunningSandbox;
  d: DEmulator;
  folder: string;
  /** Environment for a CLI run against this sandbox with a fresh SQLite store and output folder. */
  env: Record<string, string>;
  /** Submit requests the sandbox received for D (accepted or not). */
  submits(): number;
  close(): Promise<void>;
}

export async function startDWorld(options: Parameters<typeof createDEmulator>[0] = {}, timeScale = 1): Promise<DWorld> {
  const d = createDEmulator(options);
  const sandbox = await startSandbox({ emulators: [d], timeScale });
  const folder = tempDir();
  return {
    sandbox,
    d,
    folder: folder.path,
    env: {
      MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`,
      MEDIAGATE_OUTPUT_DIR: join(folder.path, "out"),
      MEDIAGATE_D_BASE_URL: `${sandbox.url}/d`,
      MEDIAGATE_D_API_KEY: D_KEY,
    },
    submits: () => sandbox.context.requests.count((request) => request.method === "POST" && request.url.startsWith("/d/v1/")),
    async close() {
      await sandbox.close();
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

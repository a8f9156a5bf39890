import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { staleBuild } from "./helpers/built-cli.js";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * The tests run `mediagate` as a user does, from `dist/` (started from the
 * sources through tsx, each of several hundred runs took 0.7 s more). So
 * `dist/` must be the code in `src/`: built here when it is missing or older
 * than any source file (`npm ci` builds it; an edit since makes it stale).
 */
export default function setup(): void {
  if (staleBuild() === null) return;
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  try {
    execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString() ?? "";
    throw new Error(`building dist/ for the CLI tests failed:\n${output}`);
  }
}

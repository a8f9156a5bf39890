import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The command as `npm run build` (and `npm ci`) builds it. */
export const BUILT_CLI = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const SOURCES = fileURLToPath(new URL("../../src/", import.meta.url));

/**
 * Why `dist/` is not the code in `src/` (it is missing, or a source file is
 * newer than it), or null when it is. The tests build it then; the
 * benchmarks refuse to measure it.
 */
export function staleBuild(): string | null {
  if (!existsSync(BUILT_CLI)) return "dist/cli/main.js is missing";
  const builtAt = statSync(BUILT_CLI).mtimeMs;
  const newer = readdirSync(SOURCES, { recursive: true, encoding: "utf8" }).find((file) => file.endsWith(".ts") && statSync(join(SOURCES, file)).mtimeMs > builtAt);
  return newer === undefined ? null : `src/${newer} is newer than dist/`;
}

import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

/**
 * `import { startSandbox } from "mediagate/sandbox"` as another project
 * writes it: resolved through package.json "exports" to the built entry.
 * Needs `npm run build` (which `npm ci` runs through "prepare").
 */

const root = fileURLToPath(new URL("../..", import.meta.url));
const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { name: string; exports: Record<string, Record<string, string>> };

const script = `
const { startSandbox } = await import("mediagate/sandbox");
const sandbox = await startSandbox({ providers: ["d"], renderMs: 0 });
const submitted = await fetch(sandbox.baseUrls.d + "/v1/gen-2-pro", {
  method: "POST",
  headers: { "x-key": sandbox.environment.MEDIAGATE_D_API_KEY, "content-type": "application/json" },
  body: JSON.stringify({ prompt: "a lighthouse", width: 512, height: 512 }),
});
const stats = await (await fetch(sandbox.url + "/_sandbox/stats")).json();
console.log(JSON.stringify({ submitted: submitted.status, providers: sandbox.providers, d: stats.providers.d.tasks }));
await sandbox.stop();
`;

describe("mediagate/sandbox (the package entry)", () => {
  it("package.json exports ./sandbox from the build of src/sandbox/index.ts", () => {
    expect(manifest.exports["./sandbox"]).toEqual({ types: "./dist/sandbox/index.d.ts", default: "./dist/sandbox/index.js" });
    expect(existsSync(new URL("../../src/sandbox/index.ts", import.meta.url))).toBe(true);
  });

  it("another project's test imports startSandbox from mediagate/sandbox and drives the sandbox with it", async () => {
    expect(existsSync(new URL("../../dist/sandbox/index.js", import.meta.url)), "dist/sandbox/index.js is missing: run npm run build").toBe(true);
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: root, timeout: 20_000 });
    expect(JSON.parse(stdout)).toEqual({ submitted: 200, providers: ["d"], d: { Ready: 1 } });
  });
});

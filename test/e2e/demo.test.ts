import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/stores.js";

let folder: { path: string; remove(): void } | undefined;
afterEach(() => folder?.remove());

describe("mediagate demo", () => {
  it("runs the demo batch on all six providers of the built-in sandbox with no keys, in a fresh folder", async () => {
    folder = tempDir();
    const result = await runCli(["demo"], { env: {}, cwd: folder.path, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(folder.path, "mediagate.db"))).toBe(true);
    expect(result.stderr).toMatch(/11 succeeded, 0 failed, 0 never ran/);
    expect(result.stderr).toMatch(/11 file\(s\) verified against their sha256/);
    const paths = result.stdout.match(/\/\S+\.(png|mp4)/g) ?? [];
    expect(paths).toHaveLength(11);
    for (const path of paths) expect(existsSync(path)).toBe(true);
    // One job on each provider: A, B and C made videos, D, E and F images.
    for (const name of ["a-video", "b-clip", "c-video"]) expect(result.stdout).toMatch(new RegExp(`${name}\\.mp4`));
    for (const name of ["e-image", "f-image", "lighthouse"]) expect(result.stdout).toMatch(new RegExp(`${name}\\.png`));
  });
});

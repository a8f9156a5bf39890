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
    expect(result.stderr).toMatch(/13 succeeded, 0 failed, 0 never ran/);
    expect(result.stderr).toMatch(/13 file\(s\) verified against their sha256/);
    const paths = result.stdout.match(/\/\S+\.(png|mp4)/g) ?? [];
    expect(paths).toHaveLength(13);
    for (const path of paths) expect(existsSync(path)).toBe(true);
    // One job on each provider: A, B and C made videos, D, E and F images.
    for (const name of ["a-video", "b-clip", "c-video"]) expect(result.stdout).toMatch(new RegExp(`${name}\\.mp4`));
    for (const name of ["e-image", "f-image", "lighthouse"]) expect(result.stdout).toMatch(new RegExp(`${name}\\.png`));
    // Two common requests: the image E cannot size went to D, the video to the cheaper of C (unpriced) and B (priced).
    expect(result.stdout).toMatch(/routed-image: \S+routed-image\.png/);
    expect(result.stdout).toMatch(/routed-video: \S+routed-video\.mp4/);
    expect(result.stderr).toMatch(/routed-image: route: d\/gen-2-pro\n {2}e\/v3 cannot take it: size: /);
    expect(result.stderr).toMatch(/routed-video: route: b\/vendorx\/video-2\.5\/text-to-video, then c\/v6\n/);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const generate = ["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a fox", "--width", "256", "--height", "256"];

// Issue 36, finding 4: Node's recursive mkdir never returns under /proc (it spun at 60% CPU and printed nothing).
describe("an output folder on a file system that refuses folders (issue 36, finding 4)", { timeout: 120_000 }, () => {
  it("finding 4: --out /proc/foo ends with exit 2 naming the flag and the folder, and nothing is sent", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const byFlag = await runCli([...generate, "--out", "/proc/mediagate-out"], { env: world.env, timeoutMs: 60_000 });
    expect(byFlag.code, byFlag.stderr).toBe(2);
    expect(byFlag.stderr).toMatch(
      /--out: cannot create the output folder \/proc\/mediagate-out: the file system there does not allow creating folders \(ENOENT\); nothing was sent/,
    );
    expect(world.submits()).toBe(0);
  });

  it("finding 4: MEDIAGATE_OUTPUT_DIR=/proc/x/y ends with exit 3 (configuration) naming the variable and the folder, and nothing is sent", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const byVariable = await runCli(generate, { env: { ...world.env, MEDIAGATE_OUTPUT_DIR: "/proc/mediagate-x/y" }, timeoutMs: 60_000 });
    expect(byVariable.code, byVariable.stderr).toBe(3);
    expect(byVariable.stderr).toMatch(/MEDIAGATE_OUTPUT_DIR \(or --output-dir\): cannot create the output folder \/proc\/mediagate-x\/y: .*\(ENOENT\); nothing was sent/);
    expect(world.submits()).toBe(0);
  });
});

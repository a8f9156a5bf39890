import { afterEach, describe, expect, it } from "vitest";
import { Mediagate } from "../../src/index.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { runCli } from "../helpers/cli.js";
import { startWorld, type World } from "../helpers/world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe("mediagate spend covers every provider (issue 36, finding 5)", { timeout: 120_000 }, () => {
  it("finding 5: spend lists every provider's jobs of the store, an unpriced one as unpriced (never $0), B's own report beside; from=D to=D is day D; a backwards period is exit 2 naming --from", async () => {
    world = await startWorld(createAllEmulators().list);
    const gate = await Mediagate.open({ env: world.env, runEngine: false });
    await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 512, height: 512 } }, { ref: "priced" });
    await gate.submit({ provider: "e", model: "v3", input: { prompt: "a fox" } }, { ref: "unpriced" });
    await gate.close();

    const asJson = await runCli(["spend", "--json"], { env: world.env });
    expect(asJson.code, asJson.stderr).toBe(0);
    const report = JSON.parse(asJson.stdout) as { estimated_micro_usd: number; unpriced_jobs: number; lines: Array<{ provider: string; jobs: number; unpriced_jobs: number }>; b: { total_micro_usd: number } };
    expect(report.estimated_micro_usd).toBe(30_000);
    expect(report.unpriced_jobs).toBe(1);
    expect(report.lines.map((line) => [line.provider, line.jobs, line.unpriced_jobs])).toEqual([["d", 1, 0], ["e", 1, 1]]);
    expect(report.b.total_micro_usd).toBe(0);

    const today = new Date().toISOString().slice(0, 10);
    const asText = await runCli(["spend", "--from", today, "--to", today], { env: world.env });
    expect(asText.code, asText.stderr).toBe(0);
    expect(asText.stdout).toMatch(new RegExp(`^Spend from ${today}T00:00:00.000Z to .*: settled \\$0\\.00\\d*, estimated \\$0\\.03\\d* \\+ 1 unpriced$`, "m"));
    expect(asText.stdout).toMatch(/^ {2}E v3 .*estimated unpriced \(1 job\); 1 job\(s\)$/m);
    expect(asText.stdout).not.toMatch(/E v3 .*estimated \$/);

    const backwards = await runCli(["spend", "--from", today, "--to", "2020-01-01"], { env: world.env });
    expect(backwards.code).toBe(2);
    expect(backwards.stderr).toMatch(/--from: must be before to/);
  });
});

import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { batchLines, type DWorld, sha256File, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

interface JobLine {
  ref: string;
  state: string;
  error: { code: string } | null;
  outputs: Array<{ path: string; sha256: string }>;
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("crash safety (SIGKILL of the engine mid-batch)", () => {
  for (const killAfterSubmits of [6, 27]) {
    it(`kill -9 after ${killAfterSubmits} submits: the restart finishes every job, none is submitted twice, every file matches its sha256`, async () => {
      world = await startDWorld({ renderTimeMs: { minMs: 300, maxMs: 900 } });
      // Slow submits widen the window in which a kill lands mid-submit.
      world.sandbox.context.faults.add({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 150 } });
      const file = join(world.folder, "jobs.jsonl");
      writeFileSync(file, batchLines(30));

      const first = startCli(["batch", file], { env: world.env });
      const firstDone = collect(first, 60_000);
      await waitFor(() => world!.submits() >= killAfterSubmits, 30_000);
      first.kill("SIGKILL");
      const killed = await firstDone;
      expect(killed.signal).toBe("SIGKILL");

      const second = await runCli(["batch", file, "--json"], { env: world.env, timeoutMs: 90_000 });
      const lines = second.stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as JobLine);
      expect(lines).toHaveLength(30);
      // Every job reached a terminal state; the only non-success allowed is a submit whose answer died with the process.
      for (const line of lines) {
        expect(["succeeded", "unknown_submission"]).toContain(line.state);
        if (line.state === "unknown_submission") expect(line.error?.code).toBe("submit_outcome_unknown");
      }
      expect(second.code).toBe(lines.every((line) => line.state === "succeeded") ? 0 : 1);

      // None was submitted twice: at most one submit per job arrived, and no prompt was accepted twice.
      expect(world.submits()).toBeLessThanOrEqual(30);
      const prompts = world.d.jobs.map((job) => String((job.body as { prompt?: unknown }).prompt));
      expect(new Set(prompts).size).toBe(prompts.length);

      // Every image on disk matches its sha256, and no temporary file was left behind.
      for (const line of lines.filter((item) => item.state === "succeeded")) {
        expect(sha256File(line.outputs[0]!.path)).toBe(line.outputs[0]!.sha256);
      }
      const outDir = world.env.MEDIAGATE_OUTPUT_DIR!;
      if (existsSync(outDir)) expect(readdirSync(outDir).filter((name) => name.includes(".tmp-"))).toEqual([]);
    });
  }
});

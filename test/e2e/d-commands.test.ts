import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/** Queues jobs straight into the world's store, as another process (or the library) would. */
async function queueDirectly(world: DWorld, refs: string[]): Promise<void> {
  const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
  await store.insertJobs(
    refs.map((ref) => ({
      id: `job_${ref}`,
      ref,
      batchId: null,
      provider: "d" as const,
      model: "gen-2-pro",
      operation: null,
      body: { prompt: `prompt ${ref}`, width: 256, height: 256 },
      facts: {},
      warnings: [],
      estimateMicroUsd: 30_000,
      estimateSource: "test",
      outDir: world.env.MEDIAGATE_OUTPUT_DIR!,
    })),
    Date.now(),
  );
  await store.close();
}

describe("mediagate jobs, show, cancel and worker", () => {
  it("cancel of a queued job cancels it locally; show lists its event log", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    await queueDirectly(world, ["to-cancel"]);
    const cancel = await runCli(["cancel", "to-cancel"], { env: world.env });
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stderr).toMatch(/never sent; nothing charged/);
    const show = await runCli(["show", "to-cancel", "--json"], { env: world.env });
    const job = JSON.parse(show.stdout) as { state: string; events: Array<{ from: string | null; to: string }> };
    expect(job.state).toBe("cancelled");
    expect(job.events.map((event) => event.to)).toEqual(["queued", "cancelled"]);
    const again = await runCli(["cancel", "to-cancel"], { env: world.env });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already cancelled/);
    expect(world.submits()).toBe(0);
  });

  it("show of an unknown id says so and exits 2", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const result = await runCli(["show", "nope"], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no job with id or ref "nope"/);
  });

  it("worker runs queued jobs until SIGTERM, then releases its leases and exits 0", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    await queueDirectly(world, ["w-1", "w-2", "w-3"]);
    const child = startCli(["worker"], { env: world.env });
    const done = collect(child, 30_000);
    const deadline = Date.now() + 20_000;
    while (world.d.jobs.filter((job) => job.status === "Ready").length < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Give the worker a moment to save the last result, then stop it.
    for (let tries = 0; tries < 100; tries++) {
      const jobs = await runCli(["jobs", "--json", "--state", "succeeded"], { env: world.env });
      if (jobs.stdout.trim().split("\n").filter(Boolean).length === 3) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    child.kill("SIGTERM");
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/leases released/);
    const jobs = await runCli(["jobs", "--json"], { env: world.env });
    const states = jobs.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { state: string }).state);
    expect(states).toEqual(["succeeded", "succeeded", "succeeded"]);
  });

  it("sandbox prints the export lines that point mediagate at it", async () => {
    const child = startCli(["sandbox", "--port", "0"], { env: {} });
    let stdout = "";
    child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const deadline = Date.now() + 15_000;
    while (!stdout.includes("MEDIAGATE_D_API_KEY") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const done = collect(child, 10_000);
    child.kill("SIGINT");
    await done;
    expect(stdout).toMatch(/^export MEDIAGATE_D_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/d$/m);
    expect(stdout).toMatch(/^export MEDIAGATE_D_API_KEY=/m);
  });
});

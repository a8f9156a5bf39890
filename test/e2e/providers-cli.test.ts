import { once } from "node:events";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { openStore } from "../../src/store/open.js";
import { runCli } from "../helpers/cli.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function allProviders(options: Parameters<typeof createAllEmulators>[0] = {}) {
  const emulators = createAllEmulators(options);
  world = await startWorld(emulators.list);
  return { emulators, world };
}

describe("the CLI on providers A, B, C, E and F (real sandbox over loopback)", () => {
  it("C: generate runs a video to the end and prints its JSON with the saved MP4", async () => {
    const { world } = await allProviders({ c: { renderMs: 1_000 } });
    const result = await runCli(["generate", "--provider", "c", "--model", "v6", "--prompt", "a kite over dunes", "--json"], { env: world.env, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    const job = JSON.parse(result.stdout.trim()) as { state: string; provider: string; outputs: Array<{ path: string; content_type: string }> };
    expect(job).toMatchObject({ state: "succeeded", provider: "c" });
    expect(job.outputs[0]!.content_type).toBe("video/mp4");
    expect(existsSync(job.outputs[0]!.path)).toBe(true);
  });

  it("B: spend over more than 366 days is refused before anything is sent, naming the fields", async () => {
    const { world } = await allProviders();
    const result = await runCli(["spend", "--from", "2025-01-01", "--to", "2026-06-01"], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/366/);
    expect(world.sandbox.requests().filter((entry) => entry.provider === "b")).toHaveLength(0);
  });

  it("B: catalog lists operations read from B; catalog show gives inputs with their enums", async () => {
    const { world } = await allProviders();
    const list = await runCli(["catalog", "--search", "kestrel", "--json"], { env: world.env });
    expect(list.code, list.stderr).toBe(0);
    const operations = (JSON.parse(list.stdout) as { operations: Array<{ api_id: string }> }).operations.map((operation) => operation.api_id);
    expect(operations.length).toBeGreaterThan(0);
    expect(operations.every((id) => id.includes("kestrel"))).toBe(true);
    const show = await runCli(["catalog", "show", "vendorx/video-2.5/text-to-video"], { env: world.env });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/resolution: .*one of/);
  });

  it("B: a batch line failing the catalog's input_schema is refused with its JSON path, and nothing is submitted", async () => {
    const { emulators, world } = await allProviders();
    const { writeFileSync } = await import("node:fs");
    const file = `${world.folder}/b.jsonl`;
    writeFileSync(file, `${JSON.stringify({ ref: "bad", provider: "b", model: "vendorx/video-2.5", operation: "text-to-video", input: { prompt: "x", resolution: "4k", duration_s: 5 } })}\n`);
    const result = await runCli(["batch", file], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/line 1: .*resolution/);
    expect(emulators.b.submitCount).toBe(0);
  });

  it("E: cancel calls the job's cancelUrl and ends it locally, so no more polls are spent on it", async () => {
    const { emulators, world } = await allProviders({ e: { renderMs: 600_000 } });
    const store = await openStore(world.env.MEDIAGATE_STORE!);
    try {
      const { engine, enqueue } = worldEngine(world, store);
      const job = await enqueue({ provider: "e", model: "v3", input: { prompt: "a slow harbour" } });
      engine.start();
      for (let tries = 0; tries < 300 && (await store.getJob(job.id))!.state !== "running"; tries++) await new Promise((resolve) => setTimeout(resolve, 20));
      await engine.stop();
      const result = await runCli(["cancel", job.id, "--json"], { env: world.env });
      expect(result.code, result.stderr).toBe(0);
      expect((JSON.parse(result.stdout) as { state: string }).state).toBe("cancelled");
      const [atE] = emulators.e.jobs();
      expect(atE!.cancelledAt).toBeDefined();
      const sentBeforeRestart = world.sandbox.requests().length;

      // A new engine adopts every job a stopped one left running and reads it at once; it goes idle only once nothing is
      // in flight, so by then any read of the job has been sent. The cancelled job must get none.
      const { engine: next } = worldEngine(world, store);
      const idle = once(next, "idle");
      next.start();
      await idle;
      await next.stop();
      const sentAfterCancel = world.sandbox.requests().slice(sentBeforeRestart);
      expect(sentAfterCancel.map((entry) => `${entry.method} ${entry.url}`)).toEqual([]);
      expect((await store.getJob(job.id))!.state).toBe("cancelled");
    } finally {
      await store.close();
    }
  });

  it("A: cancel of a job already submitted says plainly that A publishes no cancel; the job keeps being tracked", async () => {
    const { emulators, world } = await allProviders({ a: { queueMs: 0, renderMs: { min: 600_000, max: 600_000 } } });
    const store = await openStore(world.env.MEDIAGATE_STORE!);
    try {
      const { engine, enqueue } = worldEngine(world, store);
      const job = await enqueue({ provider: "a", model: "vidgen-2-0-250601", input: { prompt: "a slow tide", duration: 5 } });
      engine.start();
      for (let tries = 0; tries < 300 && (await store.getJob(job.id))!.state !== "running"; tries++) await new Promise((resolve) => setTimeout(resolve, 20));
      await engine.stop();
      const result = await runCli(["cancel", job.id], { env: world.env });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/A publishes no cancel operation, so .* keeps running at the provider; mediagate keeps tracking it/);
      expect((await store.getJob(job.id))!.state).toBe("running");
      expect(emulators.a.tasks()).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it("C: plan shows the tier's waves, ceil(tasks / 3) on free, times the observed render time, and sends nothing", async () => {
    const { emulators, world } = await allProviders({ c: { renderMs: 1_000 } });
    const first = await runCli(["generate", "--provider", "c", "--model", "v6", "--prompt", "a first render to learn from"], { env: world.env, timeoutMs: 60_000 });
    expect(first.code, first.stderr).toBe(0);
    const file = join(world.folder, "c-batch.jsonl");
    const lines = Array.from({ length: 7 }, (_, index) => JSON.stringify({ ref: `c-${index}`, provider: "c", model: "v6", input: { prompt: `wave ${index}` } }));
    writeFileSync(file, `${lines.join("\n")}\n`);
    const submitsBefore = emulators.c.tasks().length;
    const result = await runCli(["plan", file, "--json"], { env: world.env });
    expect(result.code, result.stderr).toBe(0);
    const [plan] = (JSON.parse(result.stdout) as { providers: Array<{ provider: string; jobs: number; slots: number; waves: number; renderMs: number; expectedWallMs: number }> }).providers;
    expect(plan).toMatchObject({ provider: "c", jobs: 7, slots: 3, waves: 3 });
    expect(plan!.renderMs).toBeGreaterThan(0);
    expect(plan!.expectedWallMs).toBe(3 * plan!.renderMs);
    expect(emulators.c.tasks()).toHaveLength(submitsBefore);
    const text = await runCli(["plan", file], { env: world.env });
    expect(text.stdout).toContain("C: 7 job(s); 3 slots → 3 wave(s)");
  });

  it("B: balance and spend show B's figures beside the local ledger, which equals the settled charge; delete erases the job at B and records it", async () => {
    const { emulators, world } = await allProviders({ b: { queueTimeMs: 100, renderTimeMs: 500, settlementDelayMs: 500 } });
    const generate = await runCli(
      ["generate", "--provider", "b", "--model", "vendorx/video-2.5", "--operation", "text-to-video", "--input", JSON.stringify({ prompt: "a paper boat", resolution: "720p", duration_s: 5 }), "--json"],
      { env: world.env, timeoutMs: 60_000 },
    );
    expect(generate.code, generate.stderr).toBe(0);
    const job = JSON.parse(generate.stdout.trim()) as { id: string; provider_job_id: string; cost: { charge_micro_usd: number | null } };
    const [atB] = emulators.b.jobs;
    expect(atB!.chargeMicroUsd).toBeGreaterThan(0);
    expect(job.cost.charge_micro_usd).toBe(atB!.chargeMicroUsd);

    const balance = await runCli(["balance", "--json"], { env: world.env });
    expect(balance.code, balance.stderr).toBe(0);
    expect(JSON.parse(balance.stdout)).toEqual({ provider: "b", balance_micro_usd: emulators.b.balanceMicroUsd, ledger_micro_usd: atB!.chargeMicroUsd });

    const today = new Date().toISOString().slice(0, 10);
    const spend = await runCli(["spend", "--from", today, "--to", today, "--json"], { env: world.env });
    expect(spend.code, spend.stderr).toBe(0);
    // The store's spend of every provider, and B's own report of the same days beside it.
    const all = JSON.parse(spend.stdout) as { settled_micro_usd: number; lines: Array<{ provider: string }>; b: { total_micro_usd: number; by_model: Array<{ model: string; charge_micro_usd: number }>; by_key: unknown[]; ledger_micro_usd: number } };
    expect(all.settled_micro_usd).toBe(atB!.chargeMicroUsd);
    expect(all.lines.map((line) => line.provider)).toEqual(["b"]);
    const report = all.b;
    expect(report.total_micro_usd).toBe(atB!.chargeMicroUsd);
    expect(report.ledger_micro_usd).toBe(atB!.chargeMicroUsd);
    expect(report.by_model).toEqual([expect.objectContaining({ charge_micro_usd: atB!.chargeMicroUsd })]);
    expect(report.by_key).toHaveLength(1);

    const erased = await runCli(["delete", job.id, "--json"], { env: world.env });
    expect(erased.code, erased.stderr).toBe(0);
    expect(JSON.parse(erased.stdout)).toEqual({ id: job.id, provider_job_id: job.provider_job_id, erased_at_provider: true });
    expect(emulators.b.job(job.provider_job_id)!.deletedAt).not.toBeNull();
    const show = await runCli(["show", job.id], { env: world.env });
    expect(show.stdout).toMatch(/erased at B: stored media and prompts deleted/);
  });
});

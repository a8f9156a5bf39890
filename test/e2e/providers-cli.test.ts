import { existsSync } from "node:fs";
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
    expect(world.sandbox.context.requests.count((entry) => entry.provider === "b")).toBe(0);
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
      expect((await store.getJob(job.id))!.state).toBe("cancelled");
    } finally {
      await store.close();
    }
  });
});

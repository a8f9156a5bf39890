import { writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { JobJson } from "../../src/cli/job-json.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { openStore } from "../../src/store/open.js";
import { runCli } from "../helpers/cli.js";
import { startWorld, type World } from "../helpers/world.js";

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

const FOX = ["--task", "image", "--prompt", "a red fox in snow", "--size", "1024x768"];

describe("common requests routed over providers (real sandbox over loopback)", () => {
  it("routing: a route whose first target answers 402 completes on the second, both attempts in the job's events and its JSON, one charge", async () => {
    const { emulators, world } = await allProviders({ d: { balanceMicroUsd: 0 }, f: { renderMs: { min: 200, max: 400 } } });
    const result = await runCli(["generate", ...FOX, "--route", "d/gen-2-pro,f/img-v2", "--json"], { env: world.env, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    const job = JSON.parse(result.stdout.trim()) as JobJson;
    expect(job).toMatchObject({ state: "succeeded", provider: "f", model: "img-v2", target: "f/img-v2" });
    expect(job.attempts!.map((attempt) => attempt.target)).toEqual(["d/gen-2-pro", "f/img-v2"]);
    expect(job.attempts![0]!.outcome).toMatch(/D refused it before accepting \(insufficient_credits/);
    expect(job.outputs).toHaveLength(1);
    // D refused (402) and made nothing; F made the one image.
    expect(emulators.d.rejected402Count).toBe(1);
    expect(emulators.d.jobs).toHaveLength(0);
    const store = await openStore(world.env.MEDIAGATE_STORE!);
    try {
      const events = await store.events(job.id);
      const fallover = events.find((event) => (event.detail as { fallover?: unknown } | null)?.fallover !== undefined);
      expect(fallover).toMatchObject({ fromState: "submitting", toState: "queued" });
      expect(fallover!.reason).toMatch(/^handed from d\/gen-2-pro to f\/img-v2: D refused it before accepting/);
      // Nothing in the ledger for D: it accepted nothing.
      expect(await store.ledgerTotal({ provider: "d" })).toBe(0);
      // D is halted for what comes next; F is not.
      expect((await store.halts()).map((halt) => halt.provider)).toEqual(["d"]);
    } finally {
      await store.close();
    }
  });

  it("routing: route_by price sends the job to the cheapest eligible target, whatever the route's order", async () => {
    const { emulators, world } = await allProviders();
    const file = `${world.folder}/cheap.jsonl`;
    // gen-2-max costs more per megapixel than gen-2-flex… and gen-2-pro less than max: the cheapest of the three is picked.
    writeFileSync(file, `${JSON.stringify({ ref: "cheap-1", task: "image", prompt: "a lighthouse", size: "1024x1024", route: ["d/gen-2-max", "d/gen-2-pro", "d/gen-2-flex"], route_by: "price" })}\n`);
    const quote = await runCli(["quote", "--file", file, "--json"], { env: world.env });
    expect(quote.code, quote.stderr).toBe(0);
    const estimates = JSON.parse(quote.stdout) as { jobs: Array<{ model: string; estimate_micro_usd: number }> };
    const result = await runCli(["batch", file, "--json"], { env: world.env, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    const job = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as JobJson;
    expect(job.model).toBe(estimates.jobs[0]!.model);
    expect(emulators.d.jobs.map((made) => made.endpoint)).toEqual([estimates.jobs[0]!.model]);
    // The cheapest of the route by D's own price table.
    const perModel = new Map<string, number>();
    for (const model of ["gen-2-max", "gen-2-pro", "gen-2-flex"]) {
      const one = await runCli(["quote", "--task", "image", "--prompt", "a lighthouse", "--size", "1024x1024", "--model", `d/${model}`, "--json"], { env: world.env });
      perModel.set(model, (JSON.parse(one.stdout) as { total_micro_usd: number }).total_micro_usd);
    }
    expect(perModel.get(job.model)).toBe(Math.min(...perModel.values()));
  });

  it("routing: a request no target can honour is refused before anything is sent, exit 2, one line per target with why", async () => {
    const { world } = await allProviders();
    const result = await runCli(["generate", "--task", "image", "--prompt", "a fox", "--n", "3", "--route", "c/v6,d/gen-2-pro,f/img-v2"], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no target can take this request:/);
    expect(result.stderr).toMatch(/\n {2}c\/v6: task: C makes videos, not images/);
    expect(result.stderr).toMatch(/\n {2}d\/gen-2-pro: size: D needs a size or aspect_ratio[^\n]*; n: D makes one image per request, not 3/);
    expect(result.stderr).toMatch(/\n {2}f\/img-v2: n: /);
    expect(world.sandbox.context.requests.count((entry) => entry.provider !== null)).toBe(0);
  });

  it("routing: a target halted before the command is skipped at once: the job goes to the next one and D is never asked", async () => {
    const { emulators, world } = await allProviders({ f: { renderMs: { min: 200, max: 400 } } });
    const store = await openStore(world.env.MEDIAGATE_STORE!);
    try {
      await store.haltProvider({ provider: "d", code: "insufficient_credits", message: "out of credits", jobId: null, at: Date.now() });
    } finally {
      await store.close();
    }
    const result = await runCli(["generate", ...FOX, "--route", "d/gen-2-pro,f/img-v2", "--json"], { env: world.env, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/d\/gen-2-pro cannot take it: provider D is halted \(insufficient_credits/);
    expect((JSON.parse(result.stdout.trim()) as JobJson).provider).toBe("f");
    expect(emulators.d.submitCount).toBe(0);
  });
});

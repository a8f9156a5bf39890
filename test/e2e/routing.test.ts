import { writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { JobJson } from "../../src/app/job-view.js";
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
    // The output says what it is, read from its bytes.
    expect(job.outputs[0]).toMatchObject({ content_type: "image/png", width: 1024, height: 768 });
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
    expect(world.sandbox.requests().filter((entry) => entry.provider !== null)).toHaveLength(0);
  });

  it("routing (issue 36, finding 10): batch --json refusing a routed line and a bad one answers as the API's 422 does: one `targets` entry per refused line, nothing sent", async () => {
    const { world } = await allProviders();
    const file = `${world.folder}/refused.jsonl`;
    const lines = [
      { ref: "ok", provider: "d", model: "gen-2-pro", input: { prompt: "a fox", width: 512, height: 512 } },
      { ref: "no-target", task: "image", prompt: "a fox", n: 3, route: ["c/v6", "d/gen-2-pro"] },
      { ref: "bad", provider: "d", model: "gen-9", input: { prompt: "a fox" } },
    ];
    writeFileSync(file, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
    const result = await runCli(["batch", file, "--json"], { env: world.env });
    expect(result.code, result.stderr).toBe(2);
    const error = JSON.parse(result.stdout.trim()).error;
    expect(error).toMatchObject({ code: "invalid_input", field: "batch file" });
    expect(error.targets.map((entry: { target: string }) => entry.target)).toEqual(["line 2", "line 3"]);
    expect(error.targets[0].reasons[0]).toMatch(/c\/v6: task: C makes videos, not images/);
    expect(error.targets[1].reasons[0]).toMatch(/model/);
    expect(world.sandbox.requests().filter((entry) => entry.provider !== null)).toHaveLength(0);
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

  it("routing: fallback_on_failure moves a generation that failed at no cost (C's moderation failure, refunded) to the next target; the attempt keeps C's task id", async () => {
    const { emulators, world } = await allProviders({ c: { renderMs: 500 }, b: { queueTimeMs: 100, renderTimeMs: { minMs: 300, maxMs: 500 } } });
    emulators.c.injectOutcome(7);
    const file = `${world.folder}/kite.jsonl`;
    const line = { ref: "kite-1", task: "video", prompt: "a kite over dunes", duration_s: 5, resolution: "720p", route: ["c/v6", "b/vendorx/video-2.5/text-to-video"], fallback_on_failure: true };
    writeFileSync(file, `${JSON.stringify(line)}\n`);
    const result = await runCli(["batch", file, "--json"], { env: world.env, timeoutMs: 90_000 });
    expect(result.code, result.stderr).toBe(0);
    const job = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as JobJson;
    expect(job).toMatchObject({ state: "succeeded", provider: "b", target: "b/vendorx/video-2.5/text-to-video" });
    expect(job.attempts![0]).toMatchObject({ target: "c/v6", provider: "c", provider_job_id: emulators.c.tasks()[0]!.videoId });
    expect(job.attempts![0]!.outcome).toMatch(/C failed the generation \(moderation_failed.*which cost nothing; fallback_on_failure/);
    expect(emulators.c.tasks()).toHaveLength(1);
    expect(job.outputs[0]!.content_type).toBe("video/mp4");
    expect(job.outputs[0]!.duration_s).toBeGreaterThan(0);
    expect(job.outputs[0]!.width).toBeGreaterThan(0);
  });

  it("routing: without fallback_on_failure a failed generation ends the job; with it, a failure whose cost is not known (D) ends it too, saying why it was not moved", async () => {
    const { emulators, world } = await allProviders({ d: { renderTimeMs: { minMs: 200, maxMs: 300 } } });
    emulators.d.failNextJobs("Failed", 2);
    const file = `${world.folder}/fail.jsonl`;
    const base = { task: "image", prompt: "a fox", size: "512x512", route: ["d/gen-2-pro", "d/gen-2-flex"] };
    writeFileSync(file, `${JSON.stringify({ ref: "plain", ...base })}\n${JSON.stringify({ ref: "asked", ...base, fallback_on_failure: true })}\n`);
    const result = await runCli(["batch", file, "--json"], { env: world.env, timeoutMs: 60_000 });
    const jobs = result.stdout.trim().split("\n").map((text) => JSON.parse(text) as JobJson);
    const byRef = new Map(jobs.map((job) => [job.ref, job]));
    expect(byRef.get("plain")).toMatchObject({ state: "failed", model: "gen-2-pro" });
    expect(byRef.get("asked")).toMatchObject({ state: "failed", model: "gen-2-pro" });
    expect(byRef.get("asked")!.error!.message).toMatch(/not moved to d\/gen-2-flex: whether D charges a failed generation is not known/);
    // Two D tasks, both gen-2-pro: nothing was sent to the second target.
    expect(emulators.d.jobs.map((made) => made.endpoint)).toEqual(["gen-2-pro", "gen-2-pro"]);
  });

  it("routing: a target failing before accepting for longer than MEDIAGATE_FALLBACK_AFTER_S (an outage: 503s) hands the job to the next target; nothing was created at the first", async () => {
    const { emulators, world } = await allProviders({ f: { renderMs: { min: 200, max: 400 } } });
    world.sandbox.injectFault({ provider: "d", method: "POST", fault: { kind: "status", status: 503, body: { detail: "down for maintenance" } } });
    const result = await runCli(["generate", ...FOX, "--route", "d/gen-2-pro,f/img-v2", "--json"], { env: { ...world.env, MEDIAGATE_FALLBACK_AFTER_S: "1" }, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    const job = JSON.parse(result.stdout.trim()) as JobJson;
    expect(job).toMatchObject({ state: "succeeded", provider: "f" });
    expect(job.attempts![0]!.outcome).toMatch(/D answered .* before accepting \(failing for \d+ s, longer than the fallback bound of 1 s\)/);
    const submitsToD = world.sandbox.requests().filter((entry) => entry.provider === "d" && entry.method === "POST").length;
    expect(submitsToD).toBeGreaterThanOrEqual(2);
    expect(emulators.d.jobs).toHaveLength(0);
    // Moved on because the failures outlasted the bound ("failing for … longer than the fallback bound", above), not because
    // every try was spent (that reason names no bound): said by the job, not by the wall clock.
  });

  it("routing: when a provider runs out of credits mid-batch, the routed jobs still queued for it move to the next target at once; the ones it accepted stay", async () => {
    // D takes one task at a time and has credits for two 1 MP images.
    const { emulators, world } = await allProviders({ d: { balanceMicroUsd: 60_000, renderTimeMs: { minMs: 200, maxMs: 300 } }, f: { renderMs: { min: 200, max: 400 } } });
    const file = `${world.folder}/credits.jsonl`;
    const lines = Array.from({ length: 5 }, (_, index) => JSON.stringify({ ref: `fox-${index}`, task: "image", prompt: `fox ${index}`, size: "1024x1024", route: ["d/gen-2-pro", "f/img-v2"] }));
    writeFileSync(file, `${lines.join("\n")}\n`);
    const result = await runCli(["batch", file, "--json"], { env: { ...world.env, MEDIAGATE_D_CONCURRENCY: "1" }, timeoutMs: 20_000 });
    expect(result.code, result.stderr).toBe(0);
    const jobs = result.stdout.trim().split("\n").map((text) => JSON.parse(text) as JobJson);
    expect(jobs.every((job) => job.state === "succeeded")).toBe(true);
    expect(jobs.filter((job) => job.provider === "d")).toHaveLength(2);
    expect(jobs.filter((job) => job.provider === "f")).toHaveLength(3);
    expect(emulators.d.jobs).toHaveLength(2);
    // One submit was refused (402) and halted D; the two jobs still queued then were moved without asking D.
    expect(emulators.d.rejected402Count).toBe(1);
    const store = await openStore(world.env.MEDIAGATE_STORE!);
    try {
      const movedFrom = new Map<string, string | null>();
      for (const job of jobs.filter((each) => each.provider === "f")) {
        const fallover = (await store.events(job.id)).find((event) => (event.detail as { fallover?: unknown } | null)?.fallover !== undefined);
        movedFrom.set(job.ref, fallover?.fromState ?? null);
      }
      expect([...movedFrom.values()].sort()).toEqual(["queued", "queued", "submitting"]);
    } finally {
      await store.close();
    }
  });
});

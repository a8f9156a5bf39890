import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/core/job.js";
import { Engine } from "../../src/engine/engine.js";
import { createLogger } from "../../src/engine/logger.js";
import type { ProviderId } from "../../src/providers/adapter.js";
import { createDAdapter } from "../../src/providers/d/index.js";
import type { ProviderEntry } from "../../src/providers/registry.js";
import type { Store } from "../../src/store/store.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { sqliteFactory } from "../helpers/stores.js";
import { waitAndRead } from "../helpers/wait.js";

let world: DWorld | undefined;
let store: Store;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ store, cleanup } = await sqliteFactory.open());
});
afterEach(async () => {
  await cleanup();
  await world?.close();
  world = undefined;
});

/** A logger at warn level whose lines (pino JSON) are kept. */
function keptLog() {
  const lines: Array<{ level: number; msg: string }> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { log: createLogger({ level: "warn", secrets: () => [], destination }), lines };
}

describe("finding 11: a submit that provably never left is 'not sent', never unknown_submission", () => {
  it("D at an address on a blocked port (port 1): the job fails at once as not sent (blocked_port), not unknown_submission", async () => {
    const baseUrl = "http://127.0.0.1:1/d";
    const adapter = createDAdapter({ baseUrl, apiKey: "sk-blocked-port-key" });
    const providers = new Map<ProviderId, ProviderEntry>([["d", { id: "d", adapter, missing: [], baseUrl }]]);
    const engine = new Engine({ store, providers, secrets: () => ["sk-blocked-port-key"] });
    const validated = adapter.validate({ provider: "d", model: "gen-2-pro", input: { prompt: "never sent", width: 256, height: 256 } });
    const [inserted] = await store.insertJobs(
      [{ id: "job_blocked", ref: "blocked", batchId: null, provider: "d", model: validated.model, operation: validated.operation, body: validated.body, facts: validated.facts, warnings: [], estimateMicroUsd: 30_000, estimateSource: "test", outDir: "/tmp" }],
      Date.now(),
    );
    engine.start();
    const outcome = await waitAndRead(engine, store, [inserted!.job.id]);
    await engine.stop();
    const [job] = outcome.jobs;
    expect([job!.state, job!.error?.code]).toEqual(["failed", "blocked_port"]);
    expect(job!.error!.message).toBe(
      "not sent, not charged: request to http://127.0.0.1:1/d/v1/gen-2-pro not sent: port 1 is one that fetch never connects to (the Fetch standard's blocked ports)",
    );
    // No note that a request was leaving: nothing did.
    expect(job!.submitSentAt).toBeNull();
  });

  it("while D refuses connections, the queued job's reason and a warning say D is unreachable and when the next try is; once D is back it is sent once", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    const { log, lines } = keptLog();
    const { engine, enqueue, wait } = engineFor(world, store, { log });
    const job = await enqueue({ model: "gen-2-pro", input: { prompt: "refused for a while", width: 256, height: 256 } });
    await world.sandbox.startOutage();
    const seen: Job[] = [];
    const refused = new Promise<Job>((resolve) => {
      engine.on("job", (update) => {
        seen.push(update);
        if (update.state === "queued" && update.reason) resolve(update);
      });
    });
    engine.start();
    const waiting = await refused;
    await world.sandbox.endOutage();
    const outcome = await wait([job.id]);
    await engine.stop();

    expect(waiting.reason).toMatch(
      /^D unreachable \(request to http:\/\/127\.0\.0\.1:\d+\/d\/v1\/gen-2-pro not sent: connection refused \(ECONNREFUSED\)\); try 1 of 8 failed, next try in \d+ s, at \d\d:\d\d:\d\d UTC$/,
    );
    expect(waiting.nextAttemptAt).toBeGreaterThan(waiting.updatedAt);
    expect(lines.filter((line) => line.level === 40).map((line) => line.msg)).toContain(waiting.reason);
    expect(outcome.jobs[0]!.state).toBe("succeeded");
    expect(world.submits()).toBe(1);
    expect(seen.some((update) => update.state === "unknown_submission")).toBe(false);
  }, 60_000);
});

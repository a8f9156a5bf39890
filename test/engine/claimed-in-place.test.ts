import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KyselyStore } from "../../src/store/kysely-store.js";
import { openPostgresStore } from "../../src/store/postgres.js";
import type { ClaimResult, Store } from "../../src/store/store.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { dropSchema } from "../helpers/stores.js";
import { until, untilJob } from "../helpers/until.js";

const databaseUrl = process.env.DATABASE_URL;
const OTHER_ENGINE = "mg:otherhost:4242:0123456789abcdef";
const REQUEST = { model: "gen-2-pro", input: { prompt: "in place", width: 256, height: 256 } };

/**
 * On PostgreSQL a claim whose job another engine took first claims the
 * queue's next job of the same model in the same call (migration 16). The
 * store chooses that job, not the engine, so it can be one whose step in
 * this very engine has just put it back in the queue and has not ended yet.
 * The engine must send it only once that step has ended, and that step's end
 * must leave the new step's place in the engine alone.
 *
 * The test's store is the real one, seen through a Proxy that holds one
 * write's answer (the step of job X that puts it back) until the test lets it
 * go, and that lets another engine's claim of job Y in just before this
 * engine's own (as a faster worker would).
 */
describe.runIf(databaseUrl)("a job claimed in place of one taken first while its own step here is still ending (PostgreSQL)", () => {
  let world: DWorld;
  let schema: string;
  let real: KyselyStore;
  let other: KyselyStore;
  beforeEach(async () => {
    schema = `mg_test_${randomBytes(6).toString("hex")}`;
    real = await openPostgresStore(databaseUrl!, { schema, maxConnections: 4 });
    other = await openPostgresStore(databaseUrl!, { schema, maxConnections: 2 });
    world = await startDWorld({ renderTimeMs: 200 });
  });
  afterEach(async () => {
    await other.close();
    await real.close();
    await dropSchema(databaseUrl!, schema);
    await world.close();
  });

  it("is sent only after that step ended, once, and kept in flight until its own submit is answered: never taken for a stranded claim", async () => {
    // X's first submit is refused before D accepts it (503, retry at once): its step puts X back in the queue, due now.
    world.sandbox.injectFault({ provider: "d", method: "POST", fault: { kind: "status", status: 503, body: { detail: "busy" }, headers: { "retry-after": "0" } }, times: 1 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let xId = "";
    let yId = "";
    let putBack = false;
    let inPlace: ClaimResult | null = null;
    const store = new Proxy(real, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== "function") return value;
        const call = (...args: unknown[]) => (value as (...parameters: unknown[]) => Promise<unknown>).apply(target, args);
        if (property === "transition") {
          return async (...args: unknown[]) => {
            const moved = await call(...args);
            if (args[0] === xId && args[2] === "queued" && !putBack) {
              putBack = true;
              await held;
            }
            return moved;
          };
        }
        if (property === "claimForSubmit") {
          return async (...args: unknown[]) => {
            if (args[0] === yId && inPlace === null) {
              // Another engine takes Y a moment before this one asks for it.
              const taken = await other.claimForSubmit(yId, OTHER_ENGINE, args[2] as never, Date.now(), 60_000);
              expect(taken.kind).toBe("claimed");
              const claim = (await call(...args)) as ClaimResult;
              inPlace = claim;
              return claim;
            }
            return call(...args);
          };
        }
        return call;
      },
    }) as Store;
    const { engine, enqueue } = engineFor(world, store);
    engine.start();
    try {
      const x = await enqueue(REQUEST, "x");
      xId = x.id;
      await until(() => putBack, "X's refused submit to put it back in the queue");
      const postsToD = () => world.sandbox.requests({ provider: "d" }).filter((request) => request.method === "POST").length;
      expect(postsToD()).toBe(1);
      // X's next submit will be answered 6 s late: longer than the engine's look for stranded claims (every 5 s).
      world.sandbox.injectFault({ provider: "d", method: "POST", fault: { kind: "delay_answer", ms: 6_000 }, times: 1 });
      yId = "job_y";
      const y = await enqueue(REQUEST, "y");
      expect(y.id).toBe(yId);
      await until(() => inPlace !== null, "this engine's claim of Y, taken first by the other engine");
      const claimed = inPlace as unknown as ClaimResult;
      expect(claimed).toMatchObject({ kind: "claimed", instead: true });
      expect(claimed.kind === "claimed" && claimed.job.id).toBe(xId);
      // X's step that put it back has not ended: nothing may be sent for X yet.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(postsToD()).toBe(1);
      release();
      await until(() => postsToD() === 2, "X's submit after its earlier step ended", 5_000);
      const done = await untilJob(engine, real, xId, (job) => ["succeeded", "failed", "unknown_submission"].includes(job.state), 30_000);
      // Had the earlier step's end taken the new step's place, the look for stranded claims would have found X
      // submitting under this engine's lease with nothing working on it, while its submit was in flight.
      expect(done.state).toBe("succeeded");
      expect(postsToD()).toBe(2);
      expect(world.d.jobs).toHaveLength(1);
      const reasons = (await real.events(xId)).map((event) => event.reason);
      expect(reasons.some((reason) => /recover|stranded|answer was lost/.test(reason ?? ""))).toBe(false);
      // Y stays the other engine's: this one never sent it.
      expect(await real.getJob(yId)).toMatchObject({ state: "submitting", leaseOwner: OTHER_ENGINE });
    } finally {
      release();
      await engine.stop();
    }
  }, 60_000);
});

import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ScaledClock } from "../../src/core/clock.js";
import { openPostgresStore } from "../../src/store/postgres.js";
import type { Store } from "../../src/store/store.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { dropSchema } from "../helpers/stores.js";
import { until } from "../helpers/until.js";

const databaseUrl = process.env.DATABASE_URL;

// The loop's LISTEN (PostgreSQL): an engine that serves every job of a store (`worker`, `serve`) acts on work another
// process announces at once; one that was not told to listen (a command on its own jobs) does not subscribe. Engines
// here run a thousand times slower than real time (an hour ahead, so that what is queued now is due): their own naps
// last minutes, so within a test only an announcement makes them act. Part of `npm run mutate:loop`.
describe.runIf(databaseUrl)("the engine loop listening for work (PostgreSQL, real sandbox D)", () => {
  let schema: string;
  let stores: Store[];
  let world: DWorld;
  beforeEach(async () => {
    schema = `mg_test_${randomBytes(6).toString("hex")}`;
    stores = [await openPostgresStore(databaseUrl!, { schema, maxConnections: 4 }), await openPostgresStore(databaseUrl!, { schema, maxConnections: 4 })];
    world = await startDWorld({ renderTimeMs: 60_000 });
  });
  afterEach(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await world.close();
    await dropSchema(databaseUrl!, schema);
  });

  const slowEngine = (store: Store) => engineFor(world, store, { clock: new ScaledClock(0.001, Date.now() + 3_600_000) });
  const napping = (engine: ReturnType<typeof slowEngine>["engine"]) => new Promise<void>((resolve) => engine.once("idle", () => resolve()));
  const polls = () => world.sandbox.requests().filter((request) => request.method === "GET" && request.url.startsWith("/d-poll/v1/get_result")).length;

  it("an engine not told to listen is not woken by work queued elsewhere; one told to is, and is told of a webhook another process received for its job", async () => {
    const elsewhere = engineFor(world, stores[1]!);
    const deaf = slowEngine(stores[0]!);
    const deafNapping = napping(deaf.engine);
    deaf.engine.start();
    await deafNapping;
    await elsewhere.enqueue({ model: "gen-2-pro", input: { prompt: "not heard", width: 256, height: 256 } });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(world.submits()).toBe(0);
    await deaf.engine.stop();

    const listening = slowEngine(stores[0]!);
    listening.engine.listenForWork();
    const listeningNapping = napping(listening.engine);
    listening.engine.start();
    // Its first look finds the job queued before it started; then it naps.
    await until(() => world.submits() === 1, "the first job, found at the first look");
    await listeningNapping;
    const heard = await elsewhere.enqueue({ model: "gen-2-pro", input: { prompt: "heard at once", width: 256, height: 256 } });
    await until(async () => (await stores[1]!.getJob(heard.id))!.state === "running", "the listening engine to submit the job queued elsewhere", 5_000);
    expect(world.submits()).toBe(2);
    expect(polls()).toBe(0);
    // Another process verified a webhook for it: it nudges the job there, and the owner is told and polls it now.
    const stored = (await stores[1]!.getJob(heard.id))!;
    expect(stored.leaseOwner).toBe(listening.engine.owner);
    expect(await elsewhere.engine.nudge(stored)).toBe(true);
    await until(() => polls() > 0, "the owner to poll the nudged job", 5_000);
    await listening.engine.stop();
  }, 60_000);
});

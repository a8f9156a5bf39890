import { describe, expect, it } from "vitest";
import { createDEmulator } from "../../src/sandbox/d/index.js";
import { storeFactories } from "../helpers/stores.js";
import { until } from "../helpers/until.js";
import { startWorld, worldEngine, worldPerTest } from "../helpers/world.js";

// Halts written by another process (a worker that ran D out of credits, a batch that cleared the halt to resume):
// the engine keeps its own copy of the halts for at most a second of its clock, and honours both within it.

const D_SUBMIT_PATH = /^\/d\/v1\//;
const pro = (prompt: string) => ({ provider: "d" as const, model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });

for (const factory of storeFactories) {
  describe(`halts set and cleared by another process (${factory.name}, real sandbox D, virtual time)`, () => {
    const bed = worldPerTest(factory);

    it("a halt written by another process while D's 24 slots are busy stops every further submit; clearing it resumes the rest, each job sent once", async () => {
      const { store } = bed;
      // Renders of 30 s of virtual time (1.5 s of wall time at scale 20): the halt below is written well inside the
      // first wave's renders even on a loaded machine, where a 4 s render let 7 more submits through before it.
      const d = createDEmulator({ renderTimeMs: 30_000 });
      const world = (bed.world = await startWorld([d], { timeScale: 20 }));
      const submits = () => world.sandbox.requests().filter((request) => request.method === "POST" && D_SUBMIT_PATH.test(request.url)).length;
      const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
      const jobs = [];
      for (let index = 0; index < 40; index++) jobs.push(await enqueue(pro(`lighthouse ${index}`), `lighthouse-${index}`));
      engine.start();
      await until(() => submits() >= 24, "the first wave of 24 submits");
      const clock = world.sandbox.clock;
      await store.haltProvider({ provider: "d", code: "insufficient_credits", message: "halted by another worker", jobId: null, at: clock.now() });
      // Past the first wave's renders (30 s) and the engine's one second of trust in its copy of the halts.
      await clock.sleep(34_000);
      expect(submits()).toBe(24);
      const queued = (await store.listJobs({ states: ["queued"] })).length;
      expect(queued).toBe(16);

      await store.clearHalt("d");
      const ended = (await wait(jobs.map((job) => job.id))).jobs;
      await engine.stop();
      expect(ended.filter((job) => job.state === "succeeded")).toHaveLength(40);
      expect(submits()).toBe(40);
      expect(d.jobs).toHaveLength(40);
    });
  });
}

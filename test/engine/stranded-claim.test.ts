import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { storeFactories } from "../helpers/stores.js";

for (const factory of storeFactories) {
  describe(`a claim whose answer was lost (${factory.name})`, () => {
    let world: DWorld;
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ store, cleanup } = await factory.open());
      world = await startDWorld({ renderTimeMs: 200 });
    });
    afterEach(async () => {
      await cleanup();
      await world.close();
    });

    it("a job left `submitting` under the engine's own lease with nothing working on it is recovered: queued again (nothing was sent) and sent once", async () => {
      const { engine, enqueue, wait } = engineFor(world, store);
      const job = await enqueue({ model: "gen-2-pro", input: { prompt: "stranded", width: 256, height: 256 } });
      // The claim committed in the store, but its answer never reached the engine (the connection was cut then).
      const claim = await store.claimForSubmit(job.id, engine.owner, [{ key: "d:account", capacity: 24 }], Date.now(), 30_000);
      expect(claim.kind).toBe("claimed");
      engine.start();
      const outcome = await wait([job.id]);
      await engine.stop();
      expect(outcome.jobs[0]!.state).toBe("succeeded");
      expect(world.submits()).toBe(1);
      const reasons = (await store.events(job.id)).map((event) => event.reason);
      expect(reasons.some((reason) => /engine stopped before its submit was sent; queued again/.test(reason))).toBe(true);
    });
  });
}

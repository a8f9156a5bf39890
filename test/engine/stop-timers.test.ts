import { afterEach, describe, expect, it } from "vitest";
import { once } from "node:events";
import { createDEmulator } from "../../src/sandbox/d/index.js";
import type { Store } from "../../src/store/store.js";
import { storeFactories } from "../helpers/stores.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

// A stopped engine leaves no timer behind: its loop naps up to an idle tick (500 ms) at a time, and a nap ended by the
// stop that kept its timer kept the process alive for the rest of it (a batch exited 400 ms after its last job was
// saved). Real sandbox D, real stores, the real clock.

const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;

for (const factory of storeFactories) {
  describe(`stopping the engine (${factory.name})`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;
    let world: World | undefined;
    afterEach(async () => {
      await cleanup?.();
      await world?.close();
      world = cleanup = undefined;
    });

    it("an engine stopped while it naps with nothing due leaves no timer running", async () => {
      ({ store, cleanup } = await factory.open());
      world = await startWorld([createDEmulator()]);
      const { engine } = worldEngine(world, store);
      const before = timers();
      const idle = once(engine, "idle");
      engine.start();
      await idle;
      // Napping now (an idle tick: nothing is due); its timer is one of these.
      expect(timers()).toBeGreaterThan(before);
      await engine.stop();
      expect(timers()).toBeLessThanOrEqual(before);
    });
  });
}

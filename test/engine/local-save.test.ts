import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { fullDiskFor } from "../helpers/full-disk.js";
import { storeFactories } from "../helpers/stores.js";

const image = (prompt: string) => ({ model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });

for (const factory of storeFactories) {
  describe(`saving results locally (${factory.name})`, () => {
    let world: DWorld;
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ store, cleanup } = await factory.open());
      // Virtual time ×20: the 30 s wait before saving again takes 1.5 s.
      world = await startDWorld({ renderTimeMs: 2_000 }, 20);
    });
    afterEach(async () => {
      await cleanup();
      await world.close();
    });

    it("a full disk while saving does not fail the job: it stays capturing, is saved once there is room, and was submitted once", async () => {
      const outputs = fullDiskFor(3);
      const { engine, enqueue } = engineFor(world, store, { outputs, clock: world.sandbox.clock });
      const jobs = [await enqueue(image("one")), await enqueue(image("two")), await enqueue(image("three"))];
      const seen: string[] = [];
      engine.on("job", (job) => {
        if (job.blockedCode === "output_unwritable") seen.push(job.id);
      });
      engine.start();
      const deadline = Date.now() + 30_000;
      let finished = await store.listJobs({ ids: jobs.map((job) => job.id) });
      while (!finished.every((job) => job.state === "succeeded") && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        finished = await store.listJobs({ ids: jobs.map((job) => job.id) });
      }
      await engine.stop();
      expect(outputs.refused).toBe(3);
      expect(seen.length).toBeGreaterThanOrEqual(1);
      expect(finished.map((job) => job.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
      expect(finished.every((job) => job.blockedCode === null)).toBe(true);
      expect(world.submits()).toBe(3);
      for (const job of finished) {
        const [output] = await store.outputs(job.id);
        expect(createHash("sha256").update(readFileSync(output!.path)).digest("hex")).toBe(output!.sha256);
      }
    });

    it("a worker sending jobs queued under a budget stops at the ceiling: the rest stay queued, unsent, blocked over_budget", async () => {
      await store.setBudget("budget_cli", 70_000, Date.now());
      const { engine, enqueue, wait } = engineFor(world, store, { clock: world.sandbox.clock });
      const jobs = [];
      for (const name of ["a", "b", "c", "d", "e"]) jobs.push(await enqueue(image(name), `budgeted-${name}`, { budgetId: "budget_cli" }));
      engine.start();
      const outcome = await wait(jobs.map((job) => job.id));
      await engine.stop();
      // gen-2-pro at 256×256 is estimated $0.03: two fit under $0.07, a third would pass it.
      expect(outcome.jobs.filter((job) => job.state === "succeeded")).toHaveLength(2);
      expect(outcome.blocked).toHaveLength(3);
      expect(outcome.blocked.every((job) => job.state === "queued" && job.blockedCode === "over_budget" && job.attempts === 0)).toBe(true);
      expect(world.submits()).toBe(2);
      expect((await store.budget("budget_cli"))!.committedMicroUsd).toBeLessThanOrEqual(70_000);
    });
  });
}

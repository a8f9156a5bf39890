import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/core/job.js";
import type { NewJob, Store } from "../../src/store/store.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";
import { storeFactories } from "../helpers/stores.js";
import { storedJobWhen } from "../helpers/until.js";

const T0 = Date.now();

for (const factory of storeFactories) {
  describe(`a budget passed by charges above their estimates (${factory.name}, real sandbox D)`, () => {
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

    /** Three $0.03 D jobs of `tenant` admitted under a $0.09 budget; the third then sent and charged $0.06: the budget holds $0.12. */
    async function overrun(tenant: string): Promise<{ waiting: Job[]; engine: ReturnType<typeof engineFor> }> {
      const running = engineFor(world, store);
      const adapter = running.providers.get("d")!.adapter!;
      await store.setBudget("budget_x", 90_000, T0);
      const jobs: NewJob[] = [];
      for (const name of ["a", "b", "c"]) {
        const validated = adapter.validate({ provider: "d", model: "gen-2-pro", input: { prompt: name, width: 256, height: 256 } });
        const estimate = await adapter.estimate(validated);
        jobs.push({ id: `job_${tenant}_${name}`, ref: name, batchId: null, provider: "d", model: validated.model, operation: null, body: validated.body, facts: validated.facts, warnings: [], estimateMicroUsd: estimate.microUsd, estimateSource: estimate.source, outDir: world.env.MEDIAGATE_OUTPUT_DIR!, budgetId: "budget_x", tenant });
      }
      const [admitted] = await store.admit([{ tenant, jobs, budgetId: "budget_x", differs: () => false, idempotency: null, batchId: null }], T0);
      expect(admitted!.kind).toBe("admitted");
      expect((await store.budget("budget_x"))!.committedMicroUsd).toBe(90_000);
      const third = `job_${tenant}_c`;
      expect((await store.claimForSubmit(third, "elsewhere", [], T0 + 1, 30_000)).kind).toBe("claimed");
      await store.transition(third, { state: "submitting" }, "running", { providerJobId: "p-c", leaseOwner: null }, "accepted", T0 + 2);
      await store.transition(third, { state: "running" }, "failed", { chargeMicroUsd: 60_000, error: { code: "generation_failed", message: "failed, charged" } }, "failed, charged $0.06", T0 + 3);
      expect((await store.budget("budget_x"))!.committedMicroUsd).toBe(120_000);
      return { waiting: (await store.listJobs({ tenant })).filter((job) => job.state === "queued"), engine: running };
    }

    it("an API token's jobs admitted before the overrun are not sent past the ceiling: the first ends failed (budget_exhausted, its reservation given back), which brings the budget back to its ceiling, and the other is sent within it; nothing is left queued", async () => {
      const { waiting, engine } = await overrun("tok_a");
      expect(waiting).toHaveLength(2);
      engine.engine.start();
      const ended = await Promise.all(waiting.map((job) => storedJobWhen(store, job.id, (each) => each.state === "failed" || each.state === "succeeded", "the job to end")));
      await engine.engine.stop();
      const [refused, sent] = ended[0]!.state === "failed" ? ended : [ended[1]!, ended[0]!];
      expect(refused).toMatchObject({ state: "failed", error: { code: "budget_exhausted" }, budgetHeldMicroUsd: 0, attempts: 0 });
      expect(sent).toMatchObject({ state: "succeeded", chargeMicroUsd: 30_000 });
      expect(world.submits()).toBe(1);
      // $0.06 charged for c, $0.03 for the one sent: the ceiling, not past it.
      expect((await store.budget("budget_x"))!.committedMicroUsd).toBe(90_000);
    });

    it("a command's jobs wait instead, blocked over_budget: running the command again with a higher ceiling sends them", async () => {
      const { waiting, engine } = await overrun("local");
      engine.engine.start();
      const blocked = await Promise.all(waiting.map((job) => storedJobWhen(store, job.id, (each) => each.blockedCode === "over_budget", "the job to be held back")));
      await engine.engine.stop();
      for (const job of blocked) expect(job).toMatchObject({ state: "queued", attempts: 0 });
      expect(world.submits()).toBe(0);
    });
  });
}

import { join } from "node:path";
import { loadConfig } from "../../src/core/config.js";
import { Engine, type EngineOptions } from "../../src/engine/engine.js";
import type { JobRequest } from "../../src/providers/adapter.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import type { Store } from "../../src/store/store.js";
import type { DWorld } from "./d-sandbox.js";
import { waitAndRead } from "./wait.js";

/** An in-process engine on a real store, pointed at the world's sandbox. */
export function engineFor(world: DWorld, store: Store, options: Partial<Pick<EngineOptions, "leaseMs" | "log" | "outputs" | "clock" | "scope" | "idleTickMs" | "queueOrder">> = {}) {
  const config = loadConfig({ env: world.env, cwd: world.folder });
  const providers = createProviderRegistry(config);
  const engine = new Engine({ store, providers, secrets: () => [world.env.MEDIAGATE_D_API_KEY!], ...options });
  const adapter = providers.get("d")!.adapter!;
  let counter = 0;
  return {
    engine,
    providers,
    async enqueue(request: Omit<JobRequest, "provider"> & { provider?: "d" }, ref = `ref-${++counter}`, extra: { budgetId?: string; tenant?: string; batchId?: string } = {}) {
      const validated = adapter.validate({ provider: "d", ...request });
      const estimate = await adapter.estimate(validated);
      const [result] = await store.insertJobs(
        [
          {
            id: `job_${ref}`,
            ref,
            batchId: extra.batchId ?? null,
            provider: "d",
            model: validated.model,
            operation: validated.operation,
            body: validated.body,
            facts: validated.facts,
            warnings: validated.warnings,
            estimateMicroUsd: estimate.microUsd,
            estimateSource: estimate.source,
            outDir: join(world.folder, "out"),
            budgetId: extra.budgetId ?? null,
            ...(extra.tenant !== undefined ? { tenant: extra.tenant } : {}),
          },
        ],
        Date.now(),
      );
      engine.wake();
      return result!.job;
    },
    wait: (ids: string[]) => waitAndRead(engine, store, ids),
  };
}

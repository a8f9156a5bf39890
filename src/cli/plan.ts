import type { Command } from "commander";
import { formatMicroUsd } from "../core/money.js";
import { prepareBatch } from "./batch.js";
import { planBatch } from "../app/plan.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";

export function registerPlan(program: Command, globals: () => GlobalOptions): void {
  program
    .command("plan")
    .description("waves and expected wall time of a batch file, and its estimate; nothing is sent")
    .argument("<file>", "a batch file")
    .action(async (file: string) => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const prepared = await prepareBatch(runtime, file);
        const plans = await planBatch(runtime, await runtime.store(), prepared);
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ providers: plans })}\n`);
          return;
        }
        for (const plan of plans) {
          const seconds = (ms: number | null) => (ms === null ? "unknown" : `${(ms / 1000).toFixed(1)} s`);
          process.stdout.write(
            [
              `${plan.provider.toUpperCase()}: ${plan.jobs} job(s)`,
              plan.slots ? `${plan.slots} slots → ${plan.waves} wave(s)` : "no concurrency cap published",
              `render time ${seconds(plan.renderMs)}${plan.renderMs === null ? " (no finished jobs yet)" : " (median observed)"}`,
              `expected wall time ${seconds(plan.expectedWallMs)}`,
              `estimate ${formatMicroUsd(plan.estimateMicroUsd)}${plan.unpriced ? ` + ${plan.unpriced} unpriced` : ""}`,
            ].join("; ") + "\n",
          );
        }
      } finally {
        await runtime.close();
      }
    });
}

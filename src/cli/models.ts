import type { Command } from "commander";
import { COMMON_TASKS } from "../core/common-request.js";
import { InputError } from "../core/errors.js";
import { PROVIDER_IDS, type ProviderId } from "../providers/adapter.js";
import { commonTargets } from "../app/targets.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";

/**
 * `mediagate models [--provider P] [--task image|video]`: the model names
 * each provider takes and whether it is configured; with `--task`, every
 * target of a common request of that task, with what it honours (sizes,
 * durations, ratios, references) and its price basis. Sends nothing.
 */
export function registerModels(program: Command, globals: () => GlobalOptions): void {
  program
    .command("models")
    .description("list the models each provider takes; with --task, every target of a common request and what it honours (nothing is sent)")
    .option("--provider <id>", `only this provider (${PROVIDER_IDS.join(", ")})`)
    .option("--task <task>", "targets of a common request of this task, with what each honours: image or video")
    .action(async (flags: { provider?: string; task?: string }) => {
      if (flags.provider !== undefined && !(PROVIDER_IDS as readonly string[]).includes(flags.provider)) {
        throw new InputError("--provider", `unknown provider "${flags.provider}"`, PROVIDER_IDS.join(", "));
      }
      if (flags.task !== undefined && !(COMMON_TASKS as readonly string[]).includes(flags.task)) {
        throw new InputError("--task", `unknown task "${flags.task}"`, COMMON_TASKS.join(", "));
      }
      const options = globals();
      const runtime = runtimeOf(options);
      const providers = flags.provider ? [flags.provider as ProviderId] : [...PROVIDER_IDS];
      if (flags.task !== undefined) {
        const rows = commonTargets(runtime, providers).filter((row) => row.task === flags.task);
        if (options.json) {
          for (const { listed: _listed, ...row } of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
          return;
        }
        for (const row of rows) {
          process.stdout.write(`${row.target} (${row.task}${row.configured ? "" : "; not configured"})\n`);
          for (const [field, what] of Object.entries(row.honours)) process.stdout.write(`  ${field}: ${what}\n`);
          for (const [field, why] of Object.entries(row.refuses)) process.stdout.write(`  ${field}: not honoured (${why})\n`);
          process.stdout.write(`  price: ${row.price_basis}\n`);
        }
        return;
      }
      const rows = providers.flatMap((id) => {
        const entry = runtime.providers.get(id);
        if (!entry?.adapter) return [];
        return [{
          provider: id,
          name: entry.adapter.displayName,
          models: entry.adapter.models(),
          naming: entry.adapter.modelNaming ?? null,
          configured: entry.missing.length === 0,
          missing: entry.missing,
        }];
      });
      if (options.json) {
        for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
        return;
      }
      for (const row of rows) {
        const status = row.configured ? "configured" : `not configured: set ${row.missing.join(", ")}`;
        process.stdout.write(`${row.name} (${status})\n`);
        for (const model of row.models) process.stdout.write(`  ${model}\n`);
        if (row.naming) process.stdout.write(`  ${row.models.length ? "also " : ""}${row.naming}\n`);
      }
    });
}

import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { PROVIDER_IDS, type ProviderId } from "../providers/adapter.js";
import { createRuntime, type GlobalOptions } from "./runtime.js";

/** `mediagate models [--provider P]`: the model names each provider takes, and whether it is configured. Sends nothing. */
export function registerModels(program: Command, globals: () => GlobalOptions): void {
  program
    .command("models")
    .description("list the models each provider takes (nothing is sent)")
    .option("--provider <id>", `only this provider (${PROVIDER_IDS.join(", ")})`)
    .action(async (flags: { provider?: string }) => {
      if (flags.provider !== undefined && !(PROVIDER_IDS as readonly string[]).includes(flags.provider)) {
        throw new InputError("--provider", `unknown provider "${flags.provider}"`, PROVIDER_IDS.join(", "));
      }
      const options = globals();
      const runtime = createRuntime(options);
      const providers = flags.provider ? [flags.provider as ProviderId] : [...PROVIDER_IDS];
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

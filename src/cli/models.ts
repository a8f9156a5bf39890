import type { Command } from "commander";
import { COMMON_TASKS, type CommonCapabilities, type CommonTask } from "../core/common-request.js";
import { InputError } from "../core/errors.js";
import { PROVIDER_IDS, type ProviderAdapter, type ProviderId } from "../providers/adapter.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";

/** One target of a common request: `d/gen-2-pro`, or how a provider without a published list names its models. */
interface TargetRow {
  target: string;
  provider: ProviderId;
  task: CommonTask;
  honours: CommonCapabilities["honours"];
  refuses: CommonCapabilities["refuses"];
  price_basis: string;
  configured: boolean;
}

/** The targets of a provider, each with what it honours: its listed models, or one row naming how its models are named. */
function targetRows(id: ProviderId, adapter: ProviderAdapter, configured: boolean): TargetRow[] {
  if (!adapter.commonCapabilities) return [];
  const named = (model: string, target: string): TargetRow[] => {
    const capabilities = adapter.commonCapabilities!(model);
    if (!capabilities) return [];
    return [{ target, provider: id, task: capabilities.task, honours: capabilities.honours, refuses: capabilities.refuses, price_basis: capabilities.priceBasis, configured }];
  };
  const models = adapter.models();
  if (models.length > 0) return models.flatMap((model) => named(model, `${id}/${model}`));
  // No published list (A, B, F): one row whose target says how a model is named.
  const placeholder = id === "b" ? "<vendor>/<model>/<function>" : "<model>";
  return named("", `${id}/${placeholder}`);
}

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
        const rows = providers.flatMap((id) => {
          const entry = runtime.providers.get(id);
          return entry?.adapter ? targetRows(id, entry.adapter, entry.missing.length === 0) : [];
        }).filter((row) => row.task === flags.task);
        if (options.json) {
          for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
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

import type { Command } from "commander";
import { ConfigError, InputError } from "../core/errors.js";
import { formatMicroUsd } from "../core/money.js";
import type { BAccount, BAdapter } from "../providers/b/index.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";
import type { Runtime } from "../app/runtime.js";

/** B's account operations over the engine's HTTP path (rate token, URL checks, redaction). */
async function bAccount(runtime: Runtime): Promise<BAccount> {
  const entry = runtime.providers.get("b");
  if (!entry?.adapter) throw new ConfigError("MEDIAGATE_B_BASE_URL", "provider B is not supported by this build");
  if (entry.missing.length) throw new ConfigError(entry.missing[0]!, `provider B is not configured: set ${entry.missing.join(" and ")}`);
  const context = await (await runtime.engine()).providerContext("b");
  return (entry.adapter as BAdapter).account(context.http);
}

/** Whether B is configured here (its account report is then part of `mediagate spend`). */
export function bConfigured(runtime: Runtime): boolean {
  const entry = runtime.providers.get("b");
  return Boolean(entry?.adapter) && entry!.missing.length === 0;
}

/** B's own daily spend per key and per model for an inclusive range of days (at most 366), beside the local ledger of B. */
export async function bSpendReport(runtime: Runtime, fromDay: string, toDay: string): Promise<{ json: Record<string, unknown>; text: string[] }> {
  const report = await (await bAccount(runtime)).spend({ from: fromDay, to: toDay });
  const fromMs = Date.parse(`${report.from}T00:00:00Z`);
  const toMs = Date.parse(`${report.to}T00:00:00Z`) + 86_400_000 - 1;
  const ledger = await (await runtime.store()).ledgerTotal({ provider: "b", from: fromMs, to: toMs });
  return {
    json: {
      from: report.from,
      to: report.to,
      total_micro_usd: report.totalMicroUsd,
      provider_total_micro_usd: report.providerTotalMicroUsd,
      by_key: report.byKey.map((row) => ({ key_id: row.keyId, charge_micro_usd: row.chargeMicroUsd })),
      by_model: report.byModel.map((row) => ({ model: row.model, charge_micro_usd: row.chargeMicroUsd })),
      ledger_micro_usd: ledger,
    },
    text: [
      `B's own report, ${report.from} to ${report.to} (inclusive): ${formatMicroUsd(report.totalMicroUsd)}`,
      report.byKey.length ? "  per key:" : "  per key: none reported by B",
      ...report.byKey.map((row) => `    ${(row.keyId ?? "(not given)").padEnd(32)} ${formatMicroUsd(row.chargeMicroUsd)}`),
      report.byModel.length ? "  per model:" : "  per model: none reported by B",
      ...report.byModel.map((row) => `    ${(row.model ?? "(not given)").padEnd(32)} ${formatMicroUsd(row.chargeMicroUsd)}`),
      `  local ledger, settled B charges recorded in these days (UTC): ${formatMicroUsd(ledger)}`,
    ],
  };
}

function print(json: boolean, value: unknown, text: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text()}\n`);
}

const textField = (raw: Record<string, unknown>, ...names: string[]): string => {
  for (const name of names) if (typeof raw[name] === "string") return raw[name];
  return "";
};

export function registerBAccount(program: Command, globals: () => GlobalOptions): void {
  const catalog = program
    .command("catalog")
    .description("B's catalog of operations (read from B, cached); nothing is inferred from a model's name")
    .option("--search <text>", "only operations whose id or text fields contain this")
    .action(async (flags: { search?: string }) => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const list = await (await bAccount(runtime)).listCatalog(flags.search ? { search: flags.search } : {});
        print(Boolean(options.json), { recognized: list.recognized, operations: list.entries.map((entry) => entry.raw) }, () =>
          [
            ...list.entries.map((entry) => `${entry.apiId.padEnd(48)} ${textField(entry.raw, "title", "name")} ${textField(entry.raw, "availability")}`.trimEnd()),
            list.recognized ? `${list.entries.length} operation(s); \`mediagate catalog show API_ID\` for inputs and pricing` : "B's catalog answer had a shape mediagate does not know; use --json to see it raw",
          ].join("\n"),
        );
      } finally {
        await runtime.close();
      }
    });

  catalog
    .command("show")
    .description("one operation's inputs, enums and pricing metadata")
    .argument("<api_id>", "vendor/model/function, slashes literal")
    .action(async (apiId: string) => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const record = await (await bAccount(runtime)).catalogRecord(apiId);
        if (!record) throw new InputError("API_ID", `B has no operation "${apiId}"`, "an api_id from `mediagate catalog`");
        print(Boolean(options.json), record.raw, () => {
          const schema = record.inputSchema as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
          const required = new Set(schema.required ?? []);
          const lines = [`${record.apiId} (${record.availability.kind})`, "inputs:"];
          for (const [name, property] of Object.entries(schema.properties ?? {})) {
            const facets = [
              String(property.type ?? ""),
              required.has(name) ? "required" : "optional",
              Array.isArray(property.enum) ? `one of ${property.enum.join(", ")}` : "",
              property.minimum !== undefined ? `≥ ${String(property.minimum)}` : "",
              property.maximum !== undefined ? `≤ ${String(property.maximum)}` : "",
            ].filter(Boolean);
            lines.push(`  ${name}: ${facets.join(", ")}`);
          }
          if (record.raw.pricing !== undefined) lines.push(`pricing (as B publishes it): ${JSON.stringify(record.raw.pricing)}`);
          return lines.join("\n");
        });
      } finally {
        await runtime.close();
      }
    });

  program
    .command("balance")
    .description("B's prepaid balance, beside what the local ledger recorded for B")
    .action(async () => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const balance = await (await bAccount(runtime)).balance();
        const ledger = await (await runtime.store()).ledgerTotal({ provider: "b" });
        print(Boolean(options.json), { provider: "b", balance_micro_usd: balance.balanceMicroUsd, ledger_micro_usd: ledger }, () =>
          `B balance ${formatMicroUsd(balance.balanceMicroUsd)}; local ledger of settled B charges ${formatMicroUsd(ledger)}`,
        );
      } finally {
        await runtime.close();
      }
    });

  program
    .command("delete")
    .description("erase a finished B job's stored media and prompts at B (DELETE /v1/media/jobs/{id}); the local files stay")
    .argument("<id>", "job id or ref")
    .action(async (id: string) => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const store = await runtime.store();
        const job = await store.findJob(id);
        if (!job) throw new InputError("ID", `no job with id or ref "${id}"`, "an id from `mediagate jobs`");
        if (job.provider !== "b") throw new InputError("ID", `${job.id} is ${providerWithArticle(job.provider)} job; only B publishes a delete`, "a B job");
        if (!job.providerJobId) throw new InputError("ID", `${job.id} was never accepted by B, so there is nothing to erase there`, "a submitted B job");
        await (await bAccount(runtime)).deleteJob(job.providerJobId);
        const now = Date.now();
        await store.noteEvent(job.id, "erased at B: stored media and prompts deleted (DELETE /v1/media/jobs/{id})", now, { providerJobId: job.providerJobId });
        print(Boolean(options.json), { id: job.id, provider_job_id: job.providerJobId, erased_at_provider: true }, () => `erased ${job.providerJobId} at B (media and prompts); ${job.id}'s local files are kept`);
      } finally {
        await runtime.close();
      }
    });
}

/** "an A", "a B", …, "an F": provider letters read as their names. */
function providerWithArticle(provider: string): string {
  const letter = provider.toUpperCase();
  return `${"AEFHILMNORSX".includes(letter) ? "an" : "a"} ${letter}`;
}

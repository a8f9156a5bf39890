import type { Command } from "commander";
import { LOCAL_CALLER } from "../app/caller.js";
import { spendOf, spendPeriod, spendView } from "../app/queries.js";
import { InputError } from "../core/errors.js";
import { formatMicroUsd } from "../core/money.js";
import { bConfigured, bSpendReport } from "./b-account.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";

/** An estimate as said to people: a sum of the priced jobs, with the unpriced ones counted beside it, never shown as $0. */
export function estimateWords(estimatedMicroUsd: number, jobs: number, unpricedJobs: number): string {
  if (jobs > 0 && unpricedJobs === jobs) return `unpriced (${unpricedJobs} job${unpricedJobs === 1 ? "" : "s"})`;
  return `${formatMicroUsd(estimatedMicroUsd)}${unpricedJobs > 0 ? ` + ${unpricedJobs} unpriced` : ""}`;
}

export function registerSpend(program: Command, globals: () => GlobalOptions): void {
  program
    .command("spend")
    .description("what this store's jobs spent, every provider: settled charges (the ledger) beside estimates, unpriced jobs counted apart; with B configured, B's own report of those days beside it")
    .option("--from <day>", "first day, YYYY-MM-DD (UTC), or a time; default 30 days before --to")
    .option("--to <day>", "last day, YYYY-MM-DD (UTC, included), or a time; default now")
    .action(async (flags: { from?: string; to?: string }) => {
      const options = globals();
      let period: { from: number; to: number };
      try {
        period = spendPeriod(flags.from, flags.to, Date.now());
      } catch (error) {
        // The same rule as the API's, told with the flag's name.
        if (error instanceof InputError) throw new InputError(`--${error.field}`, error.reason, error.allowed);
        throw error;
      }
      const runtime = runtimeOf(options);
      try {
        const lines = await spendOf(runtime, LOCAL_CALLER, period.from, period.to);
        // B publishes its own account of what it charged: asked for the same days (its range is of whole days).
        const day = (at: number) => new Date(at).toISOString().slice(0, 10);
        const b = bConfigured(runtime) ? await bSpendReport(runtime, day(period.from), day(period.to - 1)) : null;
        const view = spendView(lines, period.from, period.to);
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ ...view, ...(b ? { b: b.json } : {}) })}\n`);
          return;
        }
        const rows = lines.map(
          (line) =>
            `  ${`${line.provider.toUpperCase()} ${line.model}${line.tokenName ? ` (token ${line.tokenName})` : ""}`.padEnd(40)} settled ${formatMicroUsd(line.settledMicroUsd).padEnd(12)} estimated ${estimateWords(line.estimatedMicroUsd, line.jobs, line.unpricedJobs)}; ${line.jobs} job(s)`,
        );
        process.stdout.write(
          [
            `Spend from ${view.from} to ${view.to} (to excluded): settled ${formatMicroUsd(view.settled_micro_usd)}, estimated ${estimateWords(view.estimated_micro_usd, lines.reduce((sum, line) => sum + line.jobs, 0), view.unpriced_jobs)}`,
            ...(rows.length ? rows : ["  nothing spent or estimated in this period"]),
            ...(b ? b.text : []),
          ].join("\n") + "\n",
        );
      } finally {
        await runtime.close();
      }
    });
}

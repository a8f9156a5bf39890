import type { Command } from "commander";
import { formatMicroUsd } from "../core/money.js";
import { prepareBatch } from "./batch.js";
import { addRequestFlags, prepareFromFlags, requestFromFlags, type RequestFlags } from "./generate.js";
import { preparedNotes } from "./prepared-notes.js";
import { routeJson, type PreparedJob } from "../app/prepare.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";

export function registerQuote(program: Command, globals: () => GlobalOptions): void {
  const command = program
    .command("quote")
    .description("estimate the cost of one job (flags) or of a batch file (--file); nothing is sent");
  addRequestFlags(command);
  // A quote of a batch file needs no --provider/--model: relax them when --file is given.
  command.options.forEach((option) => {
    if (option.long === "--provider" || option.long === "--model") option.mandatory = false;
  });
  command.option("--file <file>", "a batch file to quote instead of flags").action(async (flags: RequestFlags & { file?: string }) => {
    const options = globals();
    const runtime = runtimeOf(options);
    try {
      const prepared: PreparedJob[] = flags.file
        ? await prepareBatch(runtime, flags.file)
        : [await prepareFromFlags(runtime, "quote", "quote", requestFromFlags(flags))];
      const total = prepared.reduce((sum, item) => sum + (item.estimate.microUsd ?? 0), 0);
      const unpriced = prepared.filter((item) => item.estimate.microUsd === null).length;
      if (options.json) {
        process.stdout.write(
          `${JSON.stringify({
            total_micro_usd: total,
            unpriced,
            jobs: prepared.map((item) => ({
              ref: item.ref,
              provider: item.validated.provider,
              model: item.validated.model,
              estimate_micro_usd: item.estimate.microUsd,
              source: item.estimate.source,
              warnings: item.validated.warnings,
              // A common request: the target chosen, those after it, and why any other cannot take it.
              ...routeJson(item.route),
            })),
          })}\n`,
        );
        return;
      }
      for (const item of prepared) {
        // Each line of a file is named; the one request of flags is the command's own.
        process.stderr.write(preparedNotes(item, flags.file ? item.origin : undefined));
        if (prepared.length === 1) {
          process.stdout.write(`${item.estimate.microUsd === null ? "unpriced" : formatMicroUsd(item.estimate.microUsd)}  ${item.estimate.source}\n`);
        }
      }
      if (prepared.length > 1) {
        process.stdout.write(`${prepared.length} jobs: ${formatMicroUsd(total)}${unpriced ? ` + ${unpriced} unpriced` : ""}\n`);
      }
    } finally {
      await runtime.close();
    }
  });
}

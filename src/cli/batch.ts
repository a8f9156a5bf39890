import { createHash } from "node:crypto";
import { resolve } from "node:path";
import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { formatMicroUsd } from "../core/money.js";
import type { ProviderId } from "../providers/adapter.js";
import { resolveOutputLocation } from "../outputs/location.js";
import { BatchFileError, parseBatchFile, problemLine } from "./batch-file.js";
import { enqueue, type EnqueueOptions, type EnqueueResult } from "../app/enqueue.js";
import { checkOutputFolder, prepareJob, PreparedInputError, type PreparedJob } from "../app/prepare.js";
import { preparedNotes } from "./prepared-notes.js";
import { batchListCommand, resumeCommand } from "./resume-command.js";
import { runJobs, summaryText } from "./run-jobs.js";
import { outputFlagOf, runtimeOf, type GlobalOptions } from "./globals.js";
import type { Runtime } from "../app/runtime.js";

/** Validates and estimates every line; reports all problems together, before anything is stored. */
export async function prepareBatch(runtime: Runtime, file: string): Promise<PreparedJob[]> {
  const { lines, problems } = parseBatchFile(file);
  const prepared: PreparedJob[] = [];
  // route_by "time" counts the file's earlier lines ahead of each.
  const routing = { routedHere: new Map<ProviderId, number>() };
  for (const line of lines) {
    try {
      prepared.push({ ...(await prepareJob(runtime, `line ${line.line}`, line.ref, line.request, routing)), cancelAfterS: line.cancelAfterS });
    } catch (error) {
      if (error instanceof PreparedInputError || error instanceof InputError) problems.push(error.message);
      else throw error;
    }
  }
  if (problems.length) throw new BatchFileError(problems.sort((left, right) => problemLine(left) - problemLine(right)));
  return prepared;
}

/**
 * Validates, estimates and stores the batch; what it returns is ids and
 * counts, so the validated requests (about 1 KB a line) are not held while
 * the batch runs.
 */
async function queueBatch(runtime: Runtime, file: string, options: EnqueueOptions, json: boolean): Promise<{ queued: EnqueueResult; providers: Set<ProviderId> }> {
  const prepared = await prepareBatch(runtime, file);
  // Said of each line as generate says it of its request: warnings, and a common request's route.
  if (!json) for (const item of prepared) process.stderr.write(preparedNotes(item, item.origin));
  const queued = await enqueue(runtime, prepared, options);
  return { queued, providers: new Set(prepared.map((item) => item.validated.provider)) };
}

export function registerBatch(program: Command, globals: () => GlobalOptions, setExit: (code: number) => void): void {
  program
    .command("batch")
    .description("run every job of a JSON-lines file within the providers' limits; re-running resumes it")
    .argument("<file>", "JSON lines: {\"ref\", \"provider\", \"model\", \"input\": {…}}")
    .option("--out <dir>", "where to save the outputs: a folder or s3://bucket/prefix (default MEDIAGATE_OUTPUT_DIR)")
    .option("--allow-unpriced", "run even when some jobs have no price and a budget is set (their charges are counted once known; the budget is then no guarantee)")
    .action(async (file: string, flags: { out?: string; allowUnpriced?: boolean }) => {
      const options = globals();
      const json = Boolean(options.json);
      const runtime = runtimeOf(options);
      try {
        // Everything local is checked before anything is queued or sent.
        const outDir = resolveOutputLocation(flags.out ?? runtime.config.outputDir);
        await checkOutputFolder(outDir, outputFlagOf(options, flags.out));
        const batchId = `batch_${createHash("sha256").update(resolve(file)).digest("hex").slice(0, 16)}`;
        const { queued, providers } = await queueBatch(runtime, file, { batchId, outDir, allowUnpriced: Boolean(flags.allowUnpriced), budgetId: batchId }, json);
        const store = await runtime.store();
        // Re-running a batch is the way to resume it, including after a provider halted it (credits topped up).
        for (const halt of await store.halts()) {
          if (!providers.has(halt.provider)) continue;
          await store.clearHalt(halt.provider);
          if (!json) process.stderr.write(`mediagate: clearing ${halt.provider.toUpperCase()}'s earlier halt (${halt.code}) to resume\n`);
        }
        if (!json) {
          process.stderr.write(
            `${queued.jobIds.length} job(s): ${queued.created} new, ${queued.resumed} resumed, ${queued.finished} already finished; estimate for what will be sent ${formatMicroUsd(queued.budget.totalMicroUsd)}${queued.budget.unpriced.length ? ` + ${queued.budget.unpriced.length} unpriced` : ""}\n`,
          );
        }
        const own = [resolve(file), ...(flags.out !== undefined ? ["--out", outDir] : []), ...(flags.allowUnpriced ? ["--allow-unpriced"] : [])];
        const result = await runJobs(runtime, queued.jobIds, {
          json,
          resumeHint: resumeCommand(runtime, options, ["batch", ...own], { ownOutputFlag: flags.out !== undefined }),
          progress: "overall",
          scope: { batchId },
        });
        if (!json && !result.interrupted) {
          process.stderr.write(`${summaryText(result.report, await store.halts(), outDir, batchListCommand(options, batchId, queued.jobIds.length))}\n`);
        }
        setExit(result.exitCode);
      } finally {
        await runtime.close();
      }
    });
}

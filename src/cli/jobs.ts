import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { JOB_STATES, type JobState } from "../core/job.js";
import { escapeUnprintable } from "../core/printable.js";
import { validateRefPrefix } from "../core/ref.js";
import { PROVIDER_IDS, type ProviderId } from "../providers/adapter.js";
import { costText, isoOrNull, jobJson } from "../app/job-view.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";
import { wholeNumberFlag } from "./number-flags.js";
import { NO_TIMING, timingsOf } from "../app/eta.js";

/** The most jobs one listing reads: they are held in memory at once (the API pages through any number with `cursor`). */
export const MOST_LISTED = 100_000;
/** How many jobs a listing shows without `--limit`. */
export const DEFAULT_LISTED = 50;

export function registerJobs(program: Command, globals: () => GlobalOptions): void {
  program
    .command("jobs")
    .description("list jobs, newest first")
    .option("--state <state>", `only this state (${JOB_STATES.join(", ")})`)
    .option("--provider <id>", "only this provider")
    .option("--batch <id>", "only this batch")
    .option("--ref-prefix <text>", "only jobs whose ref starts with this (the API's ref_prefix)")
    .option("--limit <n>", `at most this many (1 to ${MOST_LISTED})`, String(DEFAULT_LISTED))
    .action(async (flags: { state?: string; provider?: string; batch?: string; refPrefix?: string; limit: string }) => {
      const options = globals();
      if (flags.state && !(JOB_STATES as readonly string[]).includes(flags.state)) {
        throw new InputError("--state", `unknown state "${flags.state}"`, JOB_STATES.join(", "));
      }
      if (flags.provider && !(PROVIDER_IDS as readonly string[]).includes(flags.provider)) {
        throw new InputError("--provider", `unknown provider "${flags.provider}"`, PROVIDER_IDS.join(", "));
      }
      const limit = wholeNumberFlag("--limit", flags.limit, { min: 1, max: MOST_LISTED });
      if (flags.refPrefix !== undefined) validateRefPrefix(flags.refPrefix, "--ref-prefix");
      const runtime = runtimeOf(options);
      try {
        const store = await runtime.store();
        const jobs = await store.listJobs({
          ...(flags.state ? { states: [flags.state as JobState] } : {}),
          ...(flags.provider ? { provider: flags.provider as ProviderId } : {}),
          ...(flags.batch ? { batchId: flags.batch } : {}),
          ...(flags.refPrefix !== undefined ? { refPrefix: flags.refPrefix } : {}),
          limit,
          newestFirst: true,
        });
        if (options.json) {
          const [outputs, timings] = await Promise.all([store.outputsOfJobs(jobs.map((job) => job.id)), timingsOf(runtime, jobs)]);
          for (const job of jobs) {
            const timing = timings.get(job.id) ?? NO_TIMING;
            const expected = { queue_position: timing.queuePosition, expected_start_at: isoOrNull(timing.expectedStartAt), expected_finish_at: isoOrNull(timing.expectedFinishAt) };
            process.stdout.write(`${JSON.stringify({ ...jobJson(job, outputs.get(job.id) ?? []), ...expected })}\n`);
          }
          return;
        }
        if (jobs.length === 0) {
          process.stdout.write("no jobs\n");
          return;
        }
        // Refs are refused with control characters, but rows stored before that rule, or a provider's reason, may still hold them.
        const rows = jobs.map((job) =>
          [job.id, job.ref, `${job.provider}/${job.model}`, job.state, costText(job), job.error?.code ?? job.reason ?? ""].map(escapeUnprintable),
        );
        const header = ["ID", "REF", "PROVIDER/MODEL", "STATE", "COST", "NOTE"];
        const widths = header.map((title, column) => Math.min(40, Math.max(title.length, ...rows.map((row) => row[column]!.length))));
        const format = (row: string[]) => row.map((cell, column) => cell.slice(0, 40).padEnd(widths[column]!)).join("  ").trimEnd();
        process.stdout.write(`${[format(header), ...rows.map(format)].join("\n")}\n`);
      } finally {
        await runtime.close();
      }
    });
}

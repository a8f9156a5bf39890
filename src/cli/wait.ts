import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { jobsInPages, waitForJobs, type WaitCounts } from "../engine/wait.js";
import type { JobScope } from "../store/store.js";
import { EXIT } from "./exit-codes.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";
import { namedJob, shownJob } from "./show.js";
import { onStopSignals, tellUser } from "./signals.js";

/** What the counts say once waiting ends, for stderr. */
function outcomeLine(counts: WaitCounts): string {
  const parts = [`${counts.succeeded} succeeded`];
  if (counts.failed > 0) parts.push(`${counts.failed} failed, cancelled or expired`);
  if (counts.blocked > 0) parts.push(`${counts.blocked} blocked (queued behind a halted provider or their budget, or rendered but not savable: see their state below)`);
  return `mediagate: ${counts.total} job(s): ${parts.join(", ")}\n`;
}

/**
 * `mediagate wait ID` and `mediagate wait --batch ID`: blocks until the job,
 * or every job of the batch, has ended (or cannot move on by itself), then
 * prints each as `show` does and exits 0 when every one succeeded, 1
 * otherwise, 130 on Ctrl-C. It only watches: the jobs are run by whichever
 * process runs them (`worker`, `serve`, the command that queued them), and
 * changes are followed in the store by what changed, not by reading the
 * batch again.
 */
export function registerWait(program: Command, globals: () => GlobalOptions, setExit: (code: number) => void): void {
  program
    .command("wait")
    .description("block until a job (or a batch) has ended, print it as `show` does, and exit 0 if every job succeeded, 1 if not, 130 on Ctrl-C")
    .argument("[id]", "job id or ref")
    .option("--batch <id>", "wait for every job of this batch instead")
    .action(async (id: string | undefined, flags: { batch?: string }) => {
      if ((id === undefined) === (flags.batch === undefined)) throw new InputError(id === undefined ? "ID" : "--batch", id === undefined ? "is required (or --batch)" : "cannot be given with a job id", "a job id or ref, or --batch <id>");
      const options = globals();
      const json = Boolean(options.json);
      const runtime = runtimeOf(options);
      const stopping = new AbortController();
      const stopListening = onStopSignals(() => stopping.abort());
      try {
        const store = await runtime.store();
        let ids: string[];
        let scope: JobScope;
        if (flags.batch !== undefined) {
          ids = (await store.jobBriefs({ batchId: flags.batch })).map((brief) => brief.id);
          if (ids.length === 0) throw new InputError("--batch", `no batch "${flags.batch}" in the store`, "a batch id from `mediagate jobs` or the API");
          scope = { batchId: flags.batch };
        } else {
          ids = [(await namedJob(runtime, id!, "ID")).id];
          scope = { jobIds: ids };
        }
        tellUser(`mediagate: waiting for ${ids.length === 1 ? `job ${ids[0]}` : `${ids.length} jobs of batch ${flags.batch}`} (Ctrl-C stops waiting, not the jobs)\n`);
        let lastDone = -1;
        const outcome = await waitForJobs(await runtime.engine(), store, ids, {
          scope,
          signal: stopping.signal,
          onChange: (job, counts) => {
            if (json) return;
            if (ids.length === 1) tellUser(`${job.id}: ${job.state}${job.reason ? ` (${job.reason})` : ""}\n`);
            else if (counts.done !== lastDone) {
              lastDone = counts.done;
              tellUser(`${counts.done}/${counts.total} ended: ${counts.succeeded} succeeded, ${counts.failed} not; ${counts.running} running, ${counts.queued} queued, ${counts.blocked} blocked\n`);
            }
          },
          onStoreError: (message, retryInMs) => tellUser(`mediagate: the store failed (${message}); looking again in ${Math.round(retryInMs / 1000)} s\n`),
        });
        if (stopping.signal.aborted) {
          tellUser("mediagate: stopped waiting; the jobs go on where they run (run the same command to wait again)\n");
          setExit(EXIT.interrupted);
          return;
        }
        for await (const page of jobsInPages(store, ids)) {
          for (const job of page) process.stdout.write(`${await shownJob(runtime, job, json)}${json ? "" : "\n"}`);
        }
        if (!json) tellUser(outcomeLine(outcome.counts));
        setExit(outcome.counts.succeeded === outcome.counts.total ? EXIT.ok : EXIT.jobsFailed);
      } finally {
        stopListening();
        await runtime.close();
      }
    });
}

import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";

export function registerResubmit(program: Command, globals: () => GlobalOptions): void {
  program
    .command("resubmit")
    .description("queue an unknown_submission job again (it may be charged twice if the first submit was accepted)")
    .argument("<id>", "job id or ref")
    .action(async (id: string) => {
      const runtime = runtimeOf(globals());
      try {
        const store = await runtime.store();
        const job = await store.findJob(id);
        if (!job) throw new InputError("ID", `no job with id or ref "${id}"`, "an id from `mediagate jobs`");
        if (job.state !== "unknown_submission") {
          throw new InputError("ID", `${job.id} is ${job.state}; only unknown_submission jobs can be resubmitted`, "a job in state unknown_submission");
        }
        await store.transition(job.id, { state: "unknown_submission" }, "queued", { error: null, reason: "resubmitted by the user", nextAttemptAt: Date.now() }, "resubmitted by the user (the earlier submit may also have been accepted)", Date.now());
        const sender = job.batchId ? "run its batch again" : `run the same generate again with --ref ${job.ref}`;
        process.stderr.write(`queued ${job.id} again; ${sender} (or \`mediagate worker\`) to send it\n`);
      } finally {
        await runtime.close();
      }
    });
}

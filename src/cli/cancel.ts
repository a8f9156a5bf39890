import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { EXIT } from "./exit-codes.js";
import { jobJson } from "../app/job-view.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";
import { cancelJob } from "../app/cancel.js";

export function registerCancel(program: Command, globals: () => GlobalOptions, setExit: (code: number) => void): void {
  program
    .command("cancel")
    .description("cancel a job: a queued job locally; a submitted one through the provider where it has a cancel operation")
    .argument("<id>", "job id or ref")
    .action(async (id: string) => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const job = await (await runtime.store()).findJob(id);
        if (!job) throw new InputError("ID", `no job with id or ref "${id}"`, "an id from `mediagate jobs`");
        const outcome = await cancelJob(runtime, job);
        if (outcome.kind === "cancelled") {
          if (options.json) process.stdout.write(`${JSON.stringify(jobJson(outcome.job, []))}\n`);
          else process.stderr.write(`${outcome.message}\n`);
          return;
        }
        process.stderr.write(`mediagate: ${outcome.message}\n`);
        // A cancel the provider accepted for a job that had already ended otherwise changes nothing here.
        if (outcome.code !== "raced") setExit(EXIT.jobsFailed);
      } finally {
        await runtime.close();
      }
    });
}

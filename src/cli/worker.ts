import type { Command } from "commander";
import type { Job } from "../core/job.js";
import { createRuntime, type GlobalOptions } from "./runtime.js";

export function registerWorker(program: Command, globals: () => GlobalOptions): void {
  program
    .command("worker")
    .description("run the engine until stopped (SIGTERM/Ctrl-C: stop claiming, finish submits in flight, release leases)")
    .action(async () => {
      const options = globals();
      const runtime = createRuntime(options);
      const engine = await runtime.engine();
      const onJob = (job: Job) => {
        if (options.json) process.stdout.write(`${JSON.stringify({ id: job.id, ref: job.ref, provider: job.provider, state: job.state, reason: job.reason })}\n`);
        else process.stderr.write(`${new Date().toISOString()} ${job.id} ${job.ref} ${job.state}${job.reason ? ` (${job.reason})` : ""}\n`);
      };
      engine.on("job", onJob);
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.stderr.write("mediagate worker: stopping (finishing submits in flight)…\n");
          resolve();
        };
        process.once("SIGTERM", stop);
        process.once("SIGINT", stop);
        engine.start();
        process.stderr.write(`mediagate worker ${engine.owner} started on ${runtime.config.store}\n`);
      });
      await runtime.close();
      process.stderr.write("mediagate worker: stopped; leases released\n");
    });
}

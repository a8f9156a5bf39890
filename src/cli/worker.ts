import type { Command } from "commander";
import { onStopRequests, tellUser } from "./signals.js";
import type { Job } from "../core/job.js";
import { maskStoreAddress } from "../core/store-address.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";
import { addStopTimeoutOption, exitAtOnce, finishStop, stopTimeoutMs } from "./stop.js";

export function registerWorker(program: Command, globals: () => GlobalOptions): void {
  addStopTimeoutOption(
    program
      .command("worker")
      .description("run the engine until stopped (SIGTERM/Ctrl-C: stop claiming, finish submits in flight, release leases; a second signal exits at once)"),
  ).action(async (flags: { stopTimeout: string }) => {
    const options = globals();
    const timeoutMs = stopTimeoutMs(flags.stopTimeout);
    const runtime = runtimeOf(options);
    const engine = await runtime.engine();
    engine.listenForWork();
    const onJob = (job: Job) => {
      if (options.json) process.stdout.write(`${JSON.stringify({ id: job.id, ref: job.ref, provider: job.provider, state: job.state, reason: job.reason })}\n`);
      else process.stderr.write(`${new Date().toISOString()} ${job.id} ${job.ref} ${job.state}${job.reason ? ` (${job.reason})` : ""}\n`);
    };
    engine.on("job", onJob);
    await new Promise<void>((resolve) => {
      // SIGHUP too: a worker started from a terminal that closes must stop cleanly, not die mid-submit.
      onStopRequests(() => {
        tellUser("mediagate worker: stopping (finishing submits in flight)…\n");
        resolve();
      }, exitAtOnce("worker"));
      engine.start();
      process.stderr.write(`mediagate worker ${engine.owner} started on ${maskStoreAddress(runtime.config.store)}\n`);
    });
    await finishStop(
      "worker",
      async () => {
        await runtime.close();
        const counters = Object.values(engine.stats());
        const sum = (key: "claims" | "claimsLost") => counters.reduce((total, counter) => total + counter[key], 0);
        // Claims lost are jobs another worker on the same store took first: a measure of how much the workers get in each other's way.
        tellUser(`mediagate worker ${engine.owner} stopped; claims: ${sum("claims")} won, ${sum("claimsLost")} lost to another worker\n`);
      },
      timeoutMs,
    );
  });
}

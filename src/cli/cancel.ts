import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { isTerminal } from "../core/job.js";
import { submittedOf } from "../engine/track.js";
import { EXIT } from "./exit-codes.js";
import { jobJson } from "./job-json.js";
import { createRuntime, type GlobalOptions } from "./runtime.js";

export function registerCancel(program: Command, globals: () => GlobalOptions, setExit: (code: number) => void): void {
  program
    .command("cancel")
    .description("cancel a job: a queued job locally; a submitted one through the provider where it has a cancel operation")
    .argument("<id>", "job id or ref")
    .action(async (id: string) => {
      const options = globals();
      const runtime = createRuntime(options);
      try {
        const store = await runtime.store();
        const job = await store.findJob(id);
        if (!job) throw new InputError("ID", `no job with id or ref "${id}"`, "an id from `mediagate jobs`");
        if (isTerminal(job.state)) {
          process.stderr.write(`mediagate: ${job.id} has already ended (${job.state}); nothing to cancel\n`);
          setExit(EXIT.jobsFailed);
          return;
        }
        if (job.state === "queued") {
          const cancelled = await store.transition(job.id, { state: "queued" }, "cancelled", { reason: "cancelled by the user before submit" }, "cancelled by the user before submit", Date.now());
          if (cancelled) {
            if (options.json) process.stdout.write(`${JSON.stringify(jobJson(cancelled, []))}\n`);
            else process.stderr.write(`cancelled ${job.id} (it was never sent; nothing charged)\n`);
            return;
          }
        }
        const adapter = runtime.providers.get(job.provider)?.adapter;
        if (!adapter?.cancel) {
          process.stderr.write(
            `mediagate: ${job.provider.toUpperCase()} publishes no cancel operation, so ${job.id} (${job.state}) keeps running at the provider; mediagate keeps tracking it and saves its result\n`,
          );
          setExit(EXIT.jobsFailed);
          return;
        }
        if (job.state !== "running" || !job.providerJobId) {
          process.stderr.write(`mediagate: ${job.id} is ${job.state}; only a queued job or one running at the provider can be cancelled\n`);
          setExit(EXIT.jobsFailed);
          return;
        }
        const engine = await runtime.engine();
        const context = await engine.providerContext(job.provider);
        await adapter.cancel(submittedOf(job), { ...context, job: { id: job.id, idempotencyKey: job.idempotencyKey, callbackUrl: null } });
        const now = Date.now();
        const reason = `cancelled by the user at ${job.provider.toUpperCase()}`;
        // Terminal at once: no more polls are spent on it (an engine tracking it loses its compare-and-set and stops).
        const cancelled = await store.transition(job.id, { state: "running" }, "cancelled", { reason, leaseOwner: null, leaseExpiresAt: null }, reason, now);
        if (!cancelled) {
          const current = await store.getJob(job.id);
          process.stderr.write(`mediagate: ${job.provider.toUpperCase()} accepted the cancel, but ${job.id} had already become ${current?.state ?? "unknown"}\n`);
          return;
        }
        if (options.json) process.stdout.write(`${JSON.stringify(jobJson(cancelled, []))}\n`);
        else process.stderr.write(`cancelled ${job.id} at ${job.provider.toUpperCase()}\n`);
      } finally {
        await runtime.close();
      }
    });
}

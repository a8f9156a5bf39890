import type { Command } from "commander";
import { NO_TIMING, timingsOf, timingWords } from "../app/eta.js";
import { chargeUnknownWords, deadlineMissed, isoOrNull } from "../app/job-view.js";
import { escapeUnprintable } from "../core/printable.js";
import { InputError } from "../core/errors.js";
import type { Job } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";
import { shownEvents } from "../app/notify-urls.js";
import { jobJson } from "../app/job-view.js";
import { requestLines, requestView } from "../app/request-view.js";
import type { Runtime } from "../app/runtime.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";

/** A job as `show` prints it (and `wait`): text, or one JSON document (`--json`). */
export async function shownJob(runtime: Runtime, job: Job, json: boolean): Promise<string> {
  const store = await runtime.store();
  const outputs = await store.outputs(job.id);
  // A notify URL's token never shows, in events recorded before it was redacted there too.
  const events = await shownEvents(store, job, runtime.config.notifyUrl);
  const timing = (await timingsOf(runtime, [job])).get(job.id) ?? NO_TIMING;
  if (json) {
    return `${JSON.stringify({
      ...jobJson(job, outputs),
      reason: job.reason,
      warnings: job.warnings,
      handles: job.handles,
      provider_status: job.providerStatus,
      deadline_at: isoOrNull(job.deadlineAt),
      deadline_missed: deadlineMissed(job, Date.now()),
      queue_position: timing.queuePosition,
      expected_start_at: isoOrNull(timing.expectedStartAt),
      expected_finish_at: isoOrNull(timing.expectedFinishAt),
      request: requestView(job),
      events: events.map((event) => ({ at: new Date(event.at).toISOString(), from: event.fromState, to: event.toState, reason: event.reason })),
    })}\n`;
  }
  const lines = [
    `${job.id}  ref ${job.ref}`,
    `provider ${job.provider.toUpperCase()}  model ${job.model}${job.operation ? `  operation ${job.operation}` : ""}`,
    `state ${job.state}${job.reason ? ` (${job.reason})` : ""}${job.providerStatus ? `  provider status ${job.providerStatus}` : ""}`,
    `provider job ${job.providerJobId ?? "-"}`,
    `estimate ${job.estimateMicroUsd === null ? "unpriced" : formatMicroUsd(job.estimateMicroUsd)} (${job.estimateSource})`,
    `charge ${job.chargeMicroUsd === null ? chargeUnknownWords(job) : formatMicroUsd(job.chargeMicroUsd)}${job.chargeSource ? ` (${job.chargeSource})` : ""}`,
  ];
  const expected = timingWords(timing);
  if (expected) lines.push(expected);
  if (job.error) lines.push(`error ${job.error.code}: ${job.error.message}`);
  if (job.deadlineAt !== null) lines.push(`deadline ${new Date(job.deadlineAt).toISOString()} (${deadlineMissed(job, Date.now()) ? "missed: sent before it, still tracked and saved" : "not sent by then, it is cancelled"})`);
  lines.push("request:", ...requestLines(requestView(job)));
  for (const warning of job.warnings) lines.push(`warning: ${warning}`);
  for (const output of outputs) lines.push(`output ${output.path}  ${output.contentType}  ${output.bytes} bytes  sha256 ${output.sha256}`);
  lines.push("events:");
  for (const event of events) {
    lines.push(`  ${new Date(event.at).toISOString()}  ${event.fromState ?? "-"} → ${event.toState}  ${event.reason}`);
  }
  // Refs stored before the ref rule, and what providers said (statuses, error bodies), may hold control characters.
  return `${lines.map(escapeUnprintable).join("\n")}\n`;
}

/** The job named by an id or a ref, or an InputError naming `field`. */
export async function namedJob(runtime: Runtime, id: string, field: string): Promise<Job> {
  const job = await (await runtime.store()).findJob(id);
  if (!job) throw new InputError(field, `no job with id or ref "${id}"`, "an id from `mediagate jobs`");
  return job;
}

export function registerShow(program: Command, globals: () => GlobalOptions): void {
  program
    .command("show")
    .description("one job in full: state, outputs, cost and its event log")
    .argument("<id>", "job id or ref")
    .action(async (id: string) => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        process.stdout.write(await shownJob(runtime, await namedJob(runtime, id, "ID"), Boolean(options.json)));
      } finally {
        await runtime.close();
      }
    });
}

import { isAbsolute, resolve } from "node:path";
import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { isTerminal, type Job } from "../core/job.js";
import type { Store } from "../store/store.js";
import { formatMicroUsd } from "../core/money.js";
import { newId } from "../core/ids.js";
import { validateRef } from "../core/ref.js";
import { PROVIDER_IDS, type JobRequest, type ProviderId } from "../providers/adapter.js";
import { agreeingFlag } from "./flag-agreement.js";
import { jobJson } from "./job-json.js";
import { checkOutputFolder, enqueue, prepareJob, readImages } from "./prepare.js";
import { resumeCommand } from "./resume-command.js";
import { runJobs } from "./run-jobs.js";
import { createRuntime, type GlobalOptions } from "./runtime.js";

export interface RequestFlags {
  provider: string;
  model: string;
  prompt?: string;
  width?: string;
  height?: string;
  seed?: string;
  image?: string[];
  input?: string;
  operation?: string;
}

function integerFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw new InputError(`--${name}`, `"${value}" is not a whole number`, "an integer");
  return Number(value);
}

/** A JobRequest from command-line flags: common flags become the provider's native fields, `--input` adds any others. */
export function requestFromFlags(flags: RequestFlags): JobRequest {
  if (!(PROVIDER_IDS as readonly string[]).includes(flags.provider)) {
    throw new InputError("--provider", `unknown provider "${flags.provider}"`, PROVIDER_IDS.join(", "));
  }
  let input: Record<string, unknown> = {};
  if (flags.input !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(flags.input);
    } catch {
      throw new InputError("--input", "is not valid JSON", "a JSON object of the provider's native fields");
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new InputError("--input", "must be a JSON object", "a JSON object of the provider's native fields");
    }
    input = parsed as Record<string, unknown>;
  }
  const width = integerFlag("width", flags.width);
  const height = integerFlag("height", flags.height);
  const seed = integerFlag("seed", flags.seed);
  if (flags.prompt !== undefined) input.prompt = agreeingFlag("prompt", flags.prompt, input);
  if (width !== undefined) input.width = agreeingFlag("width", width, input);
  if (height !== undefined) input.height = agreeingFlag("height", height, input);
  if (seed !== undefined) input.seed = agreeingFlag("seed", seed, input);
  return {
    provider: flags.provider as ProviderId,
    model: flags.model,
    ...(flags.operation ? { operation: flags.operation } : {}),
    input,
    ...(flags.image?.length ? { images: readImages(flags.image) } : {}),
  };
}

/** The flags that make the same request again (local image paths made absolute), for a resume line. */
export function requestArguments(flags: RequestFlags): string[] {
  const list = ["--provider", flags.provider, "--model", flags.model];
  if (flags.operation !== undefined) list.push("--operation", flags.operation);
  if (flags.prompt !== undefined) list.push("--prompt", flags.prompt);
  if (flags.width !== undefined) list.push("--width", flags.width);
  if (flags.height !== undefined) list.push("--height", flags.height);
  if (flags.seed !== undefined) list.push("--seed", flags.seed);
  for (const image of flags.image ?? []) list.push("--image", /^https?:\/\//i.test(image) || isAbsolute(image) ? image : resolve(image));
  if (flags.input !== undefined) list.push("--input", flags.input);
  return list;
}

export function addRequestFlags(command: Command): Command {
  return command
    .requiredOption("--provider <id>", "provider: a, b, c, d, e or f")
    .requiredOption("--model <model>", "model or endpoint identifier, e.g. gen-2-pro")
    .option("--operation <name>", "operation, for providers that have several")
    .option("--prompt <text>", "the prompt")
    .option("--width <px>", "output width")
    .option("--height <px>", "output height")
    .option("--seed <n>", "seed")
    .option("--image <file|url>", "reference image (repeatable)", (value: string, previous: string[] = []) => [...previous, value])
    .option("--input <json>", "other native fields of the provider, as a JSON object");
}

export function registerGenerate(program: Command, globals: () => GlobalOptions, setExit: (code: number) => void): void {
  addRequestFlags(program.command("generate").description("submit one job, wait for it, save its outputs"))
    .option("--ref <ref>", "your unique reference for this job (re-running with the same ref resumes it)")
    .option("--out <dir>", "where to save the outputs (default MEDIAGATE_OUTPUT_DIR)")
    .option("--allow-unpriced", "run even when the job has no price and a budget is set (its charge is counted once known; the budget is then no guarantee)")
    .action(async (flags: RequestFlags & { ref?: string; out?: string; allowUnpriced?: boolean }) => {
      const options = globals();
      const runtime = createRuntime(options);
      try {
        const request = requestFromFlags(flags);
        // Everything local is checked before anything is queued or sent.
        const outDir = resolve(flags.out ?? runtime.config.outputDir);
        await checkOutputFolder(outDir, flags.out !== undefined ? "--out" : null);
        const ref = flags.ref === undefined ? newId("gen") : validateRef(flags.ref, "--ref");
        const prepared = await prepareJob(runtime, "generate", ref, request);
        const json = Boolean(options.json);
        for (const warning of prepared.validated.warnings) process.stderr.write(`mediagate: warning: ${warning}\n`);
        const { jobIds } = await enqueue(runtime, [prepared], { batchId: null, outDir, allowUnpriced: Boolean(flags.allowUnpriced), budgetId: `generate:${ref}` });
        const store = await runtime.store();
        const job = (await store.getJob(jobIds[0]!))!;
        const own = [...requestArguments(flags), ...(flags.out !== undefined ? ["--out", outDir] : []), "--ref", job.ref, ...(flags.allowUnpriced ? ["--allow-unpriced"] : [])];
        const resumeHint = resumeCommand(runtime, options, ["generate", ...own]);
        // Printed as soon as the job is stored (even with --json, on stderr): killed at any point after this, the same ref resumes it.
        process.stderr.write(
          `job ${job.id} (ref ${job.ref}) on ${job.provider.toUpperCase()} ${job.model}; estimate ${prepared.estimate.microUsd === null ? "unpriced" : formatMicroUsd(prepared.estimate.microUsd)} (${prepared.estimate.source})\n` +
            (flags.ref === undefined ? `if interrupted, resume it (not pay again) with: ${resumeHint}\n` : ""),
        );
        const result = await runJobs(runtime, [job.id], { json, resumeHint, progress: "job", scope: { jobIds: [job.id] } });
        const finished = (await store.getJob(job.id))!;
        if (!json && !result.interrupted) {
          const outputs = await store.outputs(finished.id);
          if (finished.state === "succeeded") {
            for (const output of outputs) process.stdout.write(`${output.path}\n`);
            process.stderr.write(
              `succeeded: ${outputs.length} file(s), sha256 ${outputs.map((output) => output.sha256.slice(0, 12)).join(", ")}; cost ${finished.chargeMicroUsd !== null ? formatMicroUsd(finished.chargeMicroUsd) : "unknown"} (${finished.chargeSource ?? finished.estimateSource})\n`,
            );
          } else {
            process.stderr.write(`${await outcomeText(finished, store)}\n`);
          }
        }
        setExit(result.exitCode);
      } finally {
        await runtime.close();
      }
    });
}

/** What became of a job that did not succeed, in one sentence that always gives the reason. */
async function outcomeText(job: Job, store: Store): Promise<string> {
  if (job.blockedCode === "output_unwritable") return `rendered but not saved yet: ${job.reason ?? "the output folder cannot be written"}; the job is kept: re-run this command with a writable --out`;
  if (job.blockedCode === "over_budget") return `not sent: ${job.reason ?? "over budget"}`;
  if (job.state === "queued") {
    const halt = (await store.halts()).find((item) => item.provider === job.provider);
    return `not sent: provider ${job.provider.toUpperCase()} is halted${halt ? ` (${halt.code}: ${halt.message})` : ""}`;
  }
  const reason = job.error ? `${job.error.code}: ${job.error.message}` : (job.reason ?? "no reason recorded");
  return `${job.state}: ${reason}`;
}

import { isAbsolute, resolve } from "node:path";
import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { checkJsonText } from "../core/json-text.js";
import type { Job } from "../core/job.js";
import type { Store } from "../store/store.js";
import { formatMicroUsd } from "../core/money.js";
import { newId } from "../core/ids.js";
import { validateRef } from "../core/ref.js";
import { NoEligibleTargetError, routedRequestFrom, type RoutedRequest } from "../engine/route.js";
import { PROVIDER_IDS, type JobRequest, type ProviderId } from "../providers/adapter.js";
import { agreeingFlag } from "./flag-agreement.js";
import { decimalFlag, wholeNumberFlag, type WholeRange } from "./number-flags.js";
import { resolveOutputLocation } from "../outputs/location.js";
import { enqueue } from "../app/enqueue.js";
import { checkOutputFolder, prepareJob, PreparedInputError, type PreparedJob } from "../app/prepare.js";
import type { Runtime } from "../app/runtime.js";
import { readImageAs, readImages } from "../app/local-images.js";
import { preparedNotes } from "./prepared-notes.js";
import { resumeCommand } from "./resume-command.js";
import { runJobs } from "./run-jobs.js";
import { readCancelAfterS } from "../core/deadline.js";
import { outputFlagOf, runtimeOf, type GlobalOptions } from "./globals.js";
import { deadlineWarning, NO_TIMING, timingsOf } from "../app/eta.js";

export interface RequestFlags {
  provider?: string;
  model?: string;
  prompt?: string;
  width?: string;
  height?: string;
  seed?: string;
  image?: string[];
  input?: string;
  operation?: string;
  // A common request (issue 11): --task with a target (--model p/model or --route).
  task?: string;
  size?: string;
  aspectRatio?: string;
  n?: string;
  duration?: string;
  resolution?: string;
  generateAudio?: boolean;
  firstFrame?: string;
  lastFrame?: string;
  referenceImage?: string[];
  route?: string;
  routeBy?: string;
  fallbackOnFailure?: boolean;
  providerOptions?: string;
}

/** A side in pixels: the most `--size` takes (six digits) bounds the native flags too; each provider checks its own range. */
const PIXELS = { min: 1, max: 999_999 };
/** A native seed goes to the provider as given (D shows no range); a common one is a whole number from 0, for every target. */
const NATIVE_SEED = { min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER };
const COMMON_SEED = { min: 0, max: Number.MAX_SAFE_INTEGER };
const COUNT = { min: 1, max: Number.MAX_SAFE_INTEGER };

function wholeFlag(name: string, value: string | undefined, range: WholeRange): number | undefined {
  return value === undefined ? undefined : wholeNumberFlag(`--${name}`, value, range);
}

function jsonObjectFlag(name: string, value: string, allowed: string): Record<string, unknown> {
  checkJsonText(value, `--${name}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InputError(`--${name}`, "is not valid JSON", allowed);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new InputError(`--${name}`, "must be a JSON object", allowed);
  return parsed as Record<string, unknown>;
}

/** Flags of a native request that a common one does not take, and the reverse, as commander names them. */
const NATIVE_ONLY = { provider: "--provider", width: "--width", height: "--height", input: "--input", operation: "--operation" } as const;
const COMMON_ONLY = {
  size: "--size",
  aspectRatio: "--aspect-ratio",
  n: "--n",
  duration: "--duration",
  resolution: "--resolution",
  generateAudio: "--generate-audio",
  firstFrame: "--first-frame",
  lastFrame: "--last-frame",
  referenceImage: "--reference-image",
  route: "--route",
  routeBy: "--route-by",
  fallbackOnFailure: "--fallback-on-failure",
  providerOptions: "--provider-options",
} as const;

/**
 * A request from command-line flags. With `--task`, a common request routed
 * to `--model p/model` or `--route p/model,…` (issue 11); otherwise a native
 * one, whose common flags become the provider's native fields and `--input`
 * adds any others.
 */
export function requestFromFlags(flags: RequestFlags): JobRequest | RoutedRequest {
  if (flags.task !== undefined) return routedFromFlags(flags);
  for (const [key, flag] of Object.entries(COMMON_ONLY)) {
    if (flags[key as keyof RequestFlags] !== undefined) throw new InputError(flag, "belongs to a common request", `--task image|video with ${flag}, or the provider's native fields in --input`);
  }
  if (flags.provider === undefined) throw new InputError("--provider", "is required (or --task, for a common request)", PROVIDER_IDS.join(", "));
  if (flags.model === undefined) throw new InputError("--model", "is required: the provider's model or endpoint");
  if (!(PROVIDER_IDS as readonly string[]).includes(flags.provider)) {
    throw new InputError("--provider", `unknown provider "${flags.provider}"`, PROVIDER_IDS.join(", "));
  }
  const input = flags.input !== undefined ? jsonObjectFlag("input", flags.input, "a JSON object of the provider's native fields") : {};
  const width = wholeFlag("width", flags.width, PIXELS);
  const height = wholeFlag("height", flags.height, PIXELS);
  const seed = wholeFlag("seed", flags.seed, NATIVE_SEED);
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

function routedFromFlags(flags: RequestFlags): RoutedRequest {
  for (const [key, flag] of Object.entries(NATIVE_ONLY)) {
    if (flags[key as keyof RequestFlags] !== undefined) {
      throw new InputError(flag, "belongs to a native request, not a common one (--task)", `--size or --aspect-ratio for the shape, --model p/model or --route for the target, --provider-options for native fields`);
    }
  }
  const task = flags.task;
  const wire: Record<string, unknown> = { task };
  const set = (field: string, value: unknown) => {
    if (value !== undefined) wire[field] = value;
  };
  set("prompt", flags.prompt);
  set("size", flags.size);
  set("aspect_ratio", flags.aspectRatio);
  set("seed", wholeFlag("seed", flags.seed, COMMON_SEED));
  set("n", wholeFlag("n", flags.n, COUNT));
  set("duration_s", flags.duration === undefined ? undefined : decimalFlag("--duration", flags.duration, { unit: "seconds", example: "5 or 7.5" }));
  set("resolution", flags.resolution);
  set("generate_audio", flags.generateAudio);
  if (flags.image?.length) {
    if (task !== "image") throw new InputError("--image", "gives reference images of an image request", "--reference-image, --first-frame or --last-frame for a video");
    wire.images = flags.image;
  }
  set("first_frame", flags.firstFrame);
  set("last_frame", flags.lastFrame);
  if (flags.referenceImage?.length) wire.reference_images = flags.referenceImage;
  if (flags.providerOptions !== undefined) wire.provider_options = jsonObjectFlag("provider-options", flags.providerOptions, '{"d": {"output_format": "png"}}');
  set("model", flags.model);
  if (flags.route !== undefined) wire.route = flags.route.split(",").map((target) => target.trim());
  set("route_by", flags.routeBy);
  set("fallback_on_failure", flags.fallbackOnFailure);
  const flagOf: Record<string, string> = { images: "--image", first_frame: "--first-frame", last_frame: "--last-frame", reference_images: "--reference-image" };
  try {
    return routedRequestFrom(wire, (text, field) => readImageAs(text, flagOf[field.replace(/\[\d+\]$/, "")] ?? field));
  } catch (error) {
    if (error instanceof InputError) throw new InputError(flagNameOf(error.field), error.reason, error.allowed);
    throw error;
  }
}

/**
 * `prepareJob` for a request from flags: a common request's problems found
 * while it is routed name the flag the user typed (`--n`, `--route`), not the
 * request's field (`n`, `route`); a native one's name the provider's field.
 */
export async function prepareFromFlags(runtime: Runtime, origin: string, ref: string, request: JobRequest | RoutedRequest): Promise<PreparedJob> {
  try {
    return await prepareJob(runtime, origin, ref, request);
  } catch (error) {
    if (!(error instanceof PreparedInputError) || !("common" in request)) throw error;
    const { inner } = error;
    if (inner instanceof NoEligibleTargetError) throw new NoEligibleTargetError(flagNameOf(inner.field), inner.verdicts);
    throw new InputError(flagNameOf(inner.field), inner.reason, inner.allowed);
  }
}

/** The flag a common field comes from, for messages (`aspect_ratio` → `--aspect-ratio`). */
function flagNameOf(field: string): string {
  if (field.startsWith("--")) return field;
  const names: Record<string, string> = { duration_s: "--duration", images: "--image", reference_images: "--reference-image", route_by: "--route-by" };
  const base = field.replace(/\[\d+\]$/, "");
  return names[base] ?? `--${base.replace(/_/g, "-")}`;
}

/** The flags that make the same request again (local image paths made absolute), for a resume line. */
export function requestArguments(flags: RequestFlags): string[] {
  const absolute = (image: string) => (/^https?:\/\//i.test(image) || isAbsolute(image) ? image : resolve(image));
  const list: string[] = [];
  const add = (flag: string, value: string | undefined) => {
    if (value !== undefined) list.push(flag, value);
  };
  add("--task", flags.task);
  add("--provider", flags.provider);
  add("--model", flags.model);
  add("--operation", flags.operation);
  add("--prompt", flags.prompt);
  add("--width", flags.width);
  add("--height", flags.height);
  add("--size", flags.size);
  add("--aspect-ratio", flags.aspectRatio);
  add("--seed", flags.seed);
  add("--n", flags.n);
  add("--duration", flags.duration);
  add("--resolution", flags.resolution);
  if (flags.generateAudio) list.push("--generate-audio");
  for (const image of flags.image ?? []) list.push("--image", absolute(image));
  if (flags.firstFrame !== undefined) list.push("--first-frame", absolute(flags.firstFrame));
  if (flags.lastFrame !== undefined) list.push("--last-frame", absolute(flags.lastFrame));
  for (const image of flags.referenceImage ?? []) list.push("--reference-image", absolute(image));
  add("--route", flags.route);
  add("--route-by", flags.routeBy);
  if (flags.fallbackOnFailure) list.push("--fallback-on-failure");
  add("--provider-options", flags.providerOptions);
  add("--input", flags.input);
  return list;
}

const repeatable = (value: string, previous: string[] = []) => [...previous, value];

export function addRequestFlags(command: Command): Command {
  return command
    .option("--provider <id>", "native request: provider a, b, c, d, e or f")
    .option("--model <model>", "native: the provider's model or endpoint, e.g. gen-2-pro; with --task: a target, e.g. d/gen-2-pro")
    .option("--operation <name>", "native: operation, for providers that have several")
    .option("--prompt <text>", "the prompt")
    .option("--width <px>", "native: output width")
    .option("--height <px>", "native: output height")
    .option("--seed <n>", "seed")
    .option("--image <file|url>", "reference image (repeatable)", repeatable)
    .option("--input <json>", "native: other fields of the provider, as a JSON object")
    .option("--task <task>", "a common request for any provider: image or video (with --model p/model or --route)")
    .option("--size <WxH>", "common: output size in pixels, e.g. 1024x768")
    .option("--aspect-ratio <W:H>", "common: aspect ratio, e.g. 16:9 (video: or adaptive)")
    .option("--n <count>", "common image: how many variations")
    .option("--duration <seconds>", "common video: length in seconds")
    .option("--resolution <p>", "common video: 480p, 720p or 1080p")
    .option("--generate-audio", "common video: with sound")
    .option("--first-frame <file|url>", "common video: the first frame")
    .option("--last-frame <file|url>", "common video: the last frame (with --first-frame)")
    .option("--reference-image <file|url>", "common video: a reference image (repeatable)", repeatable)
    .option("--route <targets>", "common: targets tried in order, comma-separated, e.g. d/gen-2-pro,f/img-v2")
    .option("--route-by <order|price>", "common: try the route in its order (default) or cheapest first")
    .option("--fallback-on-failure", "common: after a provider accepted the job and its generation failed, try the next target")
    .option("--provider-options <json>", 'common: native fields per provider, merged last, e.g. {"d": {"output_format": "png"}}');
}

export function registerGenerate(program: Command, globals: () => GlobalOptions, setExit: (code: number) => void): void {
  addRequestFlags(program.command("generate").description("submit one job, wait for it, save its outputs"))
    .option("--ref <ref>", "your unique reference for this job (re-running with the same ref resumes it)")
    .option("--cancel-after <seconds>", "not sent within this many seconds of being queued (1 to 2592000), the job is cancelled and nothing is charged")
    .option("--out <dir>", "where to save the outputs: a folder or s3://bucket/prefix (default MEDIAGATE_OUTPUT_DIR)")
    .option("--allow-unpriced", "run even when the job has no price and a budget is set (its charge is counted once known; the budget is then no guarantee)")
    .action(async (flags: RequestFlags & { ref?: string; out?: string; allowUnpriced?: boolean; cancelAfter?: string }) => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const request = requestFromFlags(flags);
        // Everything local is checked before anything is queued or sent.
        const outDir = resolveOutputLocation(flags.out ?? runtime.config.outputDir);
        await checkOutputFolder(outDir, outputFlagOf(options, flags.out));
        const ref = flags.ref === undefined ? newId("gen") : validateRef(flags.ref, "--ref");
        const cancelAfterS = flags.cancelAfter === undefined ? null : readCancelAfterS(/^\d+$/.test(flags.cancelAfter) ? Number(flags.cancelAfter) : flags.cancelAfter, "--cancel-after");
        const prepared = { ...(await prepareFromFlags(runtime, "generate", ref, request)), cancelAfterS };
        const json = Boolean(options.json);
        process.stderr.write(preparedNotes(prepared));
        const { jobIds } = await enqueue(runtime, [prepared], { batchId: null, outDir, allowUnpriced: Boolean(flags.allowUnpriced), budgetId: `generate:${ref}` });
        const store = await runtime.store();
        const job = (await store.getJob(jobIds[0]!))!;
        const own = [...requestArguments(flags), ...(flags.out !== undefined ? ["--out", outDir] : []), "--ref", job.ref, ...(flags.allowUnpriced ? ["--allow-unpriced"] : [])];
        const resumeHint = resumeCommand(runtime, options, ["generate", ...own], { ownOutputFlag: flags.out !== undefined });
        // Printed as soon as the job is stored (even with --json, on stderr): killed at any point after this, the same ref resumes it.
        process.stderr.write(
          `job ${job.id} (ref ${job.ref}) on ${job.provider.toUpperCase()} ${job.model}; estimate ${prepared.estimate.microUsd === null ? "unpriced" : formatMicroUsd(prepared.estimate.microUsd)} (${prepared.estimate.source})\n` +
            (flags.ref === undefined ? `if interrupted, resume it (not pay again) with: ${resumeHint}\n` : ""),
        );
        // Admission's warning (issue 37): expected to finish after its deadline.
        const late = deadlineWarning(job, (await timingsOf(runtime, [job])).get(job.id) ?? NO_TIMING);
        if (late) process.stderr.write(`mediagate: warning: ${late}\n`);
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

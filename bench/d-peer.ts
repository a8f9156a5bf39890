/**
 * Issue 10's peer comparison, side by side on sandbox D (render 2–8 s of
 * virtual time at time scale 4, 512×512 images): a plain loop over the Vercel
 * AI SDK's `generateImage` with `@ai-sdk/black-forest-labs`, limited by hand
 * to 24 at a time, against `mediagate batch` run as a user runs it (the built
 * CLI in its own process, SQLite store, files written). Target: mediagate's
 * makespan ≤ 1.0× the loop's at 200 and at 2,000 images, while durable.
 * Requests per job come from the sandbox's own log, split into submit, poll
 * and download. Then the SDK with no limit at all (200 at once): how many
 * images fail, and how many 429s D sent.
 *
 * Every run gets a fresh sandbox in a child process with the same seed, so
 * the k-th job D accepts renders equally long on both sides. Both clients run
 * on the real clock against a sandbox four times faster, so every duration
 * here is real time (a 2–8 s virtual render takes 0.5–2 s).
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createBlackForestLabs } from "@ai-sdk/black-forest-labs";
import { APICallError, generateImage, RetryError } from "ai";
import { checkBuiltCli, cliEnvironment, dBatchFile, mean, recordResult, runCli, startSandboxChild, tempFolder } from "./harness.js";

const SIZES = (process.env.BENCH_PEER_SIZES ?? "200,2000").split(",").map((size) => Number(size.trim()));
/** Images sent all at once without a limit; 0 skips that run. */
const UNLIMITED_IMAGES = Number(process.env.BENCH_PEER_UNLIMITED ?? 200);
const TIME_SCALE = 4;
const RENDER_TIME_MS = { minMs: 2_000, maxMs: 8_000 };
/** Any fixed seed, the same on every sandbox, so both sides draw the same render times in the same order. */
const SANDBOX_SEED = 10;
/** spec D Limits "Concurrent tasks": 24 per key, the limit a careful SDK user puts on the loop by hand. */
const D_SLOTS = 24;
const IMAGE_SIDE = 512;
const MODEL = "gen-2-pro";
/** The sandbox's D key (src/sandbox/d/options.ts). */
const SANDBOX_D_KEY = "sandbox-d-key";


type ImageModel = Parameters<typeof generateImage>[0]["model"];

interface LoggedRequest {
  at: number;
  realAt: number;
  method: string;
  url: string;
  provider: string | null;
  statusCode?: number;
}

interface SandboxStats {
  requests: LoggedRequest[];
  d: {
    submits: number;
    rejected429: number;
    peakActive: number;
    jobs: Array<{ id: string; createdAt: number; readyAt: number | null }>;
  };
}

/** What one client reports about its own run. */
interface ClientRun {
  /** Wall clock (epoch ms) when the client started, to set against the sandbox's log of real arrival times. */
  startedAt: number;
  wallMs: number;
  /** Images that came back with bytes (SDK) or were saved as files (mediagate). */
  succeeded: number;
  /** Failed images by reason. */
  failures: Map<string, number>;
  /** Bytes of the store the run left behind (mediagate only: the SDK loop keeps nothing). */
  storeBytes: number | null;
}

interface MeasuredRun extends ClientRun {
  sandbox: SandboxStats;
}

interface RequestCounts {
  submit: number;
  poll: number;
  download: number;
}

/** Generous real-time bound on one run, so a stuck client is killed instead of hanging the bench. */
function runDeadlineMs(images: number): number {
  return 60_000 + images * 500;
}

function prompt(index: number): string {
  return `peer image ${index}`;
}

async function onFreshSandbox(run: (sandboxUrl: string) => Promise<ClientRun>): Promise<MeasuredRun> {
  const sandbox = await startSandboxChild({ timeScale: TIME_SCALE, seed: SANDBOX_SEED, d: { renderTimeMs: RENDER_TIME_MS } });
  try {
    const client = await run(sandbox.url);
    return { ...client, sandbox: await sandbox.stats<SandboxStats>() };
  } finally {
    await sandbox.stop();
  }
}

function sdkImageModel(sandboxUrl: string): ImageModel {
  // The provider posts to `${baseURL}/${modelId}` with the key in `x-key` (as D wants), then polls the returned
  // polling_url as given and downloads result.sample itself, without the SDK's private-address check.
  return createBlackForestLabs({ baseURL: `${sandboxUrl}/d/v1`, apiKey: SANDBOX_D_KEY }).image(MODEL);
}

/** One image the way the SDK's documentation shows it; the provider's default polling (every 500 ms, for up to 60 s). */
async function sdkImageBytes(model: ImageModel, index: number, abortSignal: AbortSignal): Promise<number> {
  const { image } = await generateImage({
    model,
    prompt: prompt(index),
    seed: index,
    abortSignal,
    providerOptions: { blackForestLabs: { width: IMAGE_SIDE, height: IMAGE_SIDE } },
  });
  if (image.uint8Array.length === 0) throw new Error("the image came back without bytes");
  return image.uint8Array.length;
}

/** The hand limit: `lanes` loops, each taking the next image once its last one is done. */
async function settleInLanes<T>(count: number, lanes: number, task: (index: number) => Promise<T>): Promise<PromiseSettledResult<T>[]> {
  const results: PromiseSettledResult<T>[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const index = next++;
      results[index] = await task(index).then(
        (value) => ({ status: "fulfilled", value }) as const,
        (reason: unknown) => ({ status: "rejected", reason }) as const,
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, count) }, lane));
  return results;
}

/** The SDK's retry wraps its errors; the reason worth counting is the last attempt's. */
function failureReason(error: unknown): string {
  const last = RetryError.isInstance(error) ? error.lastError : error;
  const attempts = RetryError.isInstance(error) ? ` after ${error.errors.length} attempts` : "";
  if (APICallError.isInstance(last)) return `HTTP ${last.statusCode ?? "without status"}${attempts}`;
  return `${last instanceof Error ? last.message : String(last)}${attempts}`;
}

function countBy(keys: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}

/** `limit` null: every image at once, as a plain `Promise.all` over the list would send them. */
async function runSdkLoop(sandboxUrl: string, images: number, limit: number | null): Promise<ClientRun> {
  const model = sdkImageModel(sandboxUrl);
  const deadline = Date.now() + runDeadlineMs(images);
  // A signal per image: Node's fetch leaves its abort listener on a shared signal until the request is collected,
  // so one signal across thousands of requests floods stderr with MaxListenersExceededWarning.
  const generate = (index: number) => sdkImageBytes(model, index, AbortSignal.timeout(Math.max(1, deadline - Date.now())));
  const startedAt = Date.now();
  const started = performance.now();
  const settled =
    limit === null ? await Promise.allSettled(Array.from({ length: images }, (_, index) => generate(index))) : await settleInLanes(images, limit, generate);
  const wallMs = performance.now() - started;
  const rejected = settled.filter((result): result is PromiseRejectedResult => result.status === "rejected");
  return { startedAt, wallMs, succeeded: settled.length - rejected.length, failures: countBy(rejected.map((result) => failureReason(result.reason))), storeBytes: null };
}

/** `batch --json` prints one line per job; a job counts when it succeeded with a non-empty file. */
function savedJobs(stdout: string): { succeeded: number; failures: Map<string, number> } {
  const jobs = stdout
    .split("\n")
    .filter((line) => line.trim().startsWith("{"))
    .map((line) => JSON.parse(line) as { state: string; outputs: Array<{ bytes: number }>; error: { code?: string } | null });
  const saved = (job: (typeof jobs)[number]) => job.state === "succeeded" && job.outputs.length > 0 && job.outputs.every((output) => output.bytes > 0);
  return { succeeded: jobs.filter(saved).length, failures: countBy(jobs.filter((job) => !saved(job)).map((job) => job.error?.code ?? job.state)) };
}

async function runMediagateBatch(sandboxUrl: string, images: number): Promise<ClientRun> {
  const folder = tempFolder();
  try {
    const file = join(folder.path, "peer.jsonl");
    const outputDir = join(folder.path, "out");
    writeFileSync(file, dBatchFile(images, { refPrefix: "peer-", prompt, side: IMAGE_SIDE }));
    const startedAt = Date.now();
    const started = performance.now();
    const exit = await runCli(["--json", "--store", `sqlite:${join(folder.path, "mediagate.db")}`, "batch", file], {
      cwd: folder.path,
      env: cliEnvironment(sandboxUrl, outputDir),
      deadlineMs: runDeadlineMs(images),
    });
    const wallMs = performance.now() - started;
    const { succeeded, failures } = savedJobs(exit.stdout);
    if (exit.code !== 0) {
      failures.set(`batch exited with ${exit.code ?? exit.signal}`, 1);
      process.stderr.write(`mediagate batch exited with ${exit.code ?? exit.signal}:\n${exit.stderr.slice(-2_000)}\n`);
    }
    // The files themselves, not only what the CLI says it wrote.
    const files = existsSync(outputDir) ? readdirSync(outputDir).filter((name) => name.endsWith(".png")).length : 0;
    if (files !== succeeded) failures.set(`${succeeded} reported saved, ${files} files found`, 1);
    const storeFiles = readdirSync(folder.path).filter((name) => name.startsWith("mediagate.db"));
    const storeBytes = storeFiles.reduce((sum, name) => sum + statSync(join(folder.path, name)).size, 0);
    return { startedAt, wallMs, succeeded: Math.min(succeeded, files), failures, storeBytes };
  } finally {
    folder.remove();
  }
}

function dRequests(stats: SandboxStats): LoggedRequest[] {
  return stats.requests.filter((request) => request.provider === "d");
}

/** D's three kinds of request, told apart by prefix (src/sandbox/d/README.md "Routes"). */
function countRequests(stats: SandboxStats): RequestCounts {
  const counts: RequestCounts = { submit: 0, poll: 0, download: 0 };
  for (const request of dRequests(stats)) {
    if (request.url.startsWith("/d/v1/")) counts.submit++;
    else if (request.url.startsWith("/d-poll/")) counts.poll++;
    else if (request.url.startsWith("/d-results/")) counts.download++;
  }
  return counts;
}

/** Real arrival times of D's first and last request. */
function sandboxWindow(stats: SandboxStats): { first: number; last: number } {
  const times = dRequests(stats).map((request) => request.realAt);
  return { first: Math.min(...times), last: Math.max(...times) };
}

/** From D's first request to its last: the makespan without either client's start-up and exit. */
function sandboxSpanMs(stats: SandboxStats): number {
  const { first, last } = sandboxWindow(stats);
  return last - first;
}

/** What the wall time spends outside D's span: before the first request (start-up), and after the last (exit). */
function overheadText(run: MeasuredRun): string {
  const { first, last } = sandboxWindow(run.sandbox);
  return `${seconds(first - run.startedAt)} / ${seconds(run.startedAt + run.wallMs - last)}`;
}

/**
 * No client can beat 24 slots kept busy without a gap: the summed render
 * time over 24, or the longest single render. Both sides draw the same
 * render times (same seed, same number of accepted jobs), so their bounds agree.
 */
function slotBoundMs(stats: SandboxStats): number {
  const renders = stats.d.jobs.filter((job) => job.readyAt !== null).map((job) => job.readyAt! - job.createdAt);
  const total = renders.reduce((sum, render) => sum + render, 0);
  return Math.max(total / D_SLOTS, ...renders, 0) / TIME_SCALE;
}

/** Real time from D finishing a job to the client's first download of it: what the client's polling costs. */
function readyToDownloadMs(stats: SandboxStats): number {
  const readyAt = new Map(stats.d.jobs.map((job) => [job.id, job.readyAt]));
  const lags = new Map<string, number>();
  for (const request of dRequests(stats)) {
    const id = request.url.match(/^\/d-results\/([^/?]+)\.png/)?.[1];
    const ready = id ? readyAt.get(decodeURIComponent(id)) : undefined;
    if (id && ready != null && !lags.has(id)) lags.set(id, (request.at - ready) / TIME_SCALE);
  }
  return mean([...lags.values()]);
}

function packageVersion(name: string): string {
  const manifest = fileURLToPath(new URL(`../node_modules/${name}/package.json`, import.meta.url));
  return (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function perJob(count: number, images: number): string {
  return (count / images).toFixed(2);
}

function failureText(run: ClientRun): string {
  return run.failures.size ? [...run.failures].map(([reason, count]) => `${count} × ${reason}`).join("; ") : "none";
}

function sizeSection(images: number, sdk: MeasuredRun, mediagate: MeasuredRun): string {
  const sdkRequests = countRequests(sdk.sandbox);
  const ourRequests = countRequests(mediagate.sandbox);
  const row = (measure: string, sdkValue: string, ourValue: string, target = "") => `| ${measure} | ${sdkValue} | ${ourValue} | ${target} |`;
  const requestRow = (kind: keyof RequestCounts, label: string) => row(`${label} per job`, perJob(sdkRequests[kind], images), perJob(ourRequests[kind], images));
  return [
    `### ${images.toLocaleString("en-US")} images`,
    ``,
    `| measure | AI SDK loop, 24 by hand | mediagate batch | target |`,
    `|---|---|---|---|`,
    row("images saved with bytes", `${sdk.succeeded} / ${images}`, `${mediagate.succeeded} / ${images}`, "all"),
    row("failures", failureText(sdk), failureText(mediagate), "none"),
    row("makespan, wall (SDK: loop; mediagate: spawn → exit)", seconds(sdk.wallMs), seconds(mediagate.wallMs)),
    row("makespan, D's first request → last", seconds(sandboxSpanMs(sdk.sandbox)), seconds(sandboxSpanMs(mediagate.sandbox))),
    row("start → D's first request / D's last request → end", overheadText(sdk), overheadText(mediagate)),
    row("mediagate ÷ SDK, wall / D's span", "", `${(mediagate.wallMs / sdk.wallMs).toFixed(3)} / ${(sandboxSpanMs(mediagate.sandbox) / sandboxSpanMs(sdk.sandbox)).toFixed(3)}`, "≤ 1.0"),
    row("slot bound (24 slots never idle)", seconds(slotBoundMs(sdk.sandbox)), seconds(slotBoundMs(mediagate.sandbox))),
    row("mean D ready → client's download", `${readyToDownloadMs(sdk.sandbox).toFixed(0)} ms`, `${readyToDownloadMs(mediagate.sandbox).toFixed(0)} ms`),
    requestRow("submit", "submits"),
    requestRow("poll", "polls"),
    requestRow("download", "downloads"),
    row("all D requests per job", perJob(dRequests(sdk.sandbox).length, images), perJob(dRequests(mediagate.sandbox).length, images)),
    row("429s D sent", String(sdk.sandbox.d.rejected429), String(mediagate.sandbox.d.rejected429), "0"),
    row("peak tasks active at D", String(sdk.sandbox.d.peakActive), String(mediagate.sandbox.d.peakActive), "≤ 24"),
    row("durable (survives a crash, resumes)", "no: state in memory", `yes: SQLite, ${(mediagate.storeBytes! / 1024).toFixed(0)} KiB`),
  ].join("\n");
}

function unlimitedSection(run: MeasuredRun, images: number): string {
  const requests = countRequests(run.sandbox);
  return [
    `### AI SDK without a limit: ${images} images at once`,
    ``,
    `| measure | value |`,
    `|---|---|`,
    `| images saved with bytes | ${run.succeeded} / ${images} |`,
    `| failed | ${images - run.succeeded}: ${failureText(run)} |`,
    `| 429s D sent | ${run.sandbox.d.rejected429} |`,
    `| submits / polls / downloads per image | ${perJob(requests.submit, images)} / ${perJob(requests.poll, images)} / ${perJob(requests.download, images)} |`,
    `| wall time | ${seconds(run.wallMs)} |`,
  ].join("\n");
}

export async function runDPeer(): Promise<void> {
  checkBuiltCli();
  const sections: string[] = [];
  let missedTarget = false;
  for (const images of SIZES) {
    process.stderr.write(`d-peer: ${images} images, AI SDK loop limited to ${D_SLOTS}…\n`);
    const sdk = await onFreshSandbox((url) => runSdkLoop(url, images, D_SLOTS));
    process.stderr.write(`d-peer: ${images} images, mediagate batch…\n`);
    const mediagate = await onFreshSandbox((url) => runMediagateBatch(url, images));
    sections.push(sizeSection(images, sdk, mediagate));
    process.stdout.write(`${sections.at(-1)}\n\n`);
    if (mediagate.succeeded !== images || sdk.succeeded !== images || mediagate.wallMs > sdk.wallMs) missedTarget = true;
  }
  if (UNLIMITED_IMAGES > 0) {
    process.stderr.write(`d-peer: ${UNLIMITED_IMAGES} images, AI SDK without a limit…\n`);
    const unlimited = await onFreshSandbox((url) => runSdkLoop(url, UNLIMITED_IMAGES, null));
    sections.push(unlimitedSection(unlimited, UNLIMITED_IMAGES));
    process.stdout.write(`${sections.at(-1)}\n`);
  }
  const markdown = [
    `## D beside the AI SDK: a hand-limited generateImage loop against mediagate batch (issue 10)`,
    ``,
    `Run ${new Date().toISOString()} on ${process.version}; ai ${packageVersion("ai")}, @ai-sdk/black-forest-labs ${packageVersion("@ai-sdk/black-forest-labs")}.`,
    `Sandbox D in a child process over loopback, fresh for every run with seed ${SANDBOX_SEED}, time scale ${TIME_SCALE},`,
    `render ${RENDER_TIME_MS.minMs / 1000}–${RENDER_TIME_MS.maxMs / 1000} s virtual, ${IMAGE_SIDE}×${IMAGE_SIDE} on ${MODEL}. Both clients run on the real clock,`,
    `so durations are real time (virtual ÷ ${TIME_SCALE}). The SDK loop runs in the bench process with the provider's default`,
    `polling (every 500 ms, give up after 60 s) and retries (2, from 2 s); mediagate is \`node dist/cli/main.js --json --store sqlite:… batch FILE\`.`,
    ``,
    ...sections.flatMap((section) => [section, ``]),
  ].join("\n");
  recordResult("d-peer", markdown);
  if (missedTarget) process.exitCode = 1;
}

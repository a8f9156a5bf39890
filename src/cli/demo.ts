import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { formatMicroUsd } from "../core/money.js";
import { maskStoreAddress } from "../core/store-address.js";
import type { JobRequest } from "../providers/adapter.js";
import { routedRequestFrom, type RoutedRequest } from "../engine/route.js";
import { EXIT } from "./exit-codes.js";
import { enqueue } from "../app/enqueue.js";
import { prepareJob, type PreparedJob } from "../app/prepare.js";
import { routeText } from "./prepared-notes.js";
import { batchListCommand } from "./resume-command.js";
import { runJobs, summaryText } from "./run-jobs.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";

/**
 * The sandbox runs this many times faster than real time, and the demo's
 * engine runs on the sandbox's clock: E's four requests a minute and C's
 * 3–5 s polling pace are kept, in virtual time, and the demo takes seconds.
 */
const DEMO_TIME_SCALE = 10;

/** A common request of the demo (its images, none here, would be read as files). */
function routed(wire: Record<string, unknown>): RoutedRequest {
  return routedRequestFrom(wire, (text) => text);
}

/**
 * The demo's jobs: several D endpoints, sizes and a reference image, one job
 * on each other provider, and two common requests routed over several (an
 * image that E cannot size, so D takes it with its size rounded; a video
 * sent to the cheapest target that can make it).
 */
function demoRequests(referencePath: string): Array<{ name: string; request: JobRequest | RoutedRequest }> {
  const reference = { fileName: "reference.png", bytes: readFileSync(referencePath) };
  const d = (model: string, input: Record<string, unknown>, images?: JobRequest["images"]): JobRequest => ({
    provider: "d",
    model,
    input,
    ...(images ? { images } : {}),
  });
  return [
    { name: "lighthouse", request: d("gen-2-pro", { prompt: "a lighthouse at dawn, oil painting", width: 1024, height: 768, seed: 1 }) },
    { name: "fox", request: d("gen-2-max", { prompt: "a red fox in fresh snow", width: 1024, height: 1024, seed: 2 }) },
    { name: "poster", request: d("gen-2-flex", { prompt: "a travel poster of Lisbon", width: 768, height: 1152, seed: 3 }) },
    { name: "icon", request: d("gen-2-compact-4b", { prompt: "a flat app icon of a paper plane", width: 512, height: 512, seed: 4 }) },
    { name: "sketch", request: d("gen-2-compact-9b", { prompt: "a pencil sketch of a bicycle", width: 640, height: 448, seed: 5 }) },
    { name: "edit", request: d("gen-2-pro", { prompt: "the same scene at night", width: 1024, height: 768, seed: 6 }, [reference]) },
    { name: "a-video", request: { provider: "a", model: "vidgen-2-0-250601", input: { prompt: "waves on a pebble beach", duration: 5, resolution: "480p", ratio: "16:9" } } },
    {
      name: "b-clip",
      request: { provider: "b", model: "vendorx/video-2.5", operation: "text-to-video", input: { prompt: "a paper boat drifting on a pond", resolution: "720p", duration_s: 5 } },
    },
    { name: "c-video", request: { provider: "c", model: "v6", input: { prompt: "a hot air balloon over fields", aspect_ratio: "16:9", duration: 5 } } },
    { name: "e-image", request: { provider: "e", model: "v3", input: { prompt: "a watercolour of a harbour" } } },
    { name: "f-image", request: { provider: "f", model: "img-v2", input: { text_prompt: "a stained glass owl", resolution: "1024x1024" } } },
    { name: "routed-image", request: routed({ task: "image", prompt: "a lantern on a snowy path", size: "1000x750", seed: 8, route: ["e/v3", "d/gen-2-pro"] }) },
    {
      name: "routed-video",
      request: routed({ task: "video", prompt: "a kite over dunes", duration_s: 5, resolution: "720p", route: ["c/v6", "b/vendorx/video-2.5/text-to-video"], route_by: "price" }),
    },
  ];
}

export function registerDemo(program: Command, globals: () => GlobalOptions, setExit: (code: number) => void): void {
  program
    .command("demo")
    .description("run a small batch on the built-in sandbox (no keys): SQLite store, real HTTP, real PNGs")
    .action(async () => {
      const options = globals();
      const json = Boolean(options.json);
      const { renderPng } = await import("../sandbox/media/png.js");
      const { startSandbox } = await import("../sandbox/index.js");
      // Render times in virtual time (÷ DEMO_TIME_SCALE for real seconds).
      const renderMs = { minMs: 15_000, maxMs: 30_000 };
      const sandbox = await startSandbox({
        timeScale: DEMO_TIME_SCALE,
        queueMs: 2_000,
        renderMs: { a: renderMs, b: renderMs, c: renderMs, d: { minMs: 15_000, maxMs: 35_000 }, e: renderMs, f: renderMs },
      });
      // The demo points every provider at the sandbox explicitly; real runs never fall back to it.
      const runtime = runtimeOf(options, { ...sandbox.environment }, { clock: sandbox.clock });
      try {
        if (!json) {
          process.stderr.write(`mediagate demo: built-in sandbox on ${sandbox.url}, store ${maskStoreAddress(runtime.config.store)}, outputs in ${runtime.config.outputDir}\n`);
        }
        const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
        const outDir = join(resolve(runtime.config.outputDir), `demo-${stamp}`);
        mkdirSync(outDir, { recursive: true });
        const referencePath = join(outDir, "reference-input.png");
        writeFileSync(referencePath, renderPng(512, 512, "demo reference", 42));
        const prepared: PreparedJob[] = [];
        for (const { name, request } of demoRequests(referencePath)) {
          const job = await prepareJob(runtime, name, `demo-${stamp}-${name}`, request);
          if (job.route && !json) process.stderr.write(routeText(job.route, name));
          prepared.push(job);
        }
        const batchId = `demo-${stamp}`;
        const queued = await enqueue(runtime, prepared, { batchId, outDir, budgetId: batchId });
        if (!json) process.stderr.write(`${queued.jobIds.length} jobs queued; estimate ${formatMicroUsd(queued.budget.totalMicroUsd)}\n`);
        const result = await runJobs(runtime, queued.jobIds, {
          json,
          // The demo's sandbox lives in this process: an interrupted demo cannot be resumed, only run again.
          resumeHint: "mediagate demo (a new demo: this one's sandbox stopped with it)",
          progress: "overall",
          scope: { batchId },
        });
        const store = await runtime.store();
        let verified = 0;
        const jobs = await store.listJobs({ ids: queued.jobIds });
        for (const job of jobs) {
          for (const output of await store.outputs(job.id)) {
            const actual = createHash("sha256").update(readFileSync(output.path)).digest("hex");
            if (actual === output.sha256) verified++;
            if (!json) process.stdout.write(`${job.ref}: ${output.path} (${output.bytes} bytes, sha256 ${output.sha256.slice(0, 16)}…${actual === output.sha256 ? ", verified" : ", MISMATCH"})\n`);
          }
        }
        if (!json) {
          process.stderr.write(`${summaryText(result.report, await store.halts(), outDir, batchListCommand(options, batchId, queued.jobIds.length))}\n`);
          process.stderr.write(`${verified} file(s) verified against their sha256. Try: mediagate jobs, mediagate show ${result.report.firstRef ?? "ID"}\n`);
        }
        setExit(result.exitCode === EXIT.ok && verified === prepared.length ? EXIT.ok : result.exitCode || EXIT.jobsFailed);
      } finally {
        await runtime.close();
        await sandbox.stop();
      }
    });
}

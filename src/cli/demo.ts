import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { formatMicroUsd } from "../core/money.js";
import type { JobRequest } from "../providers/adapter.js";
import { createAllEmulators, sandboxEnvironment } from "../sandbox/all.js";
import { renderPng } from "../sandbox/media/png.js";
import { startSandbox } from "../sandbox/server.js";
import { EXIT } from "./exit-codes.js";
import { enqueue, prepareJob, type PreparedJob } from "./prepare.js";
import { runJobs, summaryText } from "./run-jobs.js";
import { createRuntime, type GlobalOptions } from "./runtime.js";

/** The demo's jobs: several D endpoints, sizes and a reference image. */
function demoRequests(referencePath: string): Array<{ name: string; request: JobRequest }> {
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
  ];
}

export function registerDemo(program: Command, globals: () => GlobalOptions, setExit: (code: number) => void): void {
  program
    .command("demo")
    .description("run a small batch on the built-in sandbox (no keys): SQLite store, real HTTP, real PNGs")
    .action(async () => {
      const options = globals();
      const json = Boolean(options.json);
      const emulators = createAllEmulators();
      emulators.d.configure({ renderTimeMs: { minMs: 1_500, maxMs: 3_500 } });
      const sandbox = await startSandbox({ emulators: emulators.list });
      // The demo points D at the sandbox explicitly; real runs never fall back to it.
      const environment = sandboxEnvironment(sandbox.url, ["d"]);
      const runtime = createRuntime(options, environment);
      try {
        if (!json) {
          process.stderr.write(`mediagate demo: built-in sandbox on ${sandbox.url}, store ${runtime.config.store}, outputs in ${runtime.config.outputDir}\n`);
        }
        const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
        const outDir = join(resolve(runtime.config.outputDir), `demo-${stamp}`);
        mkdirSync(outDir, { recursive: true });
        const referencePath = join(outDir, "reference-input.png");
        writeFileSync(referencePath, renderPng(512, 512, "demo reference", 42));
        const prepared: PreparedJob[] = [];
        for (const { name, request } of demoRequests(referencePath)) {
          prepared.push(await prepareJob(runtime, name, `demo-${stamp}-${name}`, request));
        }
        const queued = await enqueue(runtime, prepared, { batchId: `demo-${stamp}`, outDir });
        if (!json) process.stderr.write(`${queued.jobs.length} jobs queued; estimate ${formatMicroUsd(queued.budget.totalMicroUsd)}\n`);
        const result = await runJobs(runtime, queued.jobs.map((job) => job.id), { json, resumeHint: "mediagate demo", progress: "overall" });
        const store = await runtime.store();
        let verified = 0;
        for (const job of result.outcome.jobs) {
          for (const output of await store.outputs(job.id)) {
            const actual = createHash("sha256").update(readFileSync(output.path)).digest("hex");
            if (actual === output.sha256) verified++;
            if (!json) process.stdout.write(`${job.ref}: ${output.path} (${output.bytes} bytes, sha256 ${output.sha256.slice(0, 16)}…${actual === output.sha256 ? ", verified" : ", MISMATCH"})\n`);
          }
        }
        if (!json) {
          process.stderr.write(`${summaryText(result.outcome, await store.halts())}\n`);
          process.stderr.write(`${verified} file(s) verified against their sha256. Try: mediagate jobs, mediagate show ${result.outcome.jobs[0]?.ref ?? "ID"}\n`);
        }
        setExit(result.exitCode === EXIT.ok && verified === prepared.length ? EXIT.ok : result.exitCode || EXIT.jobsFailed);
      } finally {
        await runtime.close();
        await sandbox.close();
      }
    });
}

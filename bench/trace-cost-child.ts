/**
 * One measured run of `trace-cost` (see trace-cost.ts), in a process of its
 * own so that what it loads is its own: the library opened from the
 * environment it was given (with or without OTEL_EXPORTER_OTLP_ENDPOINT), a
 * fresh SQLite store, BENCH_JOBS D jobs submitted and waited for against the
 * sandbox, then closed. Prints one JSON line: CPU and wall time from the first
 * submit to the close, and every @opentelemetry module the process loaded.
 */
import { createRequire } from "node:module";
import { Mediagate } from "../src/index.js";

const jobs = Number(process.env.BENCH_JOBS ?? 200);
const gate = await Mediagate.open({ env: process.env });
const cpuBefore = process.cpuUsage();
const started = performance.now();
const submitted = [];
for (let index = 0; index < jobs; index++) {
  submitted.push(await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: `trace cost ${index}`, width: 256, height: 256, seed: index } }, { ref: `trace-cost-${index}` }));
}
// One wait at a time (each listens to the engine); the jobs run together meanwhile.
const done = [];
for (const job of submitted) done.push(await gate.wait(job.id));
await gate.close();
const cpu = process.cpuUsage(cpuBefore);
// The OpenTelemetry packages are CommonJS: whatever of them was loaded, by import or require, is in this cache.
const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes("/node_modules/@opentelemetry/"));
process.stdout.write(
  `${JSON.stringify({
    cpuMs: (cpu.user + cpu.system) / 1000,
    wallMs: performance.now() - started,
    succeeded: done.filter((job) => job.state === "succeeded").length,
    packages: [...new Set(loaded.map((path) => /\/node_modules\/(@opentelemetry\/[^/]+)\//.exec(path)?.[1] ?? path))].sort(),
    modules: loaded.length,
  })}\n`,
);

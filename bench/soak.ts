/**
 * Issue 9's soak: a bounded mixed run against all six sandboxes with faults
 * on (5xx, slow answers, dropped connections on reads), for SOAK_MINUTES of
 * real time (default 10), while jobs keep arriving. Samples the engine
 * process's RSS, heap and open handles every SOAK_SAMPLE_S seconds; a leak
 * shows as growth from the first minute's samples to the last ones.
 * Not part of `npm test`; run with `npm run bench -- soak`.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { ScaledClock } from "../src/core/clock.js";
import { loadConfig } from "../src/core/config.js";
import { isTerminal, type Job } from "../src/core/job.js";
import { Engine } from "../src/engine/engine.js";
import type { ProviderId } from "../src/providers/adapter.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import { sandboxEnvironment } from "../src/sandbox/all.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import { requestFor } from "../test/helpers/six-providers.js";
import { recordResult, startSandboxChild, tempFolder } from "./harness.js";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 30);
const SCALE = 10;
/** After the feeding stops, jobs still open get this long (real) to finish before the run ends anyway. */
const DRAIN_MS = 120_000;

/** Jobs kept open per provider at once: each provider's own limits decide the pace, the soak only keeps them busy. */
const OPEN_PER_PROVIDER: Record<ProviderId, number> = { a: 6, b: 4, c: 3, d: 20, e: 2, f: 6 };

interface Sample {
  atS: number;
  rssMb: number;
  heapMb: number;
  handles: number;
  open: number;
  finished: number;
}

export async function runSoak(): Promise<void> {
  const folder = tempFolder();
  const renders = { min: 15_000, max: 40_000 };
  const sandbox = await startSandboxChild({
    timeScale: SCALE,
    seed: 9,
    a: { renderMs: renders },
    b: { renderTimeMs: { minMs: renders.min, maxMs: renders.max } },
    c: { renderMs: renders },
    d: { renderTimeMs: { minMs: 3_000, maxMs: 12_000 } },
    e: { renderMs: renders },
    f: { renderMs: renders },
    faults: [
      { method: "GET", fault: { kind: "status", status: 503 }, probability: 0.03 },
      { method: "GET", fault: { kind: "drop" }, probability: 0.01 },
      { fault: { kind: "delay", ms: 1_500 }, probability: 0.02 },
      { method: "POST", fault: { kind: "status", status: 502 }, probability: 0.02 },
    ],
  });
  const store = await openSqliteStore(`${folder.path}/soak.db`);
  const clock = new ScaledClock(SCALE, await sandbox.now());
  const env = { ...sandboxEnvironment(sandbox.url, ["a", "b", "c", "d", "e", "f"]), MEDIAGATE_OUTPUT_DIR: `${folder.path}/out` };
  const config = loadConfig({ env, cwd: folder.path });
  const providers = createProviderRegistry(config);
  const engine = new Engine({ store, providers, clock, secrets: () => Object.entries(env).filter(([name]) => /KEY|SECRET/.test(name)).map(([, value]) => value) });
  const open = new Map<ProviderId, Set<string>>(Object.keys(OPEN_PER_PROVIDER).map((id) => [id as ProviderId, new Set<string>()]));
  const finished: Job[] = [];
  engine.on("job", (job) => {
    if (isTerminal(job.state) && open.get(job.provider)?.delete(job.id)) finished.push(job);
  });
  let counter = 0;
  const feed = async () => {
    for (const [provider, ids] of open) {
      const entry = providers.get(provider)!;
      const adapter = entry.adapter!;
      while (ids.size < OPEN_PER_PROVIDER[provider]) {
        const index = counter++;
        const jobRequest = requestFor(provider, `soak-${index}`, index);
        if (adapter.prefetch) await adapter.prefetch(jobRequest, await engine.providerContext(provider));
        const validated = adapter.validate(jobRequest);
        const estimate = await adapter.estimate(validated, await engine.providerContext(provider));
        const id = `job_soak_${String(index).padStart(6, "0")}`;
        await store.insertJobs(
          [{ id, ref: `soak-${index}`, batchId: "soak", provider, model: validated.model, operation: validated.operation, body: validated.body, facts: validated.facts, warnings: validated.warnings, estimateMicroUsd: estimate.microUsd, estimateSource: estimate.source, outDir: config.outputDir }],
          clock.now(),
        );
        ids.add(id);
      }
    }
    engine.wake();
  };

  const samples: Sample[] = [];
  const startedAt = Date.now();
  const sample = () => {
    const memory = process.memoryUsage();
    samples.push({
      atS: Math.round((Date.now() - startedAt) / 1_000),
      rssMb: Math.round(memory.rss / 1_048_576),
      heapMb: Math.round(memory.heapUsed / 1_048_576),
      handles: process.getActiveResourcesInfo().length,
      open: [...open.values()].reduce((sum, ids) => sum + ids.size, 0),
      finished: finished.length,
    });
  };
  engine.start();
  const endAt = startedAt + MINUTES * 60_000;
  let nextSampleAt = startedAt;
  while (Date.now() < endAt) {
    await feed();
    if (Date.now() >= nextSampleAt) {
      sample();
      nextSampleAt += SAMPLE_S * 1_000;
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  const drainUntil = Date.now() + DRAIN_MS;
  while ([...open.values()].some((ids) => ids.size > 0) && Date.now() < drainUntil) await new Promise((resolve) => setTimeout(resolve, 1_000));
  sample();
  await engine.stop();

  // Invariants after the run: every saved file is its recorded bytes; nothing left half-written; no charge twice.
  const all = await store.listJobs({ batchId: "soak" });
  let verified = 0;
  let mismatched = 0;
  for (const job of all.filter((item) => item.state === "succeeded")) {
    for (const output of await store.outputs(job.id)) {
      if (createHash("sha256").update(readFileSync(output.path)).digest("hex") === output.sha256) verified++;
      else mismatched++;
    }
  }
  const byState = new Map<string, number>();
  for (const job of all) byState.set(job.state, (byState.get(job.state) ?? 0) + 1);
  const unknown = all.filter((job) => job.state === "unknown_submission" || job.state === "failed").map((job) => `${job.provider.toUpperCase()} ${job.state}: ${job.error?.message ?? job.reason ?? ""}`);
  const stats = await sandbox.stats<{ requests: Array<{ provider: string | null; statusCode: number }> }>();
  const status429 = stats.requests.filter((item) => item.statusCode === 429).length;
  await store.close();
  await sandbox.stop();
  folder.remove();

  const settled = samples.filter((item) => item.atS >= 60);
  const firstMinute = samples.filter((item) => item.atS <= 60);
  const baseline = (values: number[]) => Math.max(...values);
  const rssStart = baseline(firstMinute.map((item) => item.rssMb));
  const rssEnd = settled.length ? settled.at(-1)!.rssMb : rssStart;
  const handlesStart = baseline(firstMinute.map((item) => item.handles));
  const handlesMax = Math.max(...samples.map((item) => item.handles));
  const lines = [
    `## soak (issue 9): all six providers with faults on, ${MINUTES} min of real time (virtual ×${SCALE})`,
    "",
    `Faults: 3% of reads answered 503, 1% of reads dropped, 2% of requests delayed 1.5 s, 2% of submits answered 502. Jobs kept open: ${Object.entries(OPEN_PER_PROVIDER).map(([provider, count]) => `${provider.toUpperCase()} ${count}`).join(", ")}.`,
    "",
    `- jobs: ${all.length} (${[...byState].map(([state, count]) => `${count} ${state}`).join(", ")}); 429s from the providers: ${status429}`,
    ...unknown.slice(0, 5).map((text) => `  - ${text.slice(0, 300)}`),
    `- saved files verified against their sha256: ${verified} (mismatched: ${mismatched})`,
    `- RSS: ${rssStart} MB at most in the first minute, ${rssEnd} MB at the end, ${Math.max(...samples.map((item) => item.rssMb))} MB peak`,
    `- open handles: ${handlesStart} at most in the first minute, ${samples.at(-1)!.handles} at the end, ${handlesMax} peak`,
    "",
    "| t (s) | RSS MB | heap MB | handles | open jobs | finished |",
    "|---|---|---|---|---|---|",
    ...samples.map((item) => `| ${item.atS} | ${item.rssMb} | ${item.heapMb} | ${item.handles} | ${item.open} | ${item.finished} |`),
  ];
  recordResult("soak", lines.join("\n"));
  process.stderr.write(`${lines.slice(0, 9 + Math.min(5, unknown.length)).join("\n")}\n`);
}

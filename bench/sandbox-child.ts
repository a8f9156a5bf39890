/**
 * The sandbox in its own process for benchmarks, so the engine's CPU time is
 * measured alone. Talks to the parent over the IPC channel:
 *   parent → {type: "stats"}      child → {type: "stats", stats}
 *   parent → {type: "now"}        child → {type: "now", now} (virtual time)
 *   parent → {type: "stop"}       child exits
 * Options come as one JSON argument: {timeScale, seed?, d?, c?, a?, e?, b?, f?,
 * faults?} with each emulator's options (only the emulators named are
 * started) and fault rules whose `path` is a regular expression's source.
 */
import { createAEmulator } from "../src/sandbox/a/index.js";
import { createBEmulator } from "../src/sandbox/b/index.js";
import { createFEmulator } from "../src/sandbox/f/index.js";
import type { FaultRule } from "../src/sandbox/faults.js";
import { createCEmulator } from "../src/sandbox/c/index.js";
import type { ProviderEmulator } from "../src/sandbox/context.js";
import { createDEmulator } from "../src/sandbox/d/index.js";
import { createEEmulator } from "../src/sandbox/e/index.js";
import { startSandbox } from "../src/sandbox/server.js";

interface ChildOptions {
  timeScale?: number;
  d?: Parameters<typeof createDEmulator>[0];
  c?: Parameters<typeof createCEmulator>[0];
  a?: Parameters<typeof createAEmulator>[0];
  e?: Parameters<typeof createEEmulator>[0];
  b?: Parameters<typeof createBEmulator>[0];
  f?: Parameters<typeof createFEmulator>[0];
  seed?: number;
  faults?: Array<Omit<FaultRule, "path"> & { path?: string }>;
}

const options = JSON.parse(process.argv[2] ?? "{}") as ChildOptions;
const d = options.d ? createDEmulator(options.d) : null;
const c = options.c ? createCEmulator(options.c) : null;
const a = options.a ? createAEmulator(options.a) : null;
const e = options.e ? createEEmulator(options.e) : null;
// B and F accept loopback webhook addresses here, as in `mediagate sandbox`.
const b = options.b ? createBEmulator({ allowLocalWebhookUrls: true, ...options.b }) : null;
const f = options.f ? createFEmulator({ allowLoopbackWebhooks: true, ...options.f }) : null;
const emulators = [d, c, a, e, b, f].filter((emulator): emulator is NonNullable<typeof emulator> => emulator !== null) as ProviderEmulator[];
const sandbox = await startSandbox({ emulators, timeScale: options.timeScale ?? 1, ...(options.seed !== undefined ? { seed: options.seed } : {}) });
for (const { path, ...rule } of options.faults ?? []) {
  sandbox.context.faults.add({ ...rule, ...(path !== undefined ? { path: new RegExp(path) } : {}) });
}

function stats() {
  const requests = sandbox.context.requests.all().map(({ at, realAt, method, url, provider, statusCode }) => ({ at, realAt, method, url, provider, statusCode }));
  const cpu = process.cpuUsage();
  return {
    requests,
    cpuMs: (cpu.user + cpu.system) / 1000,
    ...(d
      ? {
          d: {
            submits: d.submitCount,
            rejected429: d.rejected429Count,
            peakActive: d.peakActive,
            jobs: d.jobs.map((job) => ({ id: job.id, createdAt: job.createdAt, readyAt: job.readyAt })),
          },
        }
      : {}),
    ...(c ? { c: { stats: c.stats(), tasks: c.tasks().map(({ videoId, createdAt, finishedAt, status }) => ({ videoId, createdAt, finishedAt, status })) } } : {}),
    ...(a ? { a: { rateLimits: a.rateLimits(), tasks: a.tasks().map(({ id, createdAt, finishedAt, status }) => ({ id, createdAt, finishedAt, status })) } } : {}),
    ...(e
      ? {
          e: { jobs: e.jobs().map(({ jobId, submittedAt, completedAt, status, polls }) => ({ jobId, submittedAt, completedAt, status, polls: polls.length })) },
          eRequests: e.requests().map(({ at, counted, kind }) => ({ at, counted, kind })),
          eQuota: { rejected: e.quota().rejected },
        }
      : {}),
  };
}

process.on("message", (message: { type: string }) => {
  if (message.type === "stats") process.send?.({ type: "stats", stats: stats() });
  if (message.type === "now") process.send?.({ type: "now", now: sandbox.context.clock.now() });
  if (message.type === "stop") void sandbox.close().then(() => process.exit(0));
});
process.send?.({ type: "ready", url: sandbox.url });

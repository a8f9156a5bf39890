/**
 * The sandbox in its own process for benchmarks, so the engine's CPU time is
 * measured alone. Talks to the parent over the IPC channel:
 *   parent → {type: "stats"}      child → {type: "stats", stats}
 *   parent → {type: "now"}        child → {type: "now", now} (virtual time)
 *   parent → {type: "posts", provider, since}
 *                                 child → {type: "posts", posts} (real arrival times of that
 *                                 provider's POSTs since virtual time `since`)
 *   parent → {type: "stop"}       child exits
 * Options come as one JSON argument: {timeScale, seed?, d?, c?, a?, e?, b?, f?,
 * faults?} with each emulator's options (only the emulators named are
 * started) and fault rules whose `path` is a regular expression's source.
 */
import { startSandbox, type AllEmulatorOptions, type FaultRule, type SandboxProviderId } from "../src/sandbox/index.js";

interface ChildOptions extends AllEmulatorOptions {
  timeScale?: number;
  seed?: number;
  faults?: Array<Omit<FaultRule, "path"> & { path?: string }>;
}

const { timeScale, seed, faults, ...emulators } = JSON.parse(process.argv[2] ?? "{}") as ChildOptions;
// B and F accept loopback webhook addresses, the sandbox's default (as in `mediagate sandbox`).
const sandbox = await startSandbox({
  providers: Object.keys(emulators) as SandboxProviderId[],
  emulators,
  timeScale: timeScale ?? 1,
  ...(seed !== undefined ? { seed } : {}),
});
for (const { path, ...rule } of faults ?? []) {
  sandbox.injectFault({ ...rule, ...(path !== undefined ? { path: new RegExp(path) } : {}) });
}
const { a, c, d, e } = sandbox.emulators;

function stats() {
  const requests = sandbox.requests().map(({ at, realAt, method, url, provider, statusCode }) => ({ at, realAt, method, url, provider, statusCode }));
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

process.on("message", (message: { type: string; provider?: string; since?: number }) => {
  if (message.type === "posts") {
    const posts = sandbox.requests({ provider: message.provider, since: message.since }).filter((request) => request.method === "POST");
    process.send?.({ type: "posts", posts: posts.map((request) => request.realAt) });
  }
  if (message.type === "stats") process.send?.({ type: "stats", stats: stats() });
  if (message.type === "now") process.send?.({ type: "now", now: sandbox.clock.now() });
  if (message.type === "stop") void sandbox.stop().then(() => process.exit(0));
});
process.send?.({ type: "ready", url: sandbox.url });

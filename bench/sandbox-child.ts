/**
 * The sandbox in its own process for benchmarks, so the engine's CPU time is
 * measured alone. Talks to the parent over the IPC channel:
 *   parent → {type: "stats"}      child → {type: "stats", stats}
 *   parent → {type: "stop"}       child exits
 * Options come as one JSON argument: {timeScale, d: DEmulatorOptions}.
 */
import { createDEmulator } from "../src/sandbox/d/index.js";
import { startSandbox } from "../src/sandbox/server.js";

const options = JSON.parse(process.argv[2] ?? "{}") as { timeScale?: number; d?: Parameters<typeof createDEmulator>[0] };
const d = createDEmulator(options.d);
const sandbox = await startSandbox({ emulators: [d], timeScale: options.timeScale ?? 1 });

process.on("message", (message: { type: string }) => {
  if (message.type === "stats") {
    const requests = sandbox.context.requests.all();
    process.send?.({
      type: "stats",
      stats: {
        submits: d.submitCount,
        rejected429: d.rejected429Count,
        peakActive: d.peakActive,
        requests: requests.filter((request) => request.provider === "d").length,
        jobs: d.jobs.map((job) => ({ id: job.id, createdAt: job.createdAt, readyAt: job.readyAt })),
      },
    });
  }
  if (message.type === "stop") void sandbox.close().then(() => process.exit(0));
});
process.send?.({ type: "ready", url: sandbox.url });

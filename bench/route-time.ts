/**
 * Issue 37's routing benchmark: `route_by: "time"` against `"price"` with
 * D saturated and F idle. D's 24 slots hold a backlog of D jobs (renders of
 * 4 s); the same common image request, routed over ["d/gen-2-pro",
 * "f/img-v2"], is submitted twice: by price it goes to D (priced, F is
 * unpriced) and waits behind the backlog; by time it goes to F, whose
 * expected finish is the earliest. Both times, from submit to saved, are
 * recorded. The paces of both models are learned first from one job each.
 */
import { Mediagate } from "../src/app/mediagate.js";
import type { Job } from "../src/core/job.js";
import { recordResult, startSandboxChild, tempFolder } from "./harness.js";

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 240);
const RENDER_MS = 4_000;

export async function runRouteTime(): Promise<void> {
  const folder = tempFolder();
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: RENDER_MS }, f: { renderMs: { min: RENDER_MS, max: RENDER_MS } } });
  const gate = await Mediagate.open({
    env: {
      MEDIAGATE_STORE: `sqlite:${folder.path}/bench.db`,
      MEDIAGATE_OUTPUT_DIR: `${folder.path}/out`,
      MEDIAGATE_D_BASE_URL: `${sandbox.url}/d`,
      MEDIAGATE_D_API_KEY: "sandbox-d-key",
      MEDIAGATE_F_BASE_URL: `${sandbox.url}/f`,
      MEDIAGATE_F_API_KEY: "sandbox-f-key",
      MEDIAGATE_ALLOW_PRIVATE_URLS: "1",
    },
  });
  try {
    const image = (prompt: string) => ({ task: "image" as const, prompt, size: "1024x1024" });
    // The paces: one job of each model.
    await Promise.all([gate.wait((await gate.submit({ ...image("warm d"), model: "d/gen-2-pro" })).id), gate.wait((await gate.submit({ ...image("warm f"), model: "f/img-v2" })).id)]);
    // D saturated: its slots full and a backlog behind them.
    const backlog: Job[] = [];
    for (let index = 0; index < BACKLOG; index++) backlog.push(await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: `backlog ${index}`, width: 256, height: 256 } }));
    const routed = async (routeBy: "price" | "time") => {
      const sentAt = Date.now();
      const job = await gate.submit({ ...image(`routed by ${routeBy}`), route: ["d/gen-2-pro", "f/img-v2"], route_by: routeBy });
      const timing = await gate.timing(job.id);
      if (process.env.BENCH_DEBUG) console.error(routeBy, (await gate.get(job.id))?.state, timing);
      const done = await gate.wait(job.id);
      return { routeBy, job: done, timing, sentAt, tookMs: (done.finishedAt ?? Date.now()) - sentAt };
    };
    const [byPrice, byTime] = await Promise.all([routed("price"), routed("time")]);
    for (const job of backlog) await gate.wait(job.id);
    const row = (run: Awaited<ReturnType<typeof routed>>) =>
      `| \`route_by: "${run.routeBy}"\` | ${run.job.provider.toUpperCase()}/${run.job.model} | ${run.job.state} | ${run.timing.queuePosition ?? "–"} | ${run.timing.expectedFinishAt === null ? "–" : `${((run.timing.expectedFinishAt - run.sentAt) / 1000).toFixed(1)} s`} | ${(run.tookMs / 1000).toFixed(1)} s |`;
    const lines = [
      `## Routing by time: D saturated, F idle (issue 37)`,
      ``,
      `Run ${new Date().toISOString()} on ${process.version}; sandbox in a child process over loopback (time scale 1); SQLite store; the library's engine.`,
      `D: 24 slots, renders of ${RENDER_MS} ms, ${BACKLOG} D jobs queued first; F: renders of ${RENDER_MS} ms, idle, unpriced. The same common image request routed over`,
      `["d/gen-2-pro", "f/img-v2"], once by price and once by time, submitted together after the backlog. \`npm run bench -- route-time\`.`,
      ``,
      `| request | went to | state | queue position at submit | expected finish at submit | submit to saved |`,
      `|---|---|---|---|---|---|`,
      row(byPrice),
      row(byTime),
    ];
    const markdown = lines.join("\n");
    process.stdout.write(`${markdown}\n`);
    recordResult("route-time", markdown);
    if (byTime.job.provider !== "f" || byPrice.job.provider !== "d" || byTime.tookMs >= byPrice.tookMs) process.exitCode = 1;
  } finally {
    await gate.close();
    await sandbox.stop();
    folder.remove();
  }
}

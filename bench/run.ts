/**
 * `npm run bench [-- NAME…]`: runs the named benchmarks (default every one but
 * the ten-minute soak) and rewrites their sections of RESULTS.md.
 */
import { runApiLoad } from "./api-load.js";
import { runARate } from "./a-rate.js";
import { runCMakespan } from "./c-makespan.js";
import { runDMakespan } from "./d-makespan.js";
import { runDPeer } from "./d-peer.js";
import { runDScale } from "./d-scale.js";
import { runDWorkers, runDWorkersRaised } from "./d-workers.js";
import { runEQuota } from "./e-quota.js";
import { runEta } from "./eta.js";
import { runRouteTime } from "./route-time.js";
import { runFairShare } from "./fair-share.js";
import { runIntake } from "./intake.js";
import { watchStealTime } from "./harness.js";
import { runSoak } from "./soak.js";
import { runTraceCost } from "./trace-cost.js";

const benchmarks: Record<string, () => Promise<void>> = {
  "d-makespan": runDMakespan,
  "d-scale": runDScale,
  "d-peer": runDPeer,
  "d-workers": () => runDWorkers(),
  "d-workers-raised": runDWorkersRaised,
  "c-makespan": runCMakespan,
  "a-rate": runARate,
  "e-quota": runEQuota,
  eta: runEta,
  "route-time": runRouteTime,
  "api-load": runApiLoad,
  intake: runIntake,
  "fair-share": runFairShare,
  "trace-cost": runTraceCost,
  soak: runSoak,
};

const names = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(benchmarks).filter((name) => name !== "soak");
for (const name of names) {
  const run = benchmarks[name];
  if (!run) {
    process.stderr.write(`unknown benchmark ${name}; known: ${Object.keys(benchmarks).join(", ")}\n`);
    process.exit(2);
  }
  process.stderr.write(`running ${name}…\n`);
  watchStealTime();
  await run();
}

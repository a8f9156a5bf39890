/**
 * Issue 35's fair-share check: one tenant's single job behind other tenants'
 * large batches, and what fairness costs the backlog. Sandbox D in a child
 * process (24 slots, every render BENCH_RENDER_MS, default 500 ms), one
 * engine on a SQLite store (the whole store's queue, as `worker` or `serve`
 * reads it). A backlog of BENCH_BACKLOG (480) D jobs split evenly among 1, 2
 * and 10 other tenants is queued; once D's 24 slots are all taken, Bob's one
 * job is queued. Each case runs in fair order (the default) and in arrival
 * order (oldest first, as before fair share), each on a fresh store.
 *
 * Reports Bob's wait (queued → claimed, and queued → saved), in renders,
 * and the backlog's makespan (first claim to last job saved) against its
 * bound ceil(jobs / 24) × T, fair ÷ arrival (target: fairness costs no
 * throughput, ≈ 1.0). Bounded: every run ends when its jobs do.
 */
import { loadConfig } from "../src/core/config.js";
import { Engine } from "../src/engine/engine.js";
import { createProviderRegistry } from "../src/providers/registry.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import type { NewJob, QueueOrder, Store } from "../src/store/store.js";
import { waitAndRead } from "../test/helpers/wait.js";
import { dBenchJobs, recordResult, startSandboxChild, tempFolder } from "./harness.js";

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 480);
const RENDER_MS = Number(process.env.BENCH_RENDER_MS ?? 500);
const TENANT_COUNTS = (process.env.BENCH_TENANTS ?? "1,2,10").split(",").map(Number);
const SLOTS = 24;

interface Run {
  tenants: number;
  order: QueueOrder;
  bobClaimMs: number;
  bobDoneMs: number;
  makespanMs: number;
  boundMs: number;
}

async function untilTrue(check: () => Promise<boolean>, boundMs: number): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("fair-share: the backlog did not take D's slots in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function runOne(sandboxUrl: string, tenants: number, order: QueueOrder): Promise<Run> {
  const folder = tempFolder();
  const store: Store = await openSqliteStore(`${folder.path}/bench.db`);
  try {
    const config = loadConfig({ env: { MEDIAGATE_D_BASE_URL: `${sandboxUrl}/d`, MEDIAGATE_D_API_KEY: "sandbox-d-key", MEDIAGATE_OUTPUT_DIR: `${folder.path}/out` }, cwd: folder.path });
    const providers = createProviderRegistry(config);
    const adapter = providers.get("d")!.adapter!;
    const each = Math.ceil(BACKLOG / tenants);
    const backlog: NewJob[] = [];
    for (let tenant = 0; tenant < tenants; tenant++) {
      const jobs = await dBenchJobs(adapter, each, { idPrefix: `job_t${tenant}_`, refPrefix: `t${tenant}-`, prompt: `tenant ${tenant}`, batchId: `batch_t${tenant}`, outDir: config.outputDir, idDigits: 4 });
      backlog.push(...jobs.map((job) => ({ ...job, tenant: `tok_${tenant}` })));
    }
    await store.insertJobs(backlog, Date.now());
    const engine = new Engine({ store, providers, secrets: () => ["sandbox-d-key"], queueOrder: order });
    engine.start();
    await untilTrue(async () => (await store.listJobs({ states: ["submitting", "running"] })).length >= SLOTS, 30_000);
    const [bob] = await dBenchJobs(adapter, 1, { idPrefix: "job_bob_", refPrefix: "bob-", prompt: "bob", batchId: "batch_bob", outDir: config.outputDir, idDigits: 1 });
    const queuedAt = Date.now();
    await store.insertJobs([{ ...bob!, tenant: "tok_bob" }], queuedAt);
    engine.wake();
    const outcome = await waitAndRead(engine, store, [...backlog.map((job) => job.id), bob!.id]);
    await engine.stop();
    if (!outcome.jobs.every((job) => job.state === "succeeded")) throw new Error(`fair-share: not every job succeeded (${order}, ${tenants} tenants)`);
    const bobEvents = await store.events(bob!.id);
    const claimedAt = bobEvents.find((event) => event.toState === "submitting")!.at;
    const doneAt = bobEvents.find((event) => event.toState === "succeeded")!.at;
    const backlogJobs = await store.listJobs({ ids: backlog.map((job) => job.id) });
    const firstClaim = Math.min(...(await Promise.all(backlogJobs.slice(0, SLOTS * 2).map(async (job) => (await store.events(job.id)).find((event) => event.toState === "submitting")!.at))));
    const lastDone = Math.max(...backlogJobs.map((job) => job.finishedAt ?? 0));
    return { tenants, order, bobClaimMs: claimedAt - queuedAt, bobDoneMs: doneAt - queuedAt, makespanMs: lastDone - firstClaim, boundMs: Math.ceil(backlog.length / SLOTS) * RENDER_MS };
  } finally {
    await store.close();
    folder.remove();
  }
}

export async function runFairShare(): Promise<void> {
  const sandbox = await startSandboxChild({ timeScale: 1, d: { renderTimeMs: RENDER_MS } });
  const runs: Run[] = [];
  try {
    for (const tenants of TENANT_COUNTS) {
      for (const order of ["fair", "arrival"] as const) {
        process.stderr.write(`fair-share: ${tenants} other tenant(s), ${order} order…\n`);
        const run = await runOne(sandbox.url, tenants, order);
        process.stderr.write(`  ${JSON.stringify(run)}\n`);
        runs.push(run);
      }
    }
  } finally {
    await sandbox.stop();
  }
  const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const renders = (ms: number) => (ms / RENDER_MS).toFixed(1);
  const ratios = TENANT_COUNTS.map((tenants) => {
    const fair = runs.find((run) => run.tenants === tenants && run.order === "fair")!;
    const arrival = runs.find((run) => run.tenants === tenants && run.order === "arrival")!;
    return `| ${tenants} | ${seconds(fair.bobClaimMs)} (${renders(fair.bobClaimMs)} renders) | ${seconds(arrival.bobClaimMs)} (${renders(arrival.bobClaimMs)} renders) | ${(fair.makespanMs / fair.boundMs).toFixed(3)} | ${(arrival.makespanMs / arrival.boundMs).toFixed(3)} | ${(fair.makespanMs / arrival.makespanMs).toFixed(3)} |`;
  });
  recordResult(
    "fair-share",
    [
      `## Fair share: one tenant's job behind other tenants' backlogs (issue 35)`,
      "",
      `Run ${new Date().toISOString()} on ${process.version}: sandbox D in a child process (${SLOTS} slots, every render ${RENDER_MS} ms), one engine on a SQLite store reading the whole store's queue. A backlog of ${BACKLOG} D jobs split evenly among 1, 2 and 10 tenants; once D's ${SLOTS} slots are all taken, Bob queues one job. Each case in fair order (the default) and in arrival order (oldest first, as before), each on a fresh store. Bob's wait is from his job's queueing to its claim (and to its save); the makespan is the backlog's, first claim to last save, against ceil(jobs / ${SLOTS}) × T.`,
      "",
      "| other tenants | order | Bob queued → claimed | Bob queued → saved | backlog makespan | makespan ÷ bound |",
      "|---|---|---|---|---|---|",
      ...runs.map((run) => `| ${run.tenants} | ${run.order} | ${seconds(run.bobClaimMs)} | ${seconds(run.bobDoneMs)} | ${seconds(run.makespanMs)} | ${(run.makespanMs / run.boundMs).toFixed(3)} |`),
      "",
      "| other tenants | Bob's wait, fair | Bob's wait, arrival | makespan ÷ bound, fair | makespan ÷ bound, arrival | makespan fair ÷ arrival |",
      "|---|---|---|---|---|---|",
      ...ratios,
    ].join("\n"),
  );
}

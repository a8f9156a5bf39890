import { isTerminal, type Job } from "../../src/core/job.js";
import type { Engine } from "../../src/engine/engine.js";
import { type WaitCounts, type WaitHandlers, waitForJobs } from "../../src/engine/wait.js";
import type { Store } from "../../src/store/store.js";

export interface ReadOutcome {
  counts: WaitCounts;
  /** The watched jobs, read whole once waiting ends (tests and benchmarks watch few enough to read). */
  jobs: Job[];
  /** Those unfinished and unable to move on by themselves: blocked by a budget or a folder, or queued behind a halt. */
  blocked: Job[];
}

/** waitForJobs, then the jobs read whole: what tests and benchmarks check. */
export async function waitAndRead(engine: Engine, store: Store, ids: readonly string[], handlers: WaitHandlers = {}): Promise<ReadOutcome> {
  const { counts } = await waitForJobs(engine, store, ids, handlers);
  const jobs = await store.listJobs({ ids });
  const halted = new Set((await store.halts()).map((halt) => halt.provider));
  const blocked = jobs.filter((job) => !isTerminal(job.state) && (job.blockedCode !== null || (job.state === "queued" && halted.has(job.provider))));
  return { counts, jobs, blocked };
}

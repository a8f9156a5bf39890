import { isTerminal, type Job } from "../core/job.js";
import type { Store } from "../store/store.js";
import type { Engine } from "./engine.js";

export interface WaitOutcome {
  jobs: Job[];
  /**
   * Unfinished jobs that cannot move on by themselves: queued behind a halted
   * provider (insufficient credits, …) or past their budget, or rendered but
   * not savable in their output folder (`blockedCode`).
   */
  blocked: Job[];
}

/**
 * Resolves when every job is terminal or blocked (see `WaitOutcome.blocked`).
 * `onChange` sees every update of these jobs, in order; `onTerminal` once per
 * job as it finishes (completion order).
 */
export async function waitForJobs(
  engine: Engine,
  store: Store,
  jobIds: readonly string[],
  handlers: { onChange?: (job: Job) => void; onTerminal?: (job: Job) => void; signal?: AbortSignal } = {},
): Promise<WaitOutcome> {
  const watched = new Set(jobIds);
  const reported = new Set<string>();
  const report = (job: Job) => {
    if (isTerminal(job.state) && !reported.has(job.id)) {
      reported.add(job.id);
      handlers.onTerminal?.(job);
    }
  };
  let check: (() => void) | null = null;
  const onJob = (job: Job) => {
    if (!watched.has(job.id)) return;
    handlers.onChange?.(job);
    report(job);
    check?.();
  };
  engine.on("job", onJob);
  const onIdle = () => check?.();
  engine.on("idle", onIdle);
  try {
    for (;;) {
      const jobs = await store.listJobs({ ids: [...watched] });
      for (const job of jobs) report(job);
      const halted = new Set((await store.halts()).map((halt) => halt.provider));
      const blocked = jobs.filter((job) => !isTerminal(job.state) && (job.blockedCode !== null || (job.state === "queued" && halted.has(job.provider))));
      if (jobs.every((job) => isTerminal(job.state) || blocked.includes(job))) return { jobs, blocked };
      if (handlers.signal?.aborted) return { jobs, blocked };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 1_000);
        function done() {
          clearTimeout(timer);
          handlers.signal?.removeEventListener("abort", done);
          resolve();
        }
        check = done;
        handlers.signal?.addEventListener("abort", done, { once: true });
      });
      check = null;
    }
  } finally {
    engine.off("job", onJob);
    engine.off("idle", onIdle);
  }
}

/** Charges the provider settles after the end (B) that are not settled yet. */
export function unsettled(jobs: readonly Job[]): Job[] {
  return jobs.filter((job) => job.chargeState === "pending" || job.chargeState === "unavailable");
}

/**
 * Keeps the engine running until every settling charge of these jobs is
 * settled, the bound passes, or `signal` aborts. Returns the jobs still unsettled.
 */
export async function waitForSettlement(store: Store, jobIds: readonly string[], boundMs: number, signal?: AbortSignal): Promise<Job[]> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const open = unsettled(await store.listJobs({ ids: [...jobIds] }));
    if (open.length === 0 || Date.now() >= deadline || signal?.aborted) return open;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

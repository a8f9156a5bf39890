import type { Job } from "../../src/core/job.js";
import type { Engine } from "../../src/engine/engine.js";
import type { Store } from "../../src/store/store.js";

/**
 * Resolves with the job as soon as `predicate` holds for it: checked in the
 * store first, then on every change the engine reports. Bounded by `timeoutMs`.
 */
export function untilJob(engine: Engine, store: Store, jobId: string, predicate: (job: Job) => boolean, timeoutMs = 20_000): Promise<Job> {
  return new Promise((resolve, reject) => {
    const finish = (error: Error | null, job?: Job) => {
      clearTimeout(timer);
      engine.off("job", onJob);
      if (error) reject(error);
      else resolve(job!);
    };
    const onJob = (job: Job) => {
      if (job.id === jobId && predicate(job)) finish(null, job);
    };
    const timer = setTimeout(() => finish(new Error(`job ${jobId} did not reach the expected condition within ${timeoutMs} ms`)), timeoutMs);
    engine.on("job", onJob);
    store.getJob(jobId).then(
      (job) => {
        if (job && predicate(job)) finish(null, job);
      },
      (error: unknown) => finish(error instanceof Error ? error : new Error(String(error))),
    );
  });
}

/** Waits, checking every 10 ms, until `condition` holds; fails naming `what` after `boundMs`. */
export async function until(condition: () => boolean | Promise<boolean>, what: string, boundMs = 10_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Reads the job from the store every 10 ms until `predicate` holds for it, and returns it; fails naming `what` after `boundMs`. */
export async function storedJobWhen(store: Store, jobId: string, predicate: (job: Job) => boolean, what: string, boundMs = 10_000): Promise<Job> {
  let found: Job | null = null;
  await until(async () => {
    found = await store.getJob(jobId);
    return found !== null && predicate(found);
  }, what, boundMs);
  return found!;
}

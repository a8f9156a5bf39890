import type { Job } from "../core/job.js";
import type { Store } from "../store/store.js";

/** The store methods whose answer is a job as the same statement wrote it. */
const WRITES_RETURNING_A_JOB = new Set<PropertyKey>(["updateJob", "transition"]);

/**
 * The store as an engine's steps see it: the same store, and every job one of
 * them writes through `updateJob` or `transition` is also handed to
 * `written`, as written. The engine learns its jobs' next due times from its
 * own steps' writes this way, instead of reading them back after each step.
 */
export function observingJobWrites(store: Store, written: (job: Job) => void): Store {
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (!WRITES_RETURNING_A_JOB.has(property)) return value.bind(target);
      return async (...args: unknown[]) => {
        const job = (await value.apply(target, args)) as Job | null;
        if (job) written(job);
        return job;
      };
    },
  });
}

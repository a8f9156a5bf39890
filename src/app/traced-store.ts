import { isTerminal, type Job, type JobOutput } from "../core/job.js";
import type { JobTracer } from "../core/tracing.js";
import type { Store } from "../store/store.js";

/** What a job made, when its model says (`image` or `video`); null when it does not (the outputs then say). */
export type OutputTypeOf = (job: Job) => "image" | "video" | null;

/**
 * The store as a traced process uses it: the same store, and every job one
 * of its writers (an engine's step, the API's cancel, a deadline) moves to
 * an end through `transition` has its span emitted, with the event log read
 * back for the span's events. Every end goes through `transition`, so
 * whichever process ends a job emits its span, whichever admitted it.
 * Emitting never fails the write: a trace is never worth a job.
 */
export function tracingJobEnds(store: Store, tracer: JobTracer, outputTypeOf: OutputTypeOf): { store: Store; settled(): Promise<void> } {
  const pending = new Set<Promise<void>>();
  const emit = async (job: Job & { trace: NonNullable<Job["trace"]> }) => {
    const [events, outputs] = await Promise.all([store.events(job.id), job.state === "succeeded" ? store.outputs(job.id) : Promise.resolve([])]);
    tracer.jobEnded({ job, events, outputType: outputTypeOf(job) ?? typeOfOutputs(outputs) });
  };
  const traced = new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property !== "transition") return value.bind(target);
      return async (...args: unknown[]) => {
        const job = (await value.apply(target, args)) as Job | null;
        if (job && job.trace && isTerminal(job.state)) {
          const emitting = emit({ ...job, trace: job.trace }).catch(() => undefined);
          pending.add(emitting);
          void emitting.finally(() => pending.delete(emitting));
        }
        return job;
      };
    },
  });
  return {
    store: traced,
    async settled() {
      await Promise.all([...pending]);
    },
  };
}

function typeOfOutputs(outputs: readonly JobOutput[]): "image" | "video" | null {
  const kinds = new Set(outputs.map((output) => output.contentType.split("/")[0]));
  if (kinds.size !== 1) return null;
  const [kind] = kinds;
  return kind === "image" || kind === "video" ? kind : null;
}

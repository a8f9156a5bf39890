import type { Job } from "../../core/job.js";

/** How long a job spent at each stage, from its timestamps: null where it has not reached that stage's end. */
export interface JobDurations {
  /** Created → its submit left (waiting for a slot, a rate token, its turn). */
  waitingMs: number | null;
  /** Sent → the provider said it was done (rendering at the provider). */
  renderingMs: number | null;
  /** Provider done → the job ended (its outputs downloaded and saved). */
  capturingMs: number | null;
}

export function durationsOf(job: Pick<Job, "createdAt" | "submitSentAt" | "submittedAt" | "providerDoneAt" | "finishedAt">): JobDurations {
  // When the submit left: noted as it leaves (submitSentAt), else when the provider accepted it (jobs sent before that was kept).
  const sentAt = job.submitSentAt ?? job.submittedAt;
  const between = (from: number | null, to: number | null) => (from === null || to === null ? null : Math.max(0, to - from));
  return {
    waitingMs: between(job.createdAt, sentAt),
    renderingMs: between(sentAt, job.providerDoneAt),
    capturingMs: between(job.providerDoneAt, job.providerDoneAt === null ? null : job.finishedAt),
  };
}

/** A duration as the dashboard writes it (`850 ms`, `12.3 s`, `4 min 05 s`, `2 h 03 min`); "—" for one not reached. */
export function durationText(ms: number | null): string {
  if (ms === null) return "—";
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1_000);
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
}

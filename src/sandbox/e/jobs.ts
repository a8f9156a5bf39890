import type { EOperation } from "./operations.js";
import type { EContentClass, EJobRequest } from "./submit-request.js";

/** spec E job status: values seen. The sandbox adds the cancelled value (option `cancelledStatus`) and injected unknown values. */
export type EKnownStatus = "running" | "succeeded" | "failed";
/** How a job ends if nobody cancels it; "stuck" never leaves running (spec E: "a job stuck in running"). */
export type EOutcome = "succeeded" | "failed" | "stuck";

export interface EPollRecord {
  /** Virtual ms. */
  at: number;
  /** The status answered. */
  status: string;
  /** The Content-Type header the poll carried; spec E Endpoints says a poll should carry none. */
  contentType?: string;
}

export interface EDownloadRecord {
  index: number;
  /** Virtual ms. */
  at: number;
}

export interface EJobRecord {
  /** The id in status and cancel paths. */
  id: string;
  /** spec E submit response: "jobId: string (job urn)". */
  jobId: string;
  clientId: string;
  tenant: string;
  /** spec E submit response: the handles as returned. */
  statusUrl: string;
  cancelUrl: string;
  operation: EOperation;
  request: EJobRequest;
  /** The body as received, for tests to assert on. */
  body: unknown;
  /** Virtual times (ms); the status is derived from them on every read. */
  submittedAt: number;
  /** When the job ends (Infinity when stuck). */
  finishAt: number;
  outcome: EOutcome;
  /** An injected status value answered instead of running until `untilAt`. */
  unknownStatus?: { value: string; untilAt: number };
  cancelledAt?: number;
  contentClass: EContentClass;
  altText: string;
  /** Signed image URLs, made once so every read returns the same links and lifetime. */
  imageUrls?: string[];
  polls: EPollRecord[];
  firstSucceededReadAt?: number;
  downloads: EDownloadRecord[];
}

/** The status value a read at `now` answers. */
export function statusAt(job: EJobRecord, now: number, cancelledStatus: string): string {
  if (job.cancelledAt !== undefined) return cancelledStatus;
  if (now >= job.finishAt && job.outcome !== "stuck") return job.outcome;
  if (job.unknownStatus && now < job.unknownStatus.untilAt) return job.unknownStatus.value;
  return "running";
}

/** When the job reached succeeded or failed, if it has by `now`. */
export function completedAt(job: EJobRecord, now: number): number | undefined {
  if (job.outcome === "stuck" || job.finishAt > now) return undefined;
  if (job.cancelledAt !== undefined && job.cancelledAt < job.finishAt) return undefined;
  return job.finishAt;
}

export class EJobStore {
  private readonly byId = new Map<string, EJobRecord>();

  add(job: EJobRecord): void {
    this.byId.set(job.id, job);
  }

  find(id: string): EJobRecord | undefined {
    return this.byId.get(id);
  }

  all(): EJobRecord[] {
    return [...this.byId.values()];
  }

  clear(): void {
    this.byId.clear();
  }
}

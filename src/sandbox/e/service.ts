import { createHash, randomUUID } from "node:crypto";
import type { SandboxContext } from "../context.js";
import { EApiError } from "./errors.js";
import { completedAt, EJobStore, statusAt, type EJobRecord, type EOutcome } from "./jobs.js";
import type { EOperationSpec } from "./operations.js";
import { drawDuration, type EDurationRange, type ResolvedEOptions } from "./options.js";
import { EQuota } from "./quota.js";
import { EResults } from "./results.js";
import type { EStatusBody } from "./status-body.js";
import { parseSubmitRequest, type EJobRequest } from "./submit-request.js";
import { ETokens } from "./tokens.js";
import { EUploads, type EUploadContentType } from "./uploads.js";

export type ERequestKind = "token" | "submit" | "upload" | "status" | "cancel" | "image" | "unknown";

/** One request that reached E's routes, with virtual time, for tests to check quota windows and headers. */
export interface ERequestRecord {
  /** Virtual ms. */
  at: number;
  method: string;
  path: string;
  kind: ERequestKind;
  /** The x-api-key it carried, when that is a known client id. */
  clientId?: string;
  /** Whether it counted against the organisation's quota. */
  counted: boolean;
  contentType?: string;
  statusCode?: number;
}

/** spec E Errors: the newer endpoint lists 401, 409 and 503; their meaning is not shown, so they are only injected. */
export type EV4ErrorStatus = 401 | 409 | 503;

export interface ESubmitAnswer {
  jobId: string;
  statusUrl: string;
  cancelUrl: string;
}

/** Prefix of the tenant-specific status host's routes (served on `context.alternateBaseUrl()`). */
export const E_STATUS_PREFIX = "/e-status";

const V4_ERRORS: Record<EV4ErrorStatus, { code: "unauthorized" | "conflict" | "service_unavailable"; message: string }> = {
  401: { code: "unauthorized", message: "injected 401 on the v4 endpoint" },
  409: { code: "conflict", message: "injected 409 on the v4 endpoint" },
  503: { code: "service_unavailable", message: "injected 503 on the v4 endpoint" },
};

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(contentType: string | undefined): string | undefined {
  return contentType?.split(";")[0]?.trim().toLowerCase() || undefined;
}

/** Everything service E does, independent of HTTP routing. */
export class EService {
  readonly tokens: ETokens;
  quota: EQuota;
  uploads: EUploads;
  readonly jobs = new EJobStore();
  readonly results: EResults;
  readonly requests: ERequestRecord[] = [];
  renderMs: EDurationRange;
  private readonly injectedOutcomes: EOutcome[] = [];
  private readonly injectedUnknownStatuses: { value: string; forMs: number }[] = [];
  private readonly injectedV4Errors: { status: EV4ErrorStatus; retryAfterSeconds?: number }[] = [];

  constructor(
    private readonly context: SandboxContext,
    readonly options: ResolvedEOptions,
  ) {
    this.tokens = new ETokens(context.clock, options.clients, options.requiredScopes, options.tokenLifetimeSeconds);
    this.quota = new EQuota(context.clock, options.requestsPerMinute, options.requestsPerDay);
    this.uploads = new EUploads(context.clock, options.uploadValidityMs);
    this.results = new EResults(context, this.jobs, options.imageUrlTtlMs);
    this.renderMs = options.renderMs;
  }

  /**
   * Forgets every job, upload, request record, quota window and injected
   * answer. Tokens stay valid, so a client's cached token keeps working
   * across a reset, as a key does.
   */
  reset(): void {
    this.jobs.clear();
    this.uploads = new EUploads(this.context.clock, this.options.uploadValidityMs);
    this.quota = new EQuota(this.context.clock, this.options.requestsPerMinute, this.options.requestsPerDay);
    this.requests.length = 0;
    this.renderMs = this.options.renderMs;
    this.injectedOutcomes.length = 0;
    this.injectedUnknownStatuses.length = 0;
    this.injectedV4Errors.length = 0;
  }

  record(method: string, path: string, kind: ERequestKind, contentType: string | undefined): ERequestRecord {
    const entry: ERequestRecord = {
      at: this.context.clock.now(),
      method,
      path,
      kind,
      counted: false,
      ...(contentType !== undefined ? { contentType } : {}),
    };
    this.requests.push(entry);
    return entry;
  }

  /**
   * Every API call, in this order: `x-api-key` names a known client id (else
   * 401, not counted: no organisation to count it against), the quota
   * (counted from here on, 429 otherwise), then the Bearer token, which must
   * belong to that client id and not have expired (401).
   */
  admit(headers: Record<string, string | string[] | undefined>, entry: ERequestRecord): string {
    const clientId = single(headers["x-api-key"]);
    if (clientId === undefined || !this.tokens.isClient(clientId)) {
      throw new EApiError(401, "invalid_api_key", "missing or unknown x-api-key");
    }
    entry.clientId = clientId;
    const decision = this.quota.take(clientId);
    if (!decision.allowed) {
      // retry-after in whole seconds of virtual time, rounded up.
      const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      const limit = decision.window === "minute" ? `${this.quota.perMinute} per minute` : `${this.quota.perDay} per day`;
      throw new EApiError(429, "too_many_requests", `more than ${limit} requests for this organization`, undefined, {
        "retry-after": String(seconds),
      });
    }
    entry.counted = true;
    this.tokens.authenticate(clientId, headers.authorization);
    return clientId;
  }

  /** The host name statusUrl and cancelUrl carry (the sandbox's alternate name). */
  statusHostname(): string {
    return new URL(this.context.alternateBaseUrl()).hostname;
  }

  /** spec E tenant-specific status host: a stable per-organisation segment of the status and cancel paths. */
  tenantOf(clientId: string): string {
    return `tenant-${createHash("sha256").update(clientId).digest("hex").slice(0, 10)}`;
  }

  upload(clientId: string, contentType: EUploadContentType, body: unknown): { images: { id: string }[] } {
    const record = this.uploads.add(clientId, contentType, body);
    return { images: [{ id: record.id }] };
  }

  submit(clientId: string, operation: EOperationSpec, body: unknown): ESubmitAnswer {
    if (operation.operation === "generate-v4") {
      const injected = this.injectedV4Errors.shift();
      if (injected) {
        const { code, message } = V4_ERRORS[injected.status];
        const headers: Record<string, string> =
          injected.retryAfterSeconds !== undefined ? { "retry-after": String(injected.retryAfterSeconds) } : {};
        throw new EApiError(injected.status, code, message, undefined, headers);
      }
    }
    const request = parseSubmitRequest(body, operation, {
      clientId,
      uploads: this.uploads,
      random: this.context.random,
    });
    const submittedAt = this.context.clock.now();
    const outcome = this.injectedOutcomes.shift() ?? "succeeded";
    const unknown = this.injectedUnknownStatuses.shift();
    const id = randomUUID();
    const tenant = this.tenantOf(clientId);
    // spec E Endpoints: "the status host is tenant-specific": statusUrl and cancelUrl name another host than submit.
    const statusBase = `${this.context.alternateBaseUrl()}${E_STATUS_PREFIX}/${tenant}/v3`;
    const job: EJobRecord = {
      id,
      jobId: `urn:sandbox-e:job:${id}`,
      clientId,
      tenant,
      statusUrl: `${statusBase}/status/${id}`,
      cancelUrl: `${statusBase}/cancel/${id}`,
      operation: operation.operation,
      request,
      body,
      submittedAt,
      finishAt: outcome === "stuck" ? Infinity : submittedAt + drawDuration(this.renderMs, this.context.random),
      outcome,
      ...(unknown ? { unknownStatus: { value: unknown.value, untilAt: submittedAt + unknown.forMs } } : {}),
      contentClass: request.contentClass ?? "photo",
      altText: altTextFor(operation.operation, request),
      polls: [],
      downloads: [],
    };
    this.jobs.add(job);
    return { jobId: job.jobId, statusUrl: job.statusUrl, cancelUrl: job.cancelUrl };
  }

  /** The job, if it belongs to this organisation and tenant path; anything else is "no such job". */
  jobFor(clientId: string, tenant: string, id: string): EJobRecord {
    const job = this.jobs.find(id);
    if (!job || job.clientId !== clientId || job.tenant !== tenant) throw new EApiError(404, "not_found", `no job ${id}`);
    return job;
  }

  status(job: EJobRecord, contentType: string | undefined): EStatusBody {
    const now = this.context.clock.now();
    const status = statusAt(job, now, this.options.cancelledStatus);
    job.polls.push({ at: now, status, ...(contentType !== undefined ? { contentType } : {}) });
    return this.statusBody(job, status, now);
  }

  /**
   * Cancel (method not shown: PUT and DELETE are accepted). A running job (or
   * one in an injected unknown status) becomes cancelled; cancelling again
   * answers the same; a job that already succeeded or failed is 409.
   */
  cancel(job: EJobRecord): EStatusBody {
    const now = this.context.clock.now();
    const status = statusAt(job, now, this.options.cancelledStatus);
    if (status === "succeeded" || status === "failed") {
      throw new EApiError(409, "job_already_finished", `job ${job.jobId} already ${status}`);
    }
    job.cancelledAt ??= now;
    return { status: this.options.cancelledStatus, jobId: job.jobId };
  }

  completedAt(job: EJobRecord): number | undefined {
    return completedAt(job, this.context.clock.now());
  }

  injectOutcome(outcome: EOutcome, count: number): void {
    for (let i = 0; i < count; i++) this.injectedOutcomes.push(outcome);
  }

  injectUnknownStatus(value: string, forMs: number, count: number): void {
    for (let i = 0; i < count; i++) this.injectedUnknownStatuses.push({ value, forMs });
  }

  injectV4Error(status: EV4ErrorStatus, count: number, retryAfterSeconds?: number): void {
    for (let i = 0; i < count; i++) {
      this.injectedV4Errors.push({ status, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) });
    }
  }

  private statusBody(job: EJobRecord, status: string, now: number): EStatusBody {
    if (status === "failed") return { status: "failed" };
    if (status !== "succeeded") return { status, jobId: job.jobId };
    job.firstSucceededReadAt ??= now;
    const urls = this.results.urlsFor(job);
    return {
      status: "succeeded",
      jobId: job.jobId,
      result: {
        size: { ...job.request.size },
        outputs: job.request.seeds.map((seed, index) => ({ seed, image: { url: urls[index]! } })),
        contentClass: job.contentClass,
        altText: job.altText,
      },
    };
  }
}

/** spec E result: `altText` is descriptive text; the sandbox describes the request. */
function altTextFor(operation: EOperationSpec["operation"], request: EJobRequest): string {
  const subject = request.prompt ?? "the source image";
  switch (operation) {
    case "expand":
      return `An expanded view of ${request.prompt ? `a scene: ${subject}` : subject}`;
    case "fill":
      return `The source image with a filled area: ${subject}`;
    case "object-composite":
      return `An object composited into a scene: ${subject}`;
    case "similar":
      return `An image similar to ${subject}`;
    default:
      return `An image of ${subject}`;
  }
}

import { randomUUID } from "node:crypto";
import { afterEach } from "vitest";
import { systemClock } from "../../../src/core/clock.js";
import type { CallContext, CallJob, JobRequest, Submitted, ValidatedRequest } from "../../../src/providers/adapter.js";
import { createBAdapter, type BAdapter, type BAdapterConfig } from "../../../src/providers/b/index.js";
import { ProviderHttp } from "../../../src/providers/http.js";
import { DEFAULT_B_API_KEY } from "../../../src/sandbox/b/index.js";
import { createBEmulator, startSandbox, type BEmulator, type BEmulatorOptions, type LoggedRequest, type Sandbox } from "../../../src/sandbox/index.js";

export const KEY = DEFAULT_B_API_KEY;
/** Virtual ms a sandbox job stays queued, then running (fixed, so tests know when it ends). */
export const QUEUE_MS = 1_000;
export const RENDER_MS = 5_000;
export const IMAGE_TO_VIDEO = "vendorx/video-2.5/image-to-video";
export const IMAGE_URL = "https://images.example/lighthouse.png";

const running: Sandbox[] = [];

afterEach(async () => {
  for (const sandbox of running.splice(0)) await sandbox.stop();
});

/** A JobRequest for B without its provider field. */
export type BRequestParts = Omit<JobRequest, "provider">;

export interface BBed {
  sandbox: Sandbox;
  emulator: BEmulator;
  adapter: BAdapter;
  http: ProviderHttp;
  /** A call context without a job (catalog, quote). */
  context: CallContext;
  /** A call context for one job: a fresh idempotency key unless given. */
  jobContext(job?: Partial<CallJob>): CallContext;
  /** Moves the sandbox's virtual time forward. */
  advance(ms: number): void;
  /** Requests B's emulator received (result downloads excluded). */
  requests(): LoggedRequest[];
  /** Loads the catalog record and validates. */
  validated(request: BRequestParts): Promise<ValidatedRequest>;
  /** Validates and submits with a fresh key. */
  submitted(request?: BRequestParts, job?: Partial<CallJob>): Promise<{ validated: ValidatedRequest; submitted: Submitted; context: CallContext }>;
}

/** 1080p, 5 s: 0.09 USD a second at B's published rate. */
export function imageToVideo(input: Record<string, unknown> = {}): BRequestParts {
  return { model: "vendorx/video-2.5", operation: "image-to-video", input: { image: IMAGE_URL, resolution: "1080p", duration_s: 5, ...input } };
}

/** A sandbox with B's emulator on loopback and an adapter pointed at it. */
export async function startB(options: BEmulatorOptions = {}, config: Partial<BAdapterConfig> = {}): Promise<BBed> {
  // The adapter verifies on the sandbox's virtual clock (advance()), so deliveries are signed on it too.
  // B's own emulator object, so its defaults (loopback webhook URLs refused) are B's, not the sandbox's.
  const emulator = createBEmulator({ queueTimeMs: QUEUE_MS, renderTimeMs: RENDER_MS, webhookTimestamps: "virtual", ...options });
  const sandbox = await startSandbox({ providers: ["b"], emulators: { b: emulator } });
  running.push(sandbox);
  const apiKey = config.apiKey ?? KEY;
  const adapter = createBAdapter({ baseUrl: `${sandbox.url}/b`, apiKey, ...config });
  // Resends of idempotent requests wait zero time, so no test sleeps.
  const http = new ProviderHttp({ provider: "b", clock: systemClock, secrets: () => [apiKey, config.webhookSecret], urlPolicy: { allowHttp: true, allowPrivate: true }, random: () => 0 });
  // The sandbox's virtual clock, so catalog TTLs and webhook timestamps move with advance().
  const context: CallContext = { http, clock: sandbox.clock };
  const jobContext = (job: Partial<CallJob> = {}): CallContext => ({
    ...context,
    job: { id: job.id ?? `job-${randomUUID()}`, idempotencyKey: job.idempotencyKey === undefined ? randomUUID() : job.idempotencyKey, callbackUrl: job.callbackUrl ?? null },
  });
  const validated = async (parts: BRequestParts) => {
    const request: JobRequest = { provider: "b", ...parts };
    await adapter.prefetch!(request, context);
    return adapter.validate(request);
  };
  return {
    sandbox,
    emulator,
    adapter,
    http,
    context,
    jobContext,
    advance: (ms) => sandbox.clock.advance(ms),
    requests: () => sandbox.requests().filter((entry) => entry.provider === "b" && !entry.url.startsWith("/b/files/")),
    validated,
    async submitted(request = imageToVideo(), job = {}) {
      const validatedRequest = await validated(request);
      const call = jobContext(job);
      return { validated: validatedRequest, submitted: await adapter.submit(validatedRequest, call), context: call };
    },
  };
}

/** Awaits `run` and returns what it throws; fails the test when it resolves. */
export async function thrown(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw");
}

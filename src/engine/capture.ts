import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { fullJitterBackoffMs } from "../core/backoff.js";
import { ProviderError } from "../core/errors.js";
import type { Job, JobOutput } from "../core/job.js";
import type { ProviderStatus } from "../providers/adapter.js";
import { safeForDisplay, TransportError } from "../providers/http.js";
import { chargeAtEnd } from "./charge.js";
import { type EngineContext, validatedOf } from "./context.js";

const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "image/gif": "gif",
  "video/mp4": "mp4",
  "video/quicktime": "mov",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/mpeg": "mp3",
};

/** Content type from the bytes themselves, for answers without a usable header. */
function sniffContentType(bytes: Buffer): string | null {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png";
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return "image/jpeg";
  if (bytes.toString("ascii", 0, 4) === "RIFF" && bytes.toString("ascii", 8, 12) === "WEBP") return "image/webp";
  if (bytes.toString("ascii", 0, 4) === "RIFF" && bytes.toString("ascii", 8, 12) === "WAVE") return "audio/wav";
  if (bytes.toString("ascii", 4, 8) === "ftyp") return bytes.toString("ascii", 8, 10) === "qt" ? "video/quicktime" : "video/mp4";
  return null;
}

/** A file name stem from the job's ref: safe characters only, with a short hash when the ref had to change. */
export function fileStem(job: Pick<Job, "ref">): string {
  const safe = job.ref.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_").slice(0, 120);
  if (safe === job.ref) return safe;
  return `${safe}-${createHash("sha256").update(job.ref).digest("hex").slice(0, 6)}`;
}

/** Writes bytes to `path` atomically: a temporary file in the same folder, flushed, then renamed over. */
export async function writeFileAtomic(path: string, bytes: Buffer): Promise<void> {
  const temporary = `${path}.tmp-${randomBytes(4).toString("hex")}`;
  const handle = await open(temporary, "w");
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  await rename(temporary, path);
}

/** A process killed mid-write leaves `STEM….tmp-XXXX`; the next capture of the same job removes it. */
async function removeStaleTemporaries(folder: string, stem: string): Promise<void> {
  const escaped = stem.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const leftover = new RegExp(`^${escaped}(-\\d+)?(\\.[a-z0-9]+)+\\.tmp-[0-9a-f]{8}$`);
  for (const name of await readdir(folder)) {
    if (leftover.test(name)) await rm(join(folder, name), { force: true });
  }
}

/**
 * Downloads every output of a job that the provider reported done, at once
 * (result links expire: D's in ten minutes), saves it atomically with its
 * sha256, and moves the job to `succeeded` with its charge.
 */
export async function captureOutputs(context: EngineContext, job: Job, status: Extract<ProviderStatus, { kind: "succeeded" }>): Promise<void> {
  const { store, clock, owner } = context;
  const adapter = context.adapter(job.provider);
  const request = validatedOf(job);
  const saved: JobOutput[] = [];
  try {
    if (status.outputs.length === 0) throw new ProviderError("no_outputs", "the provider reported success without any output", { provider: job.provider, retryable: false });
    const call = await context.callContext(job, request, { rateLimited: false });
    await mkdir(job.outDir, { recursive: true });
    const stem = fileStem(job);
    await removeStaleTemporaries(job.outDir, stem);
    for (const [index, output] of status.outputs.entries()) {
      context.counters(job.provider).downloads++;
      const response = await call.http.request({ method: "GET", url: output.url, retry: "idempotent", untrustedUrl: true, timeoutMs: 120_000 }, context.signal);
      if (response.status < 200 || response.status >= 300) {
        const expired = response.status === 403 || response.status === 404 || response.status === 410;
        throw call.http.errorFrom(
          response,
          expired ? "result_expired" : "result_download_failed",
          `downloading output ${index + 1} from ${safeForDisplay(output.url)} answered HTTP ${response.status}`,
          { retryable: !expired },
        );
      }
      const headerType = response.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase() ?? "";
      const contentType = EXTENSIONS[headerType] ? headerType : (sniffContentType(response.body) ?? (headerType || "application/octet-stream"));
      const extension = EXTENSIONS[contentType] ?? "bin";
      const path = join(job.outDir, `${stem}${status.outputs.length > 1 ? `-${index + 1}` : ""}.${extension}`);
      await writeFileAtomic(path, response.body);
      // What the provider said about this output (seed, alt text, safety flag) is kept beside it, not only in the store.
      if (output.metadata && Object.keys(output.metadata).length > 0) {
        await writeFileAtomic(`${path}.json`, Buffer.from(`${JSON.stringify(output.metadata, null, 2)}\n`));
      }
      saved.push({
        index,
        path,
        url: output.url,
        contentType,
        bytes: response.body.length,
        sha256: createHash("sha256").update(response.body).digest("hex"),
        metadata: output.metadata ?? {},
      });
    }
  } catch (error) {
    await handleCaptureFailure(context, job, error);
    return;
  }
  const now = clock.now();
  const charge = chargeAtEnd(adapter, request, status, job, now);
  const moved = await store.transition(
    job.id,
    { state: "capturing", leaseOwner: owner },
    "succeeded",
    {
      ...charge.patch,
      leaseOwner: null,
      leaseExpiresAt: null,
      pollFailures: 0,
      reason: null,
    },
    `saved ${saved.length} output(s)`,
    now,
    { outputs: saved.map((output) => ({ path: output.path, bytes: output.bytes, sha256: output.sha256 })) },
    { outputs: saved, ...charge.extras },
  );
  if (moved) context.emit(moved);
  context.wake();
}

async function handleCaptureFailure(context: EngineContext, job: Job, error: unknown): Promise<void> {
  const { store, clock, owner } = context;
  const now = clock.now();
  if (context.signal.aborted) return; // stopping: the job stays `capturing` and is resumed by the next engine
  const failures = job.pollFailures + 1;
  const retryable = error instanceof TransportError || (error instanceof ProviderError && error.detail.retryable);
  const message = error instanceof Error ? error.message : String(error);
  if (!retryable || failures >= 5) {
    const code = error instanceof ProviderError ? error.code : "result_download_failed";
    const moved = await store.transition(
      job.id,
      { state: "capturing", leaseOwner: owner },
      "failed",
      { error: { code, message, ...(error instanceof ProviderError ? { detail: error.detail } : {}) }, leaseOwner: null, leaseExpiresAt: null, reason: message },
      `could not save the results: ${message}`,
      now,
    );
    if (moved) context.emit(moved);
    context.wake();
    return;
  }
  // The next attempt reads the job again first, for fresh result links.
  await store.updateJob(
    job.id,
    { state: "capturing", leaseOwner: owner },
    { nextAttemptAt: now + fullJitterBackoffMs(failures, { baseMs: 1_000, capMs: 30_000 }), pollFailures: failures, reason: `saving failed (${message}); retrying` },
    now,
  );
}

import { createHash } from "node:crypto";
import { fullJitterBackoffMs } from "../core/backoff.js";
import { ProviderError } from "../core/errors.js";
import { mediaFactsOf } from "../core/media-facts.js";
import type { Job, JobOutput } from "../core/job.js";
import { OutputSaveError } from "../outputs/local-folder.js";
import { outputPath } from "../outputs/location.js";
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

/** A job whose results could not be saved tries again after this long at most (the first tries come sooner). */
const SAVE_RETRY_CAP_MS = 30_000;

/** Downloaded results kept in memory while saving them fails, at most this many bytes per engine (beyond that, they are downloaded again). */
const HELD_BYTES_LIMIT = 256 * 1024 * 1024;

/** A result downloaded and not yet saved. */
interface Downloaded {
  index: number;
  url: string;
  body: Buffer;
  contentType: string;
  metadata: Record<string, unknown> | undefined;
}

/**
 * What each engine holds of results whose save failed: their bytes (so a
 * retry writes them without downloading again: a download may be counted,
 * A allows 100 per result link) and how many saves have failed in a row.
 */
interface Held {
  outputs: Downloaded[] | null;
  failures: number;
}

class HeldResults {
  private readonly byJob = new Map<string, Held>();
  private bytes = 0;

  get(jobId: string): Held | undefined {
    return this.byJob.get(jobId);
  }

  /** One more failed save of `jobId`, keeping `outputs` when they fit; the number of failures so far. */
  failed(jobId: string, outputs: Downloaded[] | null): number {
    const failures = (this.byJob.get(jobId)?.failures ?? 0) + 1;
    this.drop(jobId);
    const size = outputs?.reduce((sum, output) => sum + output.body.length, 0) ?? 0;
    const kept = outputs !== null && this.bytes + size <= HELD_BYTES_LIMIT ? outputs : null;
    if (kept) this.bytes += size;
    this.byJob.set(jobId, { outputs: kept, failures });
    return failures;
  }

  drop(jobId: string): void {
    for (const output of this.byJob.get(jobId)?.outputs ?? []) this.bytes -= output.body.length;
    this.byJob.delete(jobId);
  }
}

const heldByEngine = new WeakMap<EngineContext, HeldResults>();

function heldOf(context: EngineContext): HeldResults {
  let held = heldByEngine.get(context);
  if (!held) heldByEngine.set(context, (held = new HeldResults()));
  return held;
}

/**
 * Any failure of the output writer is a failure to save: the result is still
 * at the provider (and in memory), so it never ends the job. An S3 client's
 * own error, a bug's TypeError, a file system's errno: all become an
 * OutputSaveError naming the location.
 */
async function saving<T>(location: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof OutputSaveError) throw error;
    const errno = typeof (error as NodeJS.ErrnoException | null)?.code === "string" ? (error as NodeJS.ErrnoException).code! : ((error as Error | null)?.name ?? "EIO");
    throw new OutputSaveError(location, errno, `cannot save to ${location}: ${error instanceof Error ? error.message : String(error)} (${errno})`, { cause: error });
  }
}

/** Downloads every output the provider reported, into memory. */
async function download(context: EngineContext, job: Job, status: Extract<ProviderStatus, { kind: "succeeded" }>): Promise<Downloaded[]> {
  const call = await context.callContext(job, validatedOf(job), { rateLimited: false, step: "download" });
  const downloaded: Downloaded[] = [];
  for (const [index, output] of status.outputs.entries()) {
    context.counters(job.provider).downloads++;
    const response = await context.timed(job.provider, "capture", async () => {
      const answer = await call.http.request({ method: "GET", url: output.url, retry: "idempotent", untrustedUrl: true, timeoutMs: 120_000 }, context.signal);
      if (answer.status < 200 || answer.status >= 300) {
        const expired = answer.status === 403 || answer.status === 404 || answer.status === 410;
        // An expired link is retried too: the next attempt reads the job again first, and a provider that hands out a
        // fresh link on every read (B's /content) gives a working one. One that keeps handing back the same dead link
        // (D's sample after its ten minutes) fails as result_expired once the attempts run out.
        throw call.http.errorFrom(
          answer,
          expired ? "result_expired" : "result_download_failed",
          `downloading output ${index + 1} from ${safeForDisplay(output.url)} answered HTTP ${answer.status}`,
          { retryable: true },
        );
      }
      return answer;
    });
    const headerType = response.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase() ?? "";
    const contentType = EXTENSIONS[headerType] ? headerType : (sniffContentType(response.body) ?? (headerType || "application/octet-stream"));
    downloaded.push({ index, url: output.url, body: response.body, contentType, metadata: output.metadata });
  }
  return downloaded;
}

/**
 * Downloads every output of a job that the provider reported done, at once
 * (result links expire: D's in ten minutes), saves it atomically with its
 * sha256, and moves the job to `succeeded` with its charge. Results whose
 * save fails are kept in memory and written again, without another download.
 */
export async function captureOutputs(context: EngineContext, job: Job, status: Extract<ProviderStatus, { kind: "succeeded" }>): Promise<void> {
  const { store, clock, owner } = context;
  const adapter = context.adapter(job.provider);
  const request = validatedOf(job);
  const held = heldOf(context);
  const saved: JobOutput[] = [];
  let downloaded: Downloaded[] | null = null;
  try {
    if (status.outputs.length === 0) throw new ProviderError("no_outputs", "the provider reported success without any output", { provider: job.provider, retryable: false });
    // The folder is proved writable before anything is downloaded: a second download of a result is never free (A).
    await saving(job.outDir, () => context.outputs.prepare(job.outDir));
    downloaded = held.get(job.id)?.outputs ?? (await download(context, job, status));
    const stem = fileStem(job);
    // A process killed mid-write leaves `STEM….tmp-XXXX`; this capture of the same job removes it.
    await saving(job.outDir, () => context.outputs.removeStale(job.outDir, stem));
    for (const output of downloaded) {
      const extension = EXTENSIONS[output.contentType] ?? "bin";
      const path = outputPath(job.outDir, `${stem}${downloaded.length > 1 ? `-${output.index + 1}` : ""}.${extension}`);
      await saving(path, () => context.outputs.write(path, output.body));
      // What the provider said about this output (seed, alt text, safety flag) is kept beside it, not only in the store.
      if (output.metadata && Object.keys(output.metadata).length > 0) {
        await saving(path, () => context.outputs.write(`${path}.json`, Buffer.from(`${JSON.stringify(output.metadata, null, 2)}\n`)));
      }
      saved.push({
        index: output.index,
        path,
        // Where it came from, without its query: a result link's signature lets anyone holding it download the result
        // again (and a second download is not always free); the saved file is the result.
        url: safeForDisplay(output.url),
        contentType: output.contentType,
        bytes: output.body.length,
        sha256: createHash("sha256").update(output.body).digest("hex"),
        metadata: output.metadata ?? {},
        // What the bytes themselves say (an image's size, a video's size and length), apart from what the provider said.
        media: mediaFactsOf(output.body, output.contentType),
      });
    }
  } catch (error) {
    if (error instanceof OutputSaveError && !context.signal.aborted) held.failed(job.id, downloaded);
    else held.drop(job.id);
    await handleCaptureFailure(context, job, error, status);
    return;
  }
  held.drop(job.id);
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

async function handleCaptureFailure(context: EngineContext, job: Job, error: unknown, status: Extract<ProviderStatus, { kind: "succeeded" }>): Promise<void> {
  const { store, clock, owner } = context;
  const now = clock.now();
  if (context.signal.aborted) return; // stopping: the job stays `capturing` and is resumed by the next engine
  if (error instanceof OutputSaveError) {
    // A problem on our side never ends a paid job: it stays `capturing` (its downloaded bytes kept in memory, or re-read
    // for fresh links) until the folder or bucket works again or a re-run points it at another folder.
    const failures = heldOf(context).get(job.id)?.failures ?? 1;
    const delayMs = Math.min(SAVE_RETRY_CAP_MS, 1_000 * 2 ** (failures - 1));
    const reason = `rendered, but ${error.message}; saving again in ${Math.ceil(delayMs / 1_000)} s (or re-run the command with a writable --out)`;
    const updated = await store.updateJob(
      job.id,
      { state: "capturing", leaseOwner: owner },
      { nextAttemptAt: now + delayMs, blockedCode: "output_unwritable", reason },
      now,
    );
    if (updated) context.emit(updated);
    context.wake();
    return;
  }
  const failures = job.pollFailures + 1;
  const retryable = error instanceof TransportError || (error instanceof ProviderError && error.detail.retryable);
  const message = error instanceof Error ? error.message : String(error);
  if (!retryable || failures >= 5) {
    const code = error instanceof ProviderError ? error.code : "result_download_failed";
    // The provider rendered it, so it charged for it: the charge is recorded even though the result is lost.
    const charge = chargeAtEnd(context.adapter(job.provider), validatedOf(job), status, job, now);
    const moved = await store.transition(
      job.id,
      { state: "capturing", leaseOwner: owner },
      "failed",
      { ...charge.patch, error: { code, message, ...(error instanceof ProviderError ? { detail: error.detail } : {}) }, leaseOwner: null, leaseExpiresAt: null, reason: message },
      `could not save the results: ${message}`,
      now,
      undefined,
      charge.extras,
    );
    if (moved) context.emit(moved);
    context.wake();
    return;
  }
  // The next attempt reads the job again first, for fresh result links. Listeners (progress, the server) are told:
  // "saving failed; retrying" is worth seeing while it lasts.
  const retrying = await store.updateJob(
    job.id,
    { state: "capturing", leaseOwner: owner },
    { nextAttemptAt: now + fullJitterBackoffMs(failures, { baseMs: 1_000, capMs: 30_000 }), pollFailures: failures, reason: `saving failed (${message}); retrying` },
    now,
  );
  if (retrying) context.emit(retrying);
}

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

/** A job whose results could not be saved locally tries again after this long (each try re-reads the job for fresh links). */
const LOCAL_SAVE_RETRY_MS = 30_000;

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
    // The folder is proved writable before anything is downloaded: a second download of a result is never free (A).
    await context.outputs.prepare(job.outDir);
    const call = await context.callContext(job, request, { rateLimited: false });
    const stem = fileStem(job);
    // A process killed mid-write leaves `STEM….tmp-XXXX`; this capture of the same job removes it.
    await context.outputs.removeStale(job.outDir, stem);
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
      const extension = EXTENSIONS[contentType] ?? "bin";
      const path = outputPath(job.outDir, `${stem}${status.outputs.length > 1 ? `-${index + 1}` : ""}.${extension}`);
      await context.outputs.write(path, response.body);
      // What the provider said about this output (seed, alt text, safety flag) is kept beside it, not only in the store.
      if (output.metadata && Object.keys(output.metadata).length > 0) {
        await context.outputs.write(`${path}.json`, Buffer.from(`${JSON.stringify(output.metadata, null, 2)}\n`));
      }
      saved.push({
        index,
        path,
        // Where it came from, without its query: a result link's signature lets anyone holding it download the result
        // again (and a second download is not always free); the saved file is the result.
        url: safeForDisplay(output.url),
        contentType,
        bytes: response.body.length,
        sha256: createHash("sha256").update(response.body).digest("hex"),
        metadata: output.metadata ?? {},
        // What the bytes themselves say (an image's size, a video's size and length), apart from what the provider said.
        media: mediaFactsOf(response.body, contentType),
      });
    }
  } catch (error) {
    await handleCaptureFailure(context, job, error, status);
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

async function handleCaptureFailure(context: EngineContext, job: Job, error: unknown, status: Extract<ProviderStatus, { kind: "succeeded" }>): Promise<void> {
  const { store, clock, owner } = context;
  const now = clock.now();
  if (context.signal.aborted) return; // stopping: the job stays `capturing` and is resumed by the next engine
  if (error instanceof OutputSaveError) {
    // A local problem never ends a paid job: it stays `capturing` (re-read for fresh links each try)
    // until the folder works again or a re-run points it at another folder.
    const reason = `rendered, but ${error.message}; saving again in ${LOCAL_SAVE_RETRY_MS / 1_000} s (or re-run the command with a writable --out)`;
    const updated = await store.updateJob(
      job.id,
      { state: "capturing", leaseOwner: owner },
      { nextAttemptAt: now + LOCAL_SAVE_RETRY_MS, blockedCode: "output_unwritable", reason },
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

import { z } from "zod";
import type { CallContext } from "../adapter.js";
import { authorizedRequest, type ETokenSource } from "./auth.js";
import { callErrorFrom } from "./errors.js";
import { UPLOAD_VALIDITY_MS, type EPendingUpload } from "./facts.js";

/** Re-upload this long before the 7 days run out, so the provider never reads an upload that lapsed after the submit. */
export const REUPLOAD_MARGIN_MS = 3_600_000;

/**
 * spec E: the answer to /v2/storage/image is not shown. mediagate reads the
 * upload id from `images[0].id`, else a top-level `id` or `uploadId`, and
 * fails with the raw answer kept otherwise.
 */
const UploadAnswer = z.union([
  z.object({ images: z.array(z.object({ id: z.string().min(1) })).min(1) }).transform((answer) => answer.images[0]!.id),
  z.object({ id: z.string().min(1) }).transform((answer) => answer.id),
  z.object({ uploadId: z.string().min(1) }).transform((answer) => answer.uploadId),
]);

interface UploadRecord {
  uploadId: string;
  /** When the upload request was sent (the context's clock): the 7 days count from there at the latest. */
  uploadedAt: number;
}

/**
 * Source images uploaded by this adapter, by SHA-256 of their bytes: reused
 * while the upload is valid (spec E: 7 days), uploaded again after. Kept in
 * memory only: a new process uploads again, which costs one request.
 */
export class EUploads {
  private readonly byDigest = new Map<string, UploadRecord>();

  constructor(
    private readonly base: string,
    private readonly tokens: ETokenSource,
  ) {}

  async uploadIdFor(upload: EPendingUpload, context: CallContext): Promise<string> {
    const known = this.byDigest.get(upload.sha256);
    if (known && context.clock.now() - known.uploadedAt < UPLOAD_VALIDITY_MS - REUPLOAD_MARGIN_MS) return known.uploadId;
    // Two jobs with the same new image at once may both upload it: harmless, and simpler than sharing one caller's request.
    return (await this.upload(upload, context)).uploadId;
  }

  private async upload(upload: EPendingUpload, context: CallContext): Promise<UploadRecord> {
    const uploadedAt = context.clock.now();
    const url = `${this.base}/v2/storage/image`;
    // The upload's body format is not shown: the raw bytes with their media type. A resent upload only leaves an unused copy.
    const response = await authorizedRequest(this.tokens, context, (headers) => ({
      method: "POST",
      url,
      headers: { ...headers, "content-type": upload.mediaType },
      body: Buffer.from(upload.base64, "base64"),
      retry: "idempotent",
    }));
    const action = `the upload of ${upload.fileName} (${upload.field})`;
    if (response.status < 200 || response.status >= 300) throw callErrorFrom(context.http, response, action);
    const answer = UploadAnswer.safeParse(response.json());
    if (!answer.success) throw context.http.errorFrom(response, "invalid_response", `E answered ${action} without an upload id`);
    const record = { uploadId: answer.data, uploadedAt };
    this.byDigest.set(upload.sha256, record);
    return record;
  }
}

import { z } from "zod";
import { IMAGE_MEDIA_TYPES } from "../../core/image-type.js";

/**
 * spec E submit request: the fields of expand, fill, composite and similar
 * are "not shown". mediagate's choice, recorded with every job that has
 * source images.
 */
export const SOURCE_IMAGE_FORMAT =
  "E's spec shows no source-image field: mediagate uploads each local file to /v2/storage/image at submit time and sends it as { source: { uploadId } } in `image` (fill's second file in `mask`)";

/** spec E Endpoints: an upload to /v2/storage/image is valid 7 days. */
export const UPLOAD_VALIDITY_MS = 7 * 24 * 3_600_000;

/** The image types mediagate recognises and uploads with their media type; the types E accepts are not shown. */
export const UPLOAD_MEDIA_TYPES = IMAGE_MEDIA_TYPES;
export type EUploadMediaType = (typeof UPLOAD_MEDIA_TYPES)[number];

/**
 * A local source image waiting to be uploaded at submit time. Validation
 * does no I/O, so the bytes travel with the job as base64 in its facts (the
 * stored, JSON-serialisable part); the body holds only what is sent as is.
 */
export const EPendingUpload = z.object({
  /** The body field that receives `{ source: { uploadId } }`. */
  field: z.string().min(1),
  fileName: z.string(),
  mediaType: z.enum(UPLOAD_MEDIA_TYPES),
  /** Hex SHA-256 of the bytes: the key of the adapter's upload cache. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  byteLength: z.number().int().positive(),
  base64: z.string().min(1),
});
export type EPendingUpload = z.infer<typeof EPendingUpload>;

/** What `validate` derived, stored with the job. */
export interface EFacts {
  operation: string;
  model: string;
  /** The path the submit goes to (under `{e_base_url}`), and whether the spec shows it. */
  path: string;
  pathShown: boolean;
  /** Local files to upload before the submit; their fields are added to the body then. */
  uploads: EPendingUpload[];
  sourceImageFormat: string | null;
}

/** The part of the facts submit needs, checked again when read back from the store. */
export const ESubmitFacts = z.object({ uploads: z.array(EPendingUpload) });

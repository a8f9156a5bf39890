import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import { pngSize } from "../media/png.js";
import { EApiError, validationError } from "./errors.js";

/** spec E Endpoints: `POST {e_base_url}/v2/storage/image` takes a source image. The accepted types are the sandbox's choice. */
export const E_UPLOAD_CONTENT_TYPES = ["image/png", "image/jpeg", "image/webp"] as const;
export type EUploadContentType = (typeof E_UPLOAD_CONTENT_TYPES)[number];
/** Not shown by the spec; the sandbox refuses larger uploads with 413. */
export const E_UPLOAD_MAX_BYTES = 15 * 1024 * 1024;

export interface EUploadRecord {
  id: string;
  clientId: string;
  contentType: EUploadContentType;
  bytes: number;
  /** Read from a PNG's header; undefined for other types. */
  size?: { width: number; height: number };
  /** Virtual ms. */
  uploadedAt: number;
  expiresAt: number;
}

const MAGIC: Record<EUploadContentType, (bytes: Buffer) => boolean> = {
  "image/png": (bytes) => pngSize(bytes) !== null,
  "image/jpeg": (bytes) => bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff,
  "image/webp": (bytes) => bytes.length > 12 && bytes.toString("ascii", 0, 4) === "RIFF" && bytes.toString("ascii", 8, 12) === "WEBP",
};

export class EUploads {
  private readonly byId = new Map<string, EUploadRecord>();

  constructor(
    private readonly clock: Clock,
    /** spec E Endpoints: the upload is valid 7 days. */
    private readonly validityMs: number,
  ) {}

  /** Stores the bytes' description (the sandbox never needs the pixels back) after checking they are the image type declared. */
  add(clientId: string, contentType: EUploadContentType, body: unknown): EUploadRecord {
    if (!Buffer.isBuffer(body) || body.length === 0) throw validationError("body", "the image bytes are missing");
    if (!MAGIC[contentType](body)) throw validationError("body", `the bytes are not a ${contentType} image`);
    const uploadedAt = this.clock.now();
    const size = pngSize(body);
    const record: EUploadRecord = {
      id: randomUUID(),
      clientId,
      contentType,
      bytes: body.length,
      ...(size ? { size } : {}),
      uploadedAt,
      expiresAt: uploadedAt + this.validityMs,
    };
    this.byId.set(record.id, record);
    return record;
  }

  /**
   * A reference in a submit body. Unknown (or another organisation's) → 400
   * `upload_not_found`; older than its validity → 400 `upload_expired`. The
   * spec does not give the status of either; 400 names the field at fault.
   */
  resolve(clientId: string, uploadId: string, field: string): EUploadRecord {
    const record = this.byId.get(uploadId);
    if (!record || record.clientId !== clientId) {
      throw new EApiError(400, "upload_not_found", `${field}: no upload ${uploadId}`, field);
    }
    if (this.clock.now() >= record.expiresAt) {
      throw new EApiError(400, "upload_expired", `${field}: upload ${uploadId} is older than its 7-day validity`, field);
    }
    return record;
  }

  all(): EUploadRecord[] {
    return [...this.byId.values()];
  }
}

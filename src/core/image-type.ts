/**
 * The image types mediagate sends as files, recognised by their first bytes
 * (the "magic number"), never by the file's name. No spec publishes the image
 * types a provider reads (D: "The value format of reference fields … not
 * shown"; E: the upload's body format is not shown; A and B take links, C and
 * F no images), so these three are mediagate's choice: the formats image
 * generation APIs commonly read. Anything else is refused before it is sent
 * and paid for.
 *
 * Three signatures are compared by hand rather than with the npm package
 * file-type (21.3.4, the last major for Node 20; 22 needs Node 22), measured
 * on the files in test/core/images, where it agreed: its only answer is a
 * Promise (fileTypeFromBuffer) and all seven calls, in six modules, are
 * synchronous checks; it adds seven packages (664 KB) for comparisons of at
 * most 12 bytes; a call took 35 µs against 1 µs, its import 78 ms; and the 8
 * bytes of a PNG signature alone get no answer from it (it reads on to tell
 * PNG from APNG).
 */
export const IMAGE_MEDIA_TYPES = ["image/png", "image/jpeg", "image/webp"] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

export const IMAGE_TYPES_ALLOWED = "a PNG, JPEG or WebP image";

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The image type of `bytes` by their signature, or null when they are not a PNG, JPEG or WebP image. */
export function imageTypeOf(bytes: Uint8Array): ImageMediaType | null {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length >= 8 && buffer.subarray(0, 8).equals(PNG_SIGNATURE)) return "image/png";
  // JPEG: start-of-image FF D8, then the first marker's FF.
  if (buffer.length >= 3 && buffer[0] === 0xff && buffer[1] === 0xd8 && buffer[2] === 0xff) return "image/jpeg";
  // WebP: a RIFF container whose form type is WEBP.
  if (buffer.length >= 12 && buffer.toString("latin1", 0, 4) === "RIFF" && buffer.toString("latin1", 8, 12) === "WEBP") return "image/webp";
  return null;
}

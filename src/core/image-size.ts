/**
 * Pixel sizes read by hand from an image's own header. The npm package
 * image-size (2.1.0: synchronous, no dependencies, 512 KB installed) was
 * measured against this module on the real files in test/core/images, every
 * length each can be cut to, and hostile bytes, and kept out. It agreed on
 * PNG, baseline, progressive and CMYK JPEG, WebP lossy, lossless and
 * extended, and GIF, but:
 * - after a JPEG's first marker, 8 MiB of zero bytes took it 1.6-1.9 s (it
 *   steps through unknown bytes one at a time), blocking the process; here:
 *   null in under 1 ms;
 * - after that marker, 8 MiB of random bytes gave it a made-up size
 *   (44588x62211, then 22326x21580); here: null;
 * - an arithmetic-coded JPEG (SOF9) made it throw at every length; here: its
 *   size;
 * - the lossless WebP cut to 16-23 bytes gave it 1x1, 45x1 or 301x3 (of
 *   301x67); here: null;
 * - it reads through a view's whole ArrayBuffer, so an image cut short in one
 *   of Node's pooled Buffers (any small Buffer.from) gave it the pool's next
 *   bytes as a size: 4 to 14 wrong answers per fixture, unless every image
 *   is copied first.
 * Sizes are the stored ones: an EXIF orientation (which image-size also
 * reports) is not applied, since no caller turns images: D's reference facts
 * count pixels, and an output's facts describe its file.
 */
export interface ImageSize {
  width: number;
  height: number;
}

function positive(width: number, height: number): ImageSize | null {
  return width > 0 && height > 0 ? { width, height } : null;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** PNG: the IHDR chunk comes first, width and height as 32-bit big-endian integers. */
function pngSize(bytes: Buffer): ImageSize | null {
  if (bytes.length < 24 || !bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return null;
  if (bytes.toString("latin1", 12, 16) !== "IHDR") return null;
  return positive(bytes.readUInt32BE(16), bytes.readUInt32BE(20));
}

/** JPEG start-of-frame markers (SOF0–SOF15, except DHT 0xC4, JPG 0xC8 and DAC 0xCC), which carry the frame size. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** JPEG: walk the marker segments to the first start-of-frame; height then width as 16-bit big-endian integers. */
function jpegSize(bytes: Buffer): ImageSize | null {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return null;
  let offset = 2;
  while (offset + 4 <= bytes.length) {
    if (bytes[offset] !== 0xff) return null;
    const marker = bytes[offset + 1]!;
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2; // markers without a length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null; // end of image, or scan data before any frame header
    const length = bytes.readUInt16BE(offset + 2);
    if (isStartOfFrame(marker)) {
      if (offset + 9 > bytes.length) return null;
      return positive(bytes.readUInt16BE(offset + 7), bytes.readUInt16BE(offset + 5));
    }
    if (length < 2) return null;
    offset += 2 + length;
  }
  return null;
}

/** The first chunk of a WebP file (RFC 9649): its FourCC at byte 12, its payload from byte 20. */
const WEBP_PAYLOAD = 20;

/** WebP (RFC 9649): the size sits in the first chunk, written differently by each of its three forms. */
function webpSize(bytes: Buffer): ImageSize | null {
  if (bytes.length < WEBP_PAYLOAD || bytes.toString("latin1", 0, 4) !== "RIFF" || bytes.toString("latin1", 8, 12) !== "WEBP") return null;
  const payload = bytes.subarray(WEBP_PAYLOAD);
  switch (bytes.toString("latin1", 12, 16)) {
    // Lossy: a 3-byte frame tag, the start code 9D 01 2A, then 14-bit width and height (the top 2 bits are upscaling).
    case "VP8 ":
      if (payload.length < 10 || payload[3] !== 0x9d || payload[4] !== 0x01 || payload[5] !== 0x2a) return null;
      return positive(payload.readUInt16LE(6) & 0x3fff, payload.readUInt16LE(8) & 0x3fff);
    // Lossless: the signature 2F, then width - 1 and height - 1 in 14 bits each, little-endian.
    case "VP8L": {
      if (payload.length < 5 || payload[0] !== 0x2f) return null;
      const bits = payload.readUInt32LE(1);
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    // Extended: flags and 3 reserved bytes, then canvas width - 1 and height - 1 in 24 bits each.
    case "VP8X":
      if (payload.length < 10) return null;
      return { width: payload.readUIntLE(4, 3) + 1, height: payload.readUIntLE(7, 3) + 1 };
    default:
      return null;
  }
}

/** GIF: the logical screen's width and height follow the signature, 16-bit little-endian. */
function gifSize(bytes: Buffer): ImageSize | null {
  if (bytes.length < 10) return null;
  const signature = bytes.toString("latin1", 0, 6);
  if (signature !== "GIF87a" && signature !== "GIF89a") return null;
  return positive(bytes.readUInt16LE(6), bytes.readUInt16LE(8));
}

/** The pixel size of a PNG, JPEG, WebP or GIF image, or null for any other format or damaged bytes. */
export function imageSizeOf(bytes: Buffer): ImageSize | null {
  return pngSize(bytes) ?? jpegSize(bytes) ?? webpSize(bytes) ?? gifSize(bytes);
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The size of an image given as a string: base64, bare or as a `data:` URL.
 * Null for URLs (mediagate does not fetch them to validate) and for anything
 * it cannot read.
 */
export function imageSizeOfText(value: string): ImageSize | null {
  const payload = value.startsWith("data:") ? value.slice(value.indexOf(",") + 1) : value;
  const compact = payload.replace(/\s+/g, "");
  if (!BASE64.test(compact)) return null;
  return imageSizeOf(Buffer.from(compact, "base64"));
}

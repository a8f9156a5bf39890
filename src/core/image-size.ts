export interface ImageSize {
  width: number;
  height: number;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** PNG: the IHDR chunk comes first, width and height as 32-bit big-endian integers. */
function pngSize(bytes: Buffer): ImageSize | null {
  if (bytes.length < 24 || !bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return null;
  if (bytes.toString("latin1", 12, 16) !== "IHDR") return null;
  const width = bytes.readUInt32BE(16);
  const height = bytes.readUInt32BE(20);
  return width > 0 && height > 0 ? { width, height } : null;
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
      const height = bytes.readUInt16BE(offset + 5);
      const width = bytes.readUInt16BE(offset + 7);
      return width > 0 && height > 0 ? { width, height } : null;
    }
    if (length < 2) return null;
    offset += 2 + length;
  }
  return null;
}

/** The pixel size of a PNG or JPEG image, or null for any other format or damaged bytes. */
export function imageSizeOf(bytes: Buffer): ImageSize | null {
  return pngSize(bytes) ?? jpegSize(bytes);
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

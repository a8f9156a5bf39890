import { imageSizeOf } from "./image-size.js";

/** What a saved output is, read from its own bytes: an image's size, a video's size and length. */
export interface MediaFacts {
  width?: number;
  height?: number;
  /** A video's length in seconds (its `mvhd` duration over its timescale), to the millisecond. */
  duration_s?: number;
}

interface Box {
  type: string;
  /** Offset of the box's content (after its size and type). */
  start: number;
  end: number;
}

/** The ISO base media boxes between `start` and `end`; null when they do not parse (not an MP4/MOV, or damaged). */
function boxesIn(bytes: Buffer, start: number, end: number): Box[] | null {
  const boxes: Box[] = [];
  let offset = start;
  while (offset + 8 <= end) {
    let size = bytes.readUInt32BE(offset);
    let header = 8;
    if (size === 1) {
      if (offset + 16 > end) return null;
      size = Number(bytes.readBigUInt64BE(offset + 8));
      header = 16;
    } else if (size === 0) {
      size = end - offset;
    }
    if (size < header || offset + size > end) return null;
    boxes.push({ type: bytes.toString("latin1", offset + 4, offset + 8), start: offset + header, end: offset + size });
    offset += size;
  }
  return boxes;
}

/** The movie header's length in seconds: version 1 widens its times and duration to 64 bits. */
function movieSeconds(bytes: Buffer, mvhd: Box): number | undefined {
  const version = bytes.readUInt8(mvhd.start);
  const timescaleAt = mvhd.start + (version === 1 ? 20 : 12);
  if (timescaleAt + (version === 1 ? 12 : 8) > mvhd.end) return undefined;
  const timescale = bytes.readUInt32BE(timescaleAt);
  const duration = version === 1 ? Number(bytes.readBigUInt64BE(timescaleAt + 4)) : bytes.readUInt32BE(timescaleAt + 4);
  if (timescale === 0) return undefined;
  return Math.round((duration / timescale) * 1000) / 1000;
}

/** The size of the first track whose `tkhd` gives one (a video track; audio tracks have 0 × 0). */
function trackSize(bytes: Buffer, moov: Box): { width: number; height: number } | undefined {
  for (const trak of boxesIn(bytes, moov.start, moov.end) ?? []) {
    if (trak.type !== "trak") continue;
    const tkhd = boxesIn(bytes, trak.start, trak.end)?.find((box) => box.type === "tkhd");
    if (!tkhd) continue;
    // tkhd: version 1 widens its times and duration to 64 bits; width and height are 16.16 fixed point, last.
    const widthAt = tkhd.start + (bytes.readUInt8(tkhd.start) === 1 ? 88 : 76);
    if (widthAt + 8 > tkhd.end) continue;
    const width = bytes.readUInt32BE(widthAt) >>> 16;
    const height = bytes.readUInt32BE(widthAt + 4) >>> 16;
    if (width > 0 && height > 0) return { width, height };
  }
  return undefined;
}

function videoFacts(bytes: Buffer): MediaFacts {
  const top = boxesIn(bytes, 0, bytes.length);
  const moov = top?.find((box) => box.type === "moov");
  if (!moov) return {};
  const mvhd = boxesIn(bytes, moov.start, moov.end)?.find((box) => box.type === "mvhd");
  const seconds = mvhd ? movieSeconds(bytes, mvhd) : undefined;
  return { ...trackSize(bytes, moov), ...(seconds !== undefined ? { duration_s: seconds } : {}) };
}

/**
 * The facts a saved output's bytes carry, where mediagate can read them: PNG,
 * JPEG, WebP and GIF sizes, MP4 and MOV sizes and lengths. Nothing for other types, or
 * bytes that do not parse: a fact is never guessed.
 */
export function mediaFactsOf(bytes: Buffer, contentType: string): MediaFacts {
  if (contentType.startsWith("image/")) return imageSizeOf(bytes) ?? {};
  if (contentType === "video/mp4" || contentType === "video/quicktime") return videoFacts(bytes);
  return {};
}

/**
 * Reads what a downloaded video really is, from its ISO base media boxes:
 * the `ftyp` major brand, and the size and codec of the video track. Tests
 * use it to check that an emulator served a real MP4/MOV of the requested
 * ratio, without any video tool installed.
 */
export interface VideoProbe {
  /** `ftyp` major brand, e.g. "isom" (MP4) or "qt  " (QuickTime). */
  majorBrand: string;
  container: "mp4" | "mov";
  /** Sample-entry type of the video track, e.g. "avc1" (H.264). */
  codec: string;
  /** From the video track's `tkhd` (16.16 fixed point, integer part). */
  width: number;
  height: number;
}

interface Box {
  type: string;
  /** Offset of the box's content (after size and type) in the buffer. */
  start: number;
  end: number;
}

function children(bytes: Buffer, start: number, end: number): Box[] {
  const boxes: Box[] = [];
  let offset = start;
  while (offset + 8 <= end) {
    let size = bytes.readUInt32BE(offset);
    const type = bytes.toString("latin1", offset + 4, offset + 8);
    let header = 8;
    if (size === 1) {
      size = Number(bytes.readBigUInt64BE(offset + 8));
      header = 16;
    } else if (size === 0) {
      size = end - offset;
    }
    if (size < header || offset + size > end) throw new Error(`malformed box "${type}" at ${offset}`);
    boxes.push({ type, start: offset + header, end: offset + size });
    offset += size;
  }
  return boxes;
}

function child(bytes: Buffer, parent: Box, type: string): Box | undefined {
  return children(bytes, parent.start, parent.end).find((box) => box.type === type);
}

function trackSize(bytes: Buffer, tkhd: Box): { width: number; height: number } {
  const version = bytes.readUInt8(tkhd.start);
  // tkhd: version 1 widens creation time, modification time and duration to 64 bits.
  const widthOffset = tkhd.start + (version === 1 ? 88 : 76);
  return { width: bytes.readUInt32BE(widthOffset) >>> 16, height: bytes.readUInt32BE(widthOffset + 4) >>> 16 };
}

/** Throws when the bytes are not an MP4/MOV with a video track. */
export function probeVideo(bytes: Buffer): VideoProbe {
  const top = children(bytes, 0, bytes.length);
  const ftyp = top.find((box) => box.type === "ftyp");
  const moov = top.find((box) => box.type === "moov");
  if (!ftyp || !moov) throw new Error("not an ISO media file: no ftyp or moov box");
  const majorBrand = bytes.toString("latin1", ftyp.start, ftyp.start + 4);
  for (const trak of children(bytes, moov.start, moov.end).filter((box) => box.type === "trak")) {
    const tkhd = child(bytes, trak, "tkhd");
    const mdia = child(bytes, trak, "mdia");
    const hdlr = mdia && child(bytes, mdia, "hdlr");
    // hdlr: version/flags (4), pre-defined (4), then the handler type.
    if (!tkhd || !mdia || !hdlr || bytes.toString("latin1", hdlr.start + 8, hdlr.start + 12) !== "vide") continue;
    const stbl = ["minf", "stbl"].reduce<Box | undefined>((box, type) => box && child(bytes, box, type), mdia);
    const stsd = stbl && child(bytes, stbl, "stsd");
    // stsd: version/flags (4) and entry count (4) precede the first sample entry.
    const entry = stsd && children(bytes, stsd.start + 8, stsd.end)[0];
    return {
      majorBrand,
      container: majorBrand === "qt  " ? "mov" : "mp4",
      codec: entry?.type ?? "unknown",
      ...trackSize(bytes, tkhd),
    };
  }
  throw new Error("no video track");
}

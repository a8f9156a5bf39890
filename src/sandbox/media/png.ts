import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { crc32, deflate, deflateSync } from "node:zlib";

const deflateAsync = promisify(deflate);
/** Both renders compress alike: the result hosts' bytes are `renderPng`'s. */
const COMPRESSION = { level: 6 };

/** A small deterministic generator (mulberry32), seeded from prompt and seed. */
function generator(seedText: string): () => number {
  let state = createHash("sha256").update(seedText).digest().readUInt32LE(0);
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typeAndData = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData) >>> 0);
  return Buffer.concat([length, typeAndData, crc]);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A real RGB PNG of the given size, drawn from prompt and seed: a two-colour
 * gradient with a few discs. The same prompt and seed give the same bytes.
 */
export function renderPng(width: number, height: number, prompt: string, seed: number): Buffer {
  return pngOf(width, height, deflateSync(pixelRows(width, height, prompt, seed), COMPRESSION));
}

/**
 * The same bytes as `renderPng`, compressed off the main thread: a result host
 * serving a wave of downloads answers nothing else meanwhile (24 images of
 * 256×256 at once, drawn and compressed on the main thread at 2 ms or more
 * each, held the submits and polls that came with them for about 70 ms).
 */
export async function renderPngAsync(width: number, height: number, prompt: string, seed: number): Promise<Buffer> {
  return pngOf(width, height, await deflateAsync(pixelRows(width, height, prompt, seed), COMPRESSION));
}

/**
 * The image's rows as PNG filter-0 scanlines. Each pixel's gradient colour
 * depends on x + y only, so it is computed once per diagonal; each disc is
 * drawn over the rows it crosses, in order (a later disc covers an earlier),
 * the exact inside test kept for the pixels of its span.
 */
function pixelRows(width: number, height: number, prompt: string, seed: number): Buffer {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new RangeError(`bad PNG size ${width}x${height}`);
  }
  const random = generator(`${prompt}\u0000${seed}`);
  const from = [random() * 255, random() * 255, random() * 255] as const;
  const to = [random() * 255, random() * 255, random() * 255] as const;
  const discs = Array.from({ length: 3 + Math.floor(random() * 4) }, () => ({
    x: random() * width,
    y: random() * height,
    r2: (random() * 0.25 * Math.min(width, height) + 4) ** 2,
    colour: [random() * 255, random() * 255, random() * 255] as const,
  }));

  const diagonals = width + height - 1;
  const gradient = new Uint8Array(diagonals * 3);
  for (let sum = 0; sum < diagonals; sum++) {
    const t = sum / (width + height);
    for (let channel = 0; channel < 3; channel++) gradient[sum * 3 + channel] = from[channel]! + (to[channel]! - from[channel]!) * t;
  }

  const stride = width * 3 + 1;
  const raw = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const row = y * stride;
    raw[row] = 0; // filter: none
    raw.set(gradient.subarray(y * 3, (y + width) * 3), row + 1);
    for (const disc of discs) {
      const dy = y - disc.y;
      const reach = disc.r2 - dy * dy;
      if (reach <= 0) continue;
      // One pixel beyond the span each side: the inside test below decides, as it did for every pixel.
      const half = Math.sqrt(reach);
      const first = Math.max(0, Math.floor(disc.x - half) - 1);
      const last = Math.min(width - 1, Math.ceil(disc.x + half) + 1);
      for (let x = first; x <= last; x++) {
        const dx = x - disc.x;
        if (dx * dx + dy * dy >= disc.r2) continue;
        const offset = row + 1 + x * 3;
        raw[offset] = disc.colour[0];
        raw[offset + 1] = disc.colour[1];
        raw[offset + 2] = disc.colour[2];
      }
    }
  }
  return raw;
}

function pngOf(width: number, height: number, compressed: Buffer): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: truecolour RGB
  header[10] = 0;
  header[11] = 0;
  header[12] = 0;
  return Buffer.concat([PNG_SIGNATURE, chunk("IHDR", header), chunk("IDAT", compressed), chunk("IEND", Buffer.alloc(0))]);
}

/** Reads width and height from a PNG's IHDR, or null when the bytes are not a PNG. */
export function pngSize(bytes: Buffer): { width: number; height: number } | null {
  if (bytes.length < 24 || !bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return null;
  if (bytes.toString("ascii", 12, 16) !== "IHDR") return null;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

import { VIDEO_FIXTURES_BASE64 } from "./video-fixtures.js";

/** The concrete ratios a video provider can be asked for ("adaptive" is resolved by the emulator). */
export const VIDEO_RATIOS = ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16"] as const;
export type VideoRatio = (typeof VIDEO_RATIOS)[number];

export const VIDEO_CONTAINERS = ["mp4", "mov"] as const;
export type VideoContainer = (typeof VIDEO_CONTAINERS)[number];

const decoded = new Map<string, Buffer>();

/**
 * A real one-second H.264 video of the given ratio and container, from the
 * committed fixtures (see media/video/README.md). The same call returns the
 * same bytes; callers must not modify them.
 */
export function videoFor(ratio: VideoRatio, container: VideoContainer): Buffer {
  const key = `${ratio.replace(":", "x")}.${container}`;
  const cached = decoded.get(key);
  if (cached) return cached;
  const base64 = VIDEO_FIXTURES_BASE64[key];
  if (base64 === undefined) throw new RangeError(`no video fixture for ${ratio} ${container}`);
  const bytes = Buffer.from(base64, "base64");
  decoded.set(key, bytes);
  return bytes;
}

/**
 * The fixture of `videoFor` with a top-level `free` box appended that names
 * the task: still a valid MP4/MOV (readers skip `free` boxes), but each task's
 * file has its own bytes and sha256, so a test can tell whose video landed
 * where. Same task, same bytes.
 */
export function taggedVideo(ratio: VideoRatio, container: VideoContainer, tag: string): Buffer {
  const payload = Buffer.from(`mediagate sandbox: ${tag}`, "utf8");
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + payload.length, 0);
  header.write("free", 4, "latin1");
  return Buffer.concat([videoFor(ratio, container), header, payload]);
}

/** The Content-Type a result download is served with. */
export function videoContentType(container: VideoContainer): string {
  return container === "mov" ? "video/quicktime" : "video/mp4";
}

export function isVideoRatio(value: unknown): value is VideoRatio {
  return typeof value === "string" && (VIDEO_RATIOS as readonly string[]).includes(value);
}

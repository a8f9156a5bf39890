import { invalidParameter } from "./errors.js";

/**
 * Content items of a create-task request. The spec names `text` and
 * `image_url`; the type names of video and audio items are "not shown", so
 * the sandbox uses `video_url` and `audio_url`, shaped like `image_url`:
 * `{ "type": "video_url", "video_url": { "url": "…" }, "role": "reference_video" }`.
 */
export type AContentType = "text" | "image_url" | "video_url" | "audio_url";
export type ARole = "first_frame" | "last_frame" | "reference_image" | "reference_video" | "reference_audio";

export interface ATextItem {
  index: number;
  type: "text";
  text: string;
}

export interface AMediaItem {
  index: number;
  type: Exclude<AContentType, "text">;
  url: string;
  role: ARole;
}

export type AContentItem = ATextItem | AMediaItem;

/** Which roles each media type may carry: an image cannot be a reference_video. */
const ROLES_BY_TYPE: Record<AMediaItem["type"], readonly ARole[]> = {
  image_url: ["first_frame", "last_frame", "reference_image"],
  video_url: ["reference_video"],
  audio_url: ["reference_audio"],
};

/** Media may be linked (http, https) or inline (`data:` URI). */
const URL_SCHEMES = new Set(["http:", "https:", "data:"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseMediaUrl(item: Record<string, unknown>, type: AMediaItem["type"], param: string): string {
  const holder = item[type];
  if (!isRecord(holder)) {
    throw invalidParameter(`${param}.${type}`, `an item of type ${type} needs an object "${type}" with "url"`);
  }
  const url = holder.url;
  if (typeof url !== "string" || url.length === 0) throw invalidParameter(`${param}.${type}.url`, "must be a non-empty string");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidParameter(`${param}.${type}.url`, "is not a URL");
  }
  if (!URL_SCHEMES.has(parsed.protocol)) throw invalidParameter(`${param}.${type}.url`, "must be an http, https or data URL");
  return url;
}

function parseItem(value: unknown, index: number): AContentItem {
  const param = `content[${index}]`;
  if (!isRecord(value)) throw invalidParameter(param, "must be an object");
  const type = value.type;
  if (type === "text") {
    if (typeof value.text !== "string" || value.text.trim().length === 0) {
      throw invalidParameter(`${param}.text`, "a text item needs a non-empty string");
    }
    return { index, type, text: value.text };
  }
  if (type !== "image_url" && type !== "video_url" && type !== "audio_url") {
    throw invalidParameter(`${param}.type`, "must be one of text, image_url, video_url, audio_url");
  }
  const url = parseMediaUrl(value, type, param);
  // spec A content item: role is required on media items.
  const role = value.role;
  if (role === undefined) throw invalidParameter(`${param}.role`, "is required on media items");
  const allowed = ROLES_BY_TYPE[type];
  if (typeof role !== "string" || !(allowed as readonly string[]).includes(role)) {
    throw invalidParameter(`${param}.role`, `must be one of ${allowed.join(", ")} for ${type}`);
  }
  return { index, type, url, role: role as ARole };
}

export function parseContent(value: unknown): AContentItem[] {
  if (!Array.isArray(value)) throw invalidParameter("content", "is required and must be an array");
  if (value.length === 0) throw invalidParameter("content", "must not be empty");
  const items = value.map(parseItem);
  // One prompt per task: the prompt-suffix flags are read from it.
  if (items.filter((item) => item.type === "text").length > 1) {
    throw invalidParameter("content", "at most one text item");
  }
  return items;
}

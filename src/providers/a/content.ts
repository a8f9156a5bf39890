import { InputError } from "../../core/errors.js";
import type { AWireNames } from "./wire-names.js";

/** spec A content item roles, required on media items. */
export const A_ROLES = ["first_frame", "last_frame", "reference_image", "reference_video", "reference_audio"] as const;
export type ARole = (typeof A_ROLES)[number];
export type AMediaKind = "image" | "video" | "audio";

/** The roles each media kind can carry: an image is a frame or a reference image, a video only a reference video. */
const ROLES_BY_KIND: Record<AMediaKind, readonly ARole[]> = {
  image: ["first_frame", "last_frame", "reference_image"],
  video: ["reference_video"],
  audio: ["reference_audio"],
};

export interface ATextItem {
  kind: "text";
  text: string;
}

export interface AMediaItem {
  kind: AMediaKind;
  role: ARole;
  url: string;
}

export type AContentItem = ATextItem | AMediaItem;

/** Media links may be http(s) or inline `data:` URIs; the spec types them only as "string (URL)". */
const URL_SCHEMES = new Set(["http:", "https:", "data:"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function typeNames(names: AWireNames): Record<AMediaKind, string> {
  return { image: "image_url", video: names.videoItemType, audio: names.audioItemType };
}

function checkKeys(item: Record<string, unknown>, allowed: readonly string[], field: string): void {
  for (const key of Object.keys(item)) {
    if (!allowed.includes(key)) throw new InputError(`${field}.${key}`, "is not a field of this content item", allowed.join(", "));
  }
}

function parseUrl(holder: unknown, field: string): string {
  if (!isRecord(holder)) throw new InputError(field, "must be an object with a url", `{ "url": "https://…" }`);
  checkKeys(holder, ["url"], field);
  const url = holder.url;
  if (typeof url !== "string" || url.length === 0) throw new InputError(`${field}.url`, "must be a non-empty string");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InputError(`${field}.url`, "is not a URL");
  }
  if (!URL_SCHEMES.has(parsed.protocol)) throw new InputError(`${field}.url`, `scheme ${parsed.protocol} is not accepted`, "http, https, data");
  return url;
}

function parseItem(value: unknown, field: string, names: AWireNames): AContentItem {
  if (!isRecord(value)) throw new InputError(field, "must be an object");
  const type = value.type;
  if (type === "text") {
    // spec A: role is required on media items; a text item is the prompt and has none.
    checkKeys(value, ["type", "text"], field);
    if (typeof value.text !== "string" || value.text.trim().length === 0) throw new InputError(`${field}.text`, "must be a non-empty string");
    return { kind: "text", text: value.text };
  }
  const byType = typeNames(names);
  const kind = (Object.keys(byType) as AMediaKind[]).find((each) => byType[each] === type);
  if (!kind) throw new InputError(`${field}.type`, `unknown item type ${JSON.stringify(type)}`, ["text", ...Object.values(byType)].join(", "));
  const typeName = byType[kind];
  checkKeys(value, ["type", typeName, "role"], field);
  const url = parseUrl(value[typeName], `${field}.${typeName}`);
  const role = value.role;
  if (role === undefined) throw new InputError(`${field}.role`, "is required on media items", ROLES_BY_KIND[kind].join(", "));
  if (typeof role !== "string" || !(ROLES_BY_KIND[kind] as readonly string[]).includes(role)) {
    throw new InputError(`${field}.role`, `${JSON.stringify(role)} is not a role of a ${typeName} item`, ROLES_BY_KIND[kind].join(", "));
  }
  return { kind, role: role as ARole, url };
}

/**
 * The native `content` array, checked item by item. At most one text item:
 * the spec calls it "the prompt", and the prompt-suffix flags are read from it.
 */
export function parseContentItems(value: unknown, names: AWireNames): AContentItem[] {
  if (!Array.isArray(value)) throw new InputError("content", "must be an array of content items");
  const items = value.map((item, index) => parseItem(item, `content[${index}]`, names));
  if (items.filter((item) => item.kind === "text").length > 1) throw new InputError("content", "takes at most one text item (the prompt)");
  return items;
}

/** An item as it is sent: text, or a media item shaped like the spec's `image_url`. */
export function contentItemBody(item: AContentItem, names: AWireNames): Record<string, unknown> {
  if (item.kind === "text") return { type: "text", text: item.text };
  const typeName = typeNames(names)[item.kind];
  return { type: typeName, [typeName]: { url: item.url }, role: item.role };
}

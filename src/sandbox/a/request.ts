import { VIDEO_CONTAINERS, type VideoContainer, type VideoRatio } from "../media/video.js";
import { parseContent, type AContentItem, type AMediaItem } from "./content.js";
import { invalidParameter } from "./errors.js";
import type { AModel } from "./models.js";
import { parsePromptFlags, type APromptFlagValues } from "./prompt-flags.js";
import { classifyTask, type ATaskKind } from "./task-kind.js";

export const A_RESOLUTIONS = ["480p", "720p", "1080p"] as const;
export const A_RATIOS = ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16", "adaptive"] as const;
export type AResolution = (typeof A_RESOLUTIONS)[number];
export type ARequestedRatio = VideoRatio | "adaptive";

/** A create-task request that passed validation, with defaults applied. */
export interface ATaskRequest {
  model: AModel;
  kind: ATaskKind;
  prompt: string;
  items: AContentItem[];
  ratio: ARequestedRatio;
  /** The ratio of the video actually produced ("adaptive" resolved). */
  videoRatio: VideoRatio;
  /** Seconds; -1 for video editing. */
  duration: number;
  resolution: AResolution;
  seed: number;
  watermark: boolean;
  cameraFixed: boolean;
  generateAudio: boolean;
  outputFormat: VideoContainer;
  draft: boolean;
  callbackUrl?: string;
  ignoredFlags: string[];
}

export interface ARequestRules {
  models: ReadonlyMap<string, AModel>;
  /** The ratio an "adaptive" task is rendered at. */
  adaptiveRatio: VideoRatio;
  /** Length of a referenced video, when the test knows it (the sandbox never fetches media). */
  referenceVideoSeconds?: (url: string) => number | undefined;
  random(): number;
}

/** Defaults where the spec shows none: 5 s, 720p, 16:9 (adaptive and -1 where a task kind allows only those), mp4, a random seed. */
const DEFAULT_DURATION_SECONDS = 5;
const DEFAULT_RESOLUTION: AResolution = "720p";
const DEFAULT_RATIO: VideoRatio = "16:9";
const MAX_SEED = 4_294_967_295;

/** spec A task kinds: these need ratio adaptive (and editing needs duration -1). */
const ADAPTIVE_KINDS: ReadonlySet<ATaskKind> = new Set(["first_frame", "video_editing", "video_extension"]);

/**
 * The spec shows no default ratio, so an omitted `ratio` is the service's
 * default, never a refusal: the only value such a task may have (adaptive)
 * for the kinds that require it, 16:9 otherwise. Only a ratio the client sent
 * (body field or prompt flag) can break the adaptive rule.
 */
function defaultRatio(kind: ATaskKind): ARequestedRatio {
  return ADAPTIVE_KINDS.has(kind) ? "adaptive" : DEFAULT_RATIO;
}

/** Likewise an omitted `duration`: -1 for video editing (the only value it may have), 5 s otherwise. */
function defaultDuration(kind: ATaskKind): number {
  return kind === "video_editing" ? -1 : DEFAULT_DURATION_SECONDS;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalBoolean(body: Record<string, unknown>, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw invalidParameter(field, "must be a boolean");
  return value;
}

function optionalInteger(body: Record<string, unknown>, field: string): number | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value)) throw invalidParameter(field, "must be an integer");
  return value;
}

function optionalOneOf<T extends string>(body: Record<string, unknown>, field: string, allowed: readonly T[]): T | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw invalidParameter(field, `must be one of ${allowed.join(", ")}`);
  }
  return value as T;
}

function parseCallbackUrl(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw invalidParameter("callback_url", "must be a string");
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw invalidParameter("callback_url", "is not a URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw invalidParameter("callback_url", "must be http or https");
  }
  return value;
}

function checkReferenceVideoLength(items: AContentItem[], rules: ARequestRules): void {
  const video = items.find((item): item is AMediaItem => item.type === "video_url");
  const seconds = video && rules.referenceVideoSeconds?.(video.url);
  // spec A: "the reference video must be 4 to 30 seconds long".
  if (video && seconds !== undefined && (seconds < 4 || seconds > 30)) {
    const message = `the reference video is ${seconds} s long; editing needs 4 to 30 s`;
    throw invalidParameter(`content[${video.index}].video_url`, message);
  }
}

/** Validates a create-task body; throws an AApiError naming the first offending field. */
export function parseTaskRequest(body: unknown, rules: ARequestRules): ATaskRequest {
  if (!isRecord(body)) throw invalidParameter("body", "must be a JSON object");
  if (typeof body.model !== "string" || body.model.length === 0) throw invalidParameter("model", "is required");
  const model = rules.models.get(body.model);
  if (!model) throw invalidParameter("model", `unknown model; available: ${[...rules.models.keys()].join(", ")}`);
  const items = parseContent(body.content);
  const prompt = items.find((item) => item.type === "text")?.text ?? "";

  const fromBody: APromptFlagValues = {
    ratio: optionalOneOf(body, "ratio", A_RATIOS),
    duration: optionalInteger(body, "duration"),
    resolution: optionalOneOf(body, "resolution", A_RESOLUTIONS),
    seed: optionalInteger(body, "seed"),
    cameraFixed: optionalBoolean(body, "camera_fixed"),
    watermark: optionalBoolean(body, "watermark"),
  };
  const generateAudio = optionalBoolean(body, "generate_audio") ?? false;
  const draft = optionalBoolean(body, "draft") ?? false;
  // The container field is not shown; the sandbox uses `output_format`, the name the task object reports it under.
  const outputFormat = optionalOneOf(body, "output_format", VIDEO_CONTAINERS) ?? "mp4";
  const callbackUrl = parseCallbackUrl(body.callback_url);

  // spec A: top-level body fields are the regular way; a flag only fills a field the body left out.
  const flags = parsePromptFlags(prompt);
  const ignoredFlags = [...flags.ignored];
  const fields: APromptFlagValues = { ...flags.values };
  for (const [name, value] of Object.entries(fromBody)) {
    if (value === undefined) continue;
    if (name in flags.values) ignoredFlags.push(`${name} flag (the body field wins)`);
    Object.assign(fields, { [name]: value });
  }

  const kind = classifyTask(items, body.omni_reference_task_type, model);
  const ratio = (fields.ratio as ARequestedRatio | undefined) ?? defaultRatio(kind);
  if (ADAPTIVE_KINDS.has(kind) && ratio !== "adaptive") {
    throw invalidParameter("ratio", `a ${kind} task needs ratio adaptive`);
  }
  const duration = fields.duration ?? defaultDuration(kind);
  if (kind === "video_editing") {
    if (duration !== -1) throw invalidParameter("duration", "video editing needs duration -1");
    checkReferenceVideoLength(items, rules);
  } else if (duration < 4 || duration > 30) {
    throw invalidParameter("duration", duration === -1 ? "-1 is only for video editing" : "must be 4 to 30 seconds");
  }
  if (fields.seed !== undefined && (fields.seed < -1 || fields.seed > MAX_SEED)) {
    throw invalidParameter("seed", `must be -1 (random) to ${MAX_SEED}`);
  }
  const seed = fields.seed === undefined || fields.seed === -1 ? Math.floor(rules.random() * 2 ** 31) : fields.seed;
  return {
    model,
    kind,
    prompt,
    items,
    ratio,
    videoRatio: ratio === "adaptive" ? rules.adaptiveRatio : ratio,
    duration,
    resolution: (fields.resolution ?? DEFAULT_RESOLUTION) as AResolution,
    seed,
    watermark: fields.watermark ?? false,
    cameraFixed: fields.cameraFixed ?? false,
    generateAudio,
    outputFormat,
    draft,
    ...(callbackUrl !== undefined ? { callbackUrl } : {}),
    ignoredFlags,
  };
}

import { InputError } from "../../core/errors.js";
import { longPromptWarnings } from "../../core/prompt-length.js";
import type { JobRequest, ValidatedRequest } from "../adapter.js";
import { contentItemBody, parseContentItems, type AContentItem } from "./content.js";
import { checkItemLimits, countMedia } from "./item-limits.js";
import { describeModel, formatGeneration, type AGeneration } from "./models.js";
import { A_RATIOS, A_RESOLUTIONS, parsePromptFlags } from "./prompt-flags.js";
import { A_TASK_KIND_RULES, A_TASK_KINDS, deriveTaskKind, isATaskKind, type ATaskKind, type DeclaredKind } from "./task-kind.js";
import type { AWireNames } from "./wire-names.js";

export interface ASchemaSettings {
  names: AWireNames;
  newestGeneration: AGeneration;
  /** Set as `callback_url` on every task (from MEDIAGATE_PUBLIC_URL), or null. */
  callbackUrl: string | null;
}

/** spec A: output length 4 to 30 seconds; -1 only for video editing. */
const MIN_DURATION_SECONDS = 4;
const MAX_DURATION_SECONDS = 30;
const CONTAINERS = ["mp4", "mov"] as const;

/** The order body fields are written in, after model and content. */
const FIELD_ORDER = ["generate_audio", "ratio", "duration", "resolution", "seed", "watermark", "camera_fixed"] as const;
type AField = (typeof FIELD_ORDER)[number];

/** Effective body field values, and where each came from (a body field or a prompt flag), for error messages. */
interface AFields {
  values: Partial<Record<AField, string | number | boolean>>;
  source: Partial<Record<AField, string>>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function knownInputFields(names: AWireNames): string[] {
  return ["prompt", "content", ...FIELD_ORDER, names.containerField, "omni_reference_task_type"];
}

function checkInputFields(input: Record<string, unknown>, names: AWireNames): void {
  const known = knownInputFields(names);
  for (const field of Object.keys(input)) {
    if (known.includes(field)) continue;
    if (field === "callback_url") {
      throw new InputError(field, "is set by mediagate itself (from MEDIAGATE_PUBLIC_URL), so that a callback reaches it");
    }
    if (field === "width" || field === "height") {
      throw new InputError(field, "A has no width or height", "resolution (480p, 720p, 1080p) and ratio");
    }
    if (field === "model") throw new InputError(field, "give the model as the job's model, not in input");
    throw new InputError(field, "is not a field of A's create-task request", known.join(", "));
  }
}

function checkModel(model: string): string {
  if (typeof model !== "string" || model.trim().length === 0 || /\s/.test(model)) {
    throw new InputError("model", "must be a model identifier (no spaces)", "an identifier such as <name>-<major>-<minor>-<yymmdd>");
  }
  return model;
}

function collectItems(request: JobRequest, names: AWireNames): AContentItem[] {
  const { input } = request;
  const items = input.content === undefined ? [] : parseContentItems(input.content, names);
  if (input.prompt !== undefined) {
    if (typeof input.prompt !== "string" || input.prompt.trim().length === 0) throw new InputError("prompt", "must be a non-empty string");
    if (items.some((item) => item.kind === "text")) {
      throw new InputError("prompt", "the prompt is given twice: as prompt and as a text item in content");
    }
    items.unshift({ kind: "text", text: input.prompt });
  }
  for (const [index, image] of (request.images ?? []).entries()) {
    if (typeof image !== "string") {
      throw new InputError(`images[${index}]`, `A takes media as links; the local file ${image.fileName} cannot be sent`, "an http(s) URL");
    }
    // An image given outside `content` (the CLI's --image) is a reference image; frames need a native content item.
    items.push(...parseContentItems([{ type: "image_url", image_url: { url: image }, role: "reference_image" }], names));
  }
  if (items.length === 0) throw new InputError("content", "is required", "a prompt, or content items");
  return items;
}

function readBodyFields(input: Record<string, unknown>, names: AWireNames, warnings: string[]): AFields {
  const fields: AFields = { values: {}, source: {} };
  const set = (field: AField, value: string | number | boolean) => {
    fields.values[field] = value;
    fields.source[field] = field;
  };
  const oneOf = (field: "ratio" | "resolution", allowed: readonly string[]) => {
    const value = input[field];
    if (value === undefined) return;
    if (typeof value !== "string" || !allowed.includes(value)) throw new InputError(field, `${JSON.stringify(value)} is not accepted`, allowed.join(", "));
    set(field, value);
  };
  const integer = (field: "duration" | "seed") => {
    const value = input[field];
    if (value === undefined) return;
    if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new InputError(field, "must be an integer");
    set(field, value);
  };
  const boolean = (field: "generate_audio" | "watermark" | "camera_fixed") => {
    const value = input[field];
    if (value === undefined) return;
    if (typeof value !== "boolean") throw new InputError(field, "must be true or false");
    set(field, value);
  };
  oneOf("ratio", A_RATIOS);
  oneOf("resolution", A_RESOLUTIONS);
  integer("duration");
  integer("seed");
  boolean("generate_audio");
  boolean("watermark");
  boolean("camera_fixed");
  if (fields.values.camera_fixed !== undefined) {
    warnings.push("camera_fixed is known only as the prompt flag --cf; it is sent as a body field as given");
  }
  const container = input[names.containerField];
  if (container !== undefined && (typeof container !== "string" || !(CONTAINERS as readonly string[]).includes(container))) {
    throw new InputError(names.containerField, `${JSON.stringify(container)} is not a container`, CONTAINERS.join(", "));
  }
  return fields;
}

/**
 * spec A prompt-suffix flags: body fields are the regular way. A flag that
 * repeats a body field is reported; one that contradicts it is an error; one
 * alone is also written as the body field (the flag stays in the prompt), so
 * the rules below hold it to the same checks and the provider's weak flag
 * validation cannot change what was validated. `--cf` stays a flag only:
 * camera_fixed is "known only as a prompt flag".
 */
function applyPromptFlags(items: readonly AContentItem[], fields: AFields, warnings: string[]): string[] {
  const prompt = items.find((item) => item.kind === "text");
  if (!prompt || prompt.kind !== "text") return [];
  const flags = parsePromptFlags(prompt.text);
  for (const { flag, field, value } of flags) {
    const written = `prompt flag ${flag} ${String(value)}`;
    const bodyValue = fields.values[field];
    if (bodyValue !== undefined) {
      if (bodyValue !== value) {
        throw new InputError(`prompt flag ${flag}`, `says ${String(value)} but the body field ${field} is ${String(bodyValue)}`, String(bodyValue));
      }
      warnings.push(`${written} repeats the body field ${field}`);
      continue;
    }
    if (field === "camera_fixed") {
      warnings.push(`${written}: camera_fixed is known only as a prompt flag; left in the prompt`);
      continue;
    }
    fields.values[field] = value;
    fields.source[field] = `prompt flag ${flag}`;
    warnings.push(`${written}: also sent as the body field ${field} (body fields are the regular way; flags are weakly validated)`);
  }
  return flags.map((each) => each.flag);
}

function declaredKind(request: JobRequest, names: AWireNames): DeclaredKind | null {
  let fromOperation: ATaskKind | null = null;
  if (request.operation !== undefined) {
    if (!isATaskKind(request.operation)) throw new InputError("operation", `unknown A task kind "${request.operation}"`, A_TASK_KINDS.join(", "));
    fromOperation = request.operation;
  }
  const declared = request.input.omni_reference_task_type;
  let fromField: ATaskKind | null = null;
  if (declared !== undefined) {
    const match = A_TASK_KINDS.find((kind) => names.taskKindValues[kind] === declared);
    if (!match) {
      throw new InputError("omni_reference_task_type", `${JSON.stringify(declared)} is not a task kind`, Object.values(names.taskKindValues).join(", "));
    }
    fromField = match;
  }
  if (fromOperation && fromField && fromOperation !== fromField) {
    throw new InputError("omni_reference_task_type", `declares ${fromField} but the operation is ${fromOperation}`);
  }
  if (fromField) return { kind: fromField, field: "omni_reference_task_type" };
  if (fromOperation) return { kind: fromOperation, field: "operation" };
  return null;
}

/** spec A task kinds: the extra rule of each kind, and the output length 4 to 30 s elsewhere. */
function applyKindRules(kind: ATaskKind, fields: AFields, warnings: string[]): void {
  const rule = A_TASK_KIND_RULES[kind];
  const { values, source } = fields;
  if (rule.ratioAdaptive) {
    // spec A: "ratio must be adaptive"; its default is not shown, so mediagate sends the one value allowed.
    if (values.ratio === undefined) values.ratio = "adaptive";
    else if (values.ratio !== "adaptive") {
      throw new InputError(source.ratio ?? "ratio", `a ${kind} task needs ratio adaptive, not ${String(values.ratio)}`, "adaptive");
    }
  }
  if (rule.durationMinusOne) {
    // spec A Errors: a video-editing task with duration other than -1 is rejected.
    if (values.duration === undefined) values.duration = -1;
    else if (values.duration !== -1) throw new InputError(source.duration ?? "duration", `a video_editing task needs duration -1, not ${String(values.duration)}`, "-1");
    warnings.push("video editing: A requires the reference video to be 4 to 30 seconds long; mediagate cannot check that before sending");
    return;
  }
  const duration = values.duration;
  if (duration === -1) throw new InputError(source.duration ?? "duration", "-1 is only for video editing", `${MIN_DURATION_SECONDS} to ${MAX_DURATION_SECONDS}`);
  if (typeof duration === "number" && (duration < MIN_DURATION_SECONDS || duration > MAX_DURATION_SECONDS)) {
    throw new InputError(source.duration ?? "duration", `${duration} s is outside the output length`, `${MIN_DURATION_SECONDS} to ${MAX_DURATION_SECONDS}`);
  }
}

/** Checks a job for A and builds the exact create-task body. Pure: no I/O. */
export function validateARequest(request: JobRequest, settings: ASchemaSettings): ValidatedRequest {
  const { names } = settings;
  if (!isRecord(request.input)) throw new InputError("input", "must be an object");
  const model = checkModel(request.model);
  checkInputFields(request.input, names);
  const warnings: string[] = [];
  const items = collectItems(request, names);
  const fields = readBodyFields(request.input, names, warnings);
  const declared = declaredKind(request, names);
  const promptFlags = applyPromptFlags(items, fields, warnings);
  const promptField = request.input.prompt !== undefined ? "prompt" : "the text item of content";
  for (const item of items) if (item.kind === "text") warnings.push(...longPromptWarnings(promptField, item.text, "A publishes no prompt length limit"));

  const info = describeModel(model, settings.newestGeneration);
  if (info.warning) warnings.push(info.warning);
  checkItemLimits(items, info.limitsClass, model);
  const kind = deriveTaskKind(items, declared);
  applyKindRules(kind, fields, warnings);

  const body: Record<string, unknown> = { model, content: items.map((item) => contentItemBody(item, names)) };
  for (const field of FIELD_ORDER) if (fields.values[field] !== undefined) body[field] = fields.values[field];
  const container = request.input[names.containerField];
  if (container !== undefined) body[names.containerField] = container;
  // Its allowed values are not shown: sent when the input has it, and for editing and extension, whose intent only it can carry.
  // A kind declared only by `operation` is checked here and not sent.
  if (request.input.omni_reference_task_type !== undefined || kind === "video_editing" || kind === "video_extension") {
    body.omni_reference_task_type = names.taskKindValues[kind];
  }
  if (settings.callbackUrl) body.callback_url = settings.callbackUrl;

  const counts = countMedia(items);
  return {
    provider: "a",
    model,
    operation: kind,
    body,
    warnings,
    facts: {
      taskKind: kind,
      modelGeneration: info.identity ? formatGeneration(info.identity.generation) : null,
      snapshotDate: info.identity?.snapshotDate ?? null,
      itemLimits: info.limitsClass,
      images: counts.image,
      videos: counts.video,
      audio: counts.audio,
      promptFlags,
    },
  };
}

import { InputError } from "../../core/errors.js";
import { longPromptWarnings } from "../../core/prompt-length.js";
import type { JobRequest, ValidatedRequest } from "../adapter.js";

/** What validation needs to know beyond the request itself (from the adapter's configuration). */
export interface FValidationSettings {
  /** When non-empty, the only model slugs accepted. Empty: any well-formed slug (spec F names none). */
  models: readonly string[];
  /** Models on which FLASH is known to work. spec F: FLASH "currently returns 400 for this model version". */
  flashAllowedModels: readonly string[];
  /** When non-empty, the only rendering_speed values accepted. Empty: any value, passed on with a warning. */
  renderingSpeeds: readonly string[];
}

/** What `validate` derived, stored with the job. */
export interface FFacts {
  model: string;
  promptKind: "text" | "json";
  /** The resolution as sent, or null when left to F's default (not shown). */
  resolution: string | null;
  width: number | null;
  height: number | null;
  renderingSpeed: string | null;
  /** Fields the spec does not show, sent as text and unchecked. */
  uncheckedFields: string[];
}

const FLASH = "FLASH";

/** The form fields the spec shows (spec F request); webhook_url is a query parameter set from the job's callback. */
const SHOWN_FIELDS = new Set(["text_prompt", "json_prompt", "resolution", "rendering_speed"]);

/**
 * spec F Endpoints: `<model>` is "a slug containing the model family and
 * major version"; no slug is listed. A slug is one path segment: letters,
 * digits, dot, dash, underscore, starting with a letter or digit.
 */
const MODEL_SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** spec F request: resolution in "width x height form", one example shape: 1024x1024. No bounds are published. */
const RESOLUTION = /^([1-9]\d{0,4})x([1-9]\d{0,4})$/;
const RESOLUTION_ALLOWED = "WIDTHxHEIGHT with a lower-case x, e.g. 1024x1024 (F publishes no other values or bounds)";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function modelOf(model: unknown, settings: FValidationSettings): string {
  const allowed = settings.models.length > 0 ? settings.models.join(", ") : "an F model slug (family and major version), e.g. as F's documentation names it";
  if (typeof model !== "string" || model.length === 0) throw new InputError("model", "is required: the F model slug", allowed);
  if (!MODEL_SLUG.test(model)) throw new InputError("model", `"${model}" is not a model slug (one path segment of letters, digits, '.', '-', '_')`, allowed);
  if (settings.models.length > 0 && !settings.models.includes(model)) throw new InputError("model", `"${model}" is not a configured F model`, allowed);
  return model;
}

/**
 * spec F request: text_prompt and json_prompt are mutually exclusive (both
 * is rejected, spec F Errors). Neither is refused too: a generation needs a prompt.
 */
function promptOf(input: Record<string, unknown>): { kind: "text" | "json"; field: "text_prompt" | "json_prompt"; value: string } {
  const hasText = input.text_prompt !== undefined;
  const hasJson = input.json_prompt !== undefined;
  const allowed = "exactly one of text_prompt (a string) or json_prompt (a JSON object)";
  if (hasText && hasJson) throw new InputError("text_prompt", "text_prompt and json_prompt are mutually exclusive: give one", allowed);
  if (!hasText && !hasJson) throw new InputError("text_prompt", "a prompt is required", allowed);
  if (hasText) {
    const text = input.text_prompt;
    if (typeof text !== "string" || text.trim().length === 0) throw new InputError("text_prompt", "must be a non-empty string", allowed);
    return { kind: "text", field: "text_prompt", value: text };
  }
  return { kind: "json", field: "json_prompt", value: jsonPromptText(input.json_prompt) };
}

/**
 * spec F request: json_prompt is a "structured prompt object"; its schema is
 * not shown. An object is sent as its JSON text; a string is sent as given
 * when it is the JSON text of an object. Sent as a plain form field (the part's
 * content type is not shown).
 */
function jsonPromptText(value: unknown): string {
  const allowed = "a JSON object, or the JSON text of one";
  if (isRecord(value)) {
    if (Object.keys(value).length === 0) throw new InputError("json_prompt", "must not be an empty object", allowed);
    return JSON.stringify(value);
  }
  if (typeof value === "string") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new InputError("json_prompt", "is a string that is not JSON", allowed);
    }
    if (!isRecord(parsed) || Object.keys(parsed).length === 0) throw new InputError("json_prompt", "must be the JSON text of a non-empty object", allowed);
    return value;
  }
  throw new InputError("json_prompt", "must be a structured prompt object", allowed);
}

function resolutionOf(input: Record<string, unknown>): { text: string; width: number; height: number } | null {
  const value = input.resolution;
  // Absent: F's default applies (not shown), so nothing is sent.
  if (value === undefined) return null;
  if (typeof value !== "string") throw new InputError("resolution", "must be a string", RESOLUTION_ALLOWED);
  const match = RESOLUTION.exec(value);
  if (!match) throw new InputError("resolution", `"${value}" is not in width x height form`, RESOLUTION_ALLOWED);
  return { text: value, width: Number(match[1]), height: Number(match[2]) };
}

function renderingSpeedOf(input: Record<string, unknown>, model: string, settings: FValidationSettings): { value: string | null; warning: string | null } {
  const value = input.rendering_speed;
  if (value === undefined) return { value: null, warning: null };
  const known = settings.renderingSpeeds;
  const allowed = known.length > 0 ? known.join(", ") : "F shows only FLASH (refused on this model version); other values are not shown";
  if (typeof value !== "string" || value.trim().length === 0) throw new InputError("rendering_speed", "must be a non-empty string", allowed);
  // spec F Errors: "rendering_speed FLASH on this model version → 400". Refused here, before anything is sent;
  // compared without case, since whether F normalises case is not shown.
  if (value.toUpperCase() === FLASH && !settings.flashAllowedModels.includes(model)) {
    throw new InputError("rendering_speed", `FLASH returns 400 on this model version (${model})`, allowed);
  }
  if (known.length > 0) {
    if (!known.includes(value)) throw new InputError("rendering_speed", `"${value}" is not a configured value`, allowed);
    return { value, warning: null };
  }
  // spec F: "the remaining values of rendering_speed: not shown". Passed on unchecked, and the user is told.
  return { value, warning: `rendering_speed "${value}": F does not publish its values; sent unchecked (F answers 400 if it is not one)` };
}

/** A field the spec does not show, as the text a form part carries, or an InputError when it has no plain text form. */
function formText(field: string, value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "boolean") return String(value);
  throw new InputError(field, "is not a field the F spec shows, and only strings, numbers and booleans can be sent as unchecked form fields");
}

/** Checks a job for F and builds the exact form fields to send. Pure: no I/O. */
export function validateFRequest(request: JobRequest, settings: FValidationSettings): ValidatedRequest {
  if (!isRecord(request.input)) throw new InputError("input", "must be an object");
  const model = modelOf(request.model, settings);
  if (request.operation !== undefined && request.operation !== "generate") {
    throw new InputError("operation", `F has one operation, generate; got "${request.operation}"`, "generate");
  }
  if (request.images !== undefined && request.images.length > 0) {
    // spec F shows no reference-image field: images cannot be mapped onto anything.
    throw new InputError("images", "F shows no reference-image field, so images cannot be sent");
  }
  const input = request.input;
  if (input.webhook_url !== undefined) {
    throw new InputError("webhook_url", "is not a form field: mediagate sets the webhook_url query parameter from MEDIAGATE_PUBLIC_URL");
  }
  const prompt = promptOf(input);
  const resolution = resolutionOf(input);
  const speed = renderingSpeedOf(input, model, settings);

  const body: Record<string, string> = { [prompt.field]: prompt.value };
  if (resolution) body.resolution = resolution.text;
  if (speed.value !== null) body.rendering_speed = speed.value;

  // spec F: "Other fields ...: not shown". They are passed through as text form fields with a warning, like D's.
  const unchecked: string[] = [];
  for (const [field, value] of Object.entries(input)) {
    if (SHOWN_FIELDS.has(field) || value === undefined) continue;
    body[field] = formText(field, value);
    unchecked.push(field);
  }

  const warnings = [
    ...longPromptWarnings(prompt.field, prompt.value, "F publishes no prompt length limit"),
    ...(speed.warning ? [speed.warning] : []),
    ...unchecked.map((field) => `${field} is not a field the F spec shows; sent unchanged as a form field and unchecked`),
  ];
  const facts: FFacts = {
    model,
    promptKind: prompt.kind,
    resolution: resolution?.text ?? null,
    width: resolution?.width ?? null,
    height: resolution?.height ?? null,
    renderingSpeed: speed.value,
    uncheckedFields: unchecked,
  };
  return { provider: "f", model, operation: null, body, warnings, facts: { ...facts } };
}

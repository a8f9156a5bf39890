import { InputError } from "../../core/errors.js";
import { longPromptWarnings } from "../../core/prompt-length.js";
import type { JobRequest, ValidatedRequest } from "../adapter.js";

/**
 * spec C submit body. The complete sets of allowed values and which fields
 * are required are not shown: mediagate requires the prompt (a text-to-video
 * call means nothing without one), checks each field's type, sends only the
 * fields given (plus the model), and warns when a value is not the one the
 * spec shows, since the provider may refuse it.
 */
const SEEN_VALUES = { aspect_ratio: "16:9", duration: 5, quality: "720p", motion_mode: "normal" } as const;
const FIELDS = ["prompt", "aspect_ratio", "duration", "quality", "motion_mode", "seed"] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function nonEmptyString(input: Record<string, unknown>, field: string): string | undefined {
  const value = input[field];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim().length === 0) throw new InputError(field, "must be a non-empty string");
  return value;
}

function integer(input: Record<string, unknown>, field: string, minimum: number): number | undefined {
  const value = input[field];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < minimum) throw new InputError(field, `must be an integer of at least ${minimum}`);
  return value;
}

function checkFields(request: JobRequest): void {
  for (const field of Object.keys(request.input)) {
    if ((FIELDS as readonly string[]).includes(field)) continue;
    if (field === "model") {
      if (request.input.model === request.model) continue;
      throw new InputError("model", "give the model as the job's model, not in input");
    }
    if (field === "width" || field === "height") throw new InputError(field, "C has no width or height", "aspect_ratio and quality");
    throw new InputError(field, "is not a field of C's submit request", FIELDS.join(", "));
  }
  if (request.images?.length) {
    throw new InputError("images", "C's image-to-video route is not published; mediagate sends C a text prompt only");
  }
  if (request.operation !== undefined && request.operation !== "text_to_video") {
    throw new InputError("operation", `C has one published operation, not "${request.operation}"`, "text_to_video");
  }
}

/** Checks a job for C and builds the exact submit body. Pure: no I/O. */
export function validateCRequest(request: JobRequest): ValidatedRequest {
  if (!isRecord(request.input)) throw new InputError("input", "must be an object");
  checkFields(request);
  if (typeof request.model !== "string" || request.model.trim().length === 0) {
    throw new InputError("model", "is required: a version label", "a label such as v6");
  }
  const prompt = nonEmptyString(request.input, "prompt");
  if (prompt === undefined) throw new InputError("prompt", "is required");
  const fields: Record<string, string | number | undefined> = {
    aspect_ratio: nonEmptyString(request.input, "aspect_ratio"),
    duration: integer(request.input, "duration", 1),
    quality: nonEmptyString(request.input, "quality"),
    motion_mode: nonEmptyString(request.input, "motion_mode"),
    seed: integer(request.input, "seed", 0),
  };
  const warnings = longPromptWarnings("prompt", prompt, "C publishes no prompt length limit");
  for (const [field, seen] of Object.entries(SEEN_VALUES)) {
    const value = fields[field];
    if (value !== undefined && value !== seen) {
      warnings.push(`${field} ${value} is not the value the spec shows (${seen}); C's complete set is not published, so it is sent as given`);
    }
  }
  const body: Record<string, unknown> = { prompt, model: request.model };
  for (const [field, value] of Object.entries(fields)) if (value !== undefined) body[field] = value;
  return { provider: "c", model: request.model, operation: null, body, warnings, facts: { kind: "text_to_video" } };
}

import { InputError } from "../../core/errors.js";
import { longPromptWarnings } from "../../core/prompt-length.js";
import type { JobRequest, ValidatedRequest } from "../adapter.js";
import { IMAGE_COUNT_NOTE, REFERENCE_VALUE_FORMAT, type DFacts } from "./facts.js";
import {
  countedReferencePixels,
  describeMegapixels,
  MAX_OUTPUT_PIXELS,
  PIXELS_PER_MEGAPIXEL,
  PRO_BUDGET_PIXELS,
} from "./megapixels.js";
import { D_ENDPOINT_INFO, D_ENDPOINTS, isDEndpoint, unhostedReason, type DEndpoint, type DEndpointInfo } from "./models.js";
import { collectReferences, isReferenceField, type DReference } from "./references.js";

/** spec D submit request: width and height are multiples of 16, at least 64; above 4 MP the provider reduces. */
const SIDE_STEP = 16;
const SIDE_MINIMUM = 64;
const SIZE_ALLOWED = "multiples of 16 from 64 (64, 80, 96, …); above 4 MP (4,194,304 px) in total D reduces the output to 4 MP";

const UNKNOWN_SINGLE_REFERENCE = "assumed 1 MP for the price and the pro budget";

/** The request fields the spec shows, plus `seed`, which mediagate checks is an integer before passing it on. */
const CHECKED_FIELDS = new Set(["prompt", "width", "height", "seed"]);

/** spec D "What the service does" 4: negative prompts are not supported. Matches negative_prompt, negativePrompt, neg_prompt, negative, … */
function isNegativePromptField(field: string): boolean {
  return /^neg(ative)?(prompts?|text)?$/.test(field.toLowerCase().replace(/[^a-z]/g, ""));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function endpointOf(model: unknown): DEndpoint {
  const allowed = D_ENDPOINTS.join(", ");
  if (typeof model !== "string" || model.trim().length === 0) throw new InputError("model", "is required: a D endpoint identifier", allowed);
  if (isDEndpoint(model)) return model;
  const unhosted = unhostedReason(model);
  throw new InputError("model", unhosted ? `"${model}": ${unhosted}` : `"${model}" is not a D endpoint`, allowed);
}

function promptOf(input: Record<string, unknown>): string {
  const prompt = input.prompt;
  if (prompt === undefined) throw new InputError("prompt", "is required");
  if (typeof prompt !== "string" || prompt.trim().length === 0) throw new InputError("prompt", "must be a non-empty string");
  return prompt;
}

function sideOf(input: Record<string, unknown>, field: "width" | "height"): number {
  const value = input[field];
  // D's default size is not shown and the price depends on it, so mediagate asks for both sides.
  if (value === undefined) throw new InputError(field, "is required: D's default size is not shown and the price depends on it", SIZE_ALLOWED);
  if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new InputError(field, "must be an integer", SIZE_ALLOWED);
  if (value < SIDE_MINIMUM) throw new InputError(field, `must be at least ${SIDE_MINIMUM}, got ${value}`, SIZE_ALLOWED);
  if (value % SIDE_STEP !== 0) throw new InputError(field, `must be a multiple of ${SIDE_STEP}, got ${value}`, SIZE_ALLOWED);
  return value;
}

function seedOf(input: Record<string, unknown>): number | undefined {
  const seed = input.seed;
  if (seed === undefined) return undefined;
  // The seed's range is not shown: any integer is passed through.
  if (typeof seed !== "number" || !Number.isSafeInteger(seed)) throw new InputError("seed", "must be an integer");
  return seed;
}

/** Fields refused outright, and fields the spec does not show (passed through with a warning). */
function uncheckedFields(request: JobRequest): string[] {
  const unchecked: string[] = [];
  for (const field of Object.keys(request.input)) {
    if (isNegativePromptField(field)) throw new InputError(field, "negative prompts are not supported by D", "describe what you want in prompt");
    if (field === "model") {
      if (request.input.model === request.model) continue;
      throw new InputError("model", "give the endpoint as the job's model, not in input (it selects the URL path)");
    }
    if (CHECKED_FIELDS.has(field) || isReferenceField(field)) continue;
    unchecked.push(field);
  }
  return unchecked;
}

/** spec D Limits "Reference images": at most the tier's limit through the API. */
function checkReferenceLimit(endpoint: DEndpoint, info: DEndpointInfo, references: DReference[]): void {
  const first = references[info.referenceLimit];
  if (first) {
    throw new InputError(first.label, `${endpoint} takes at most ${info.referenceLimit} reference images, got ${references.length}`, `up to ${info.referenceLimit}`);
  }
}

/**
 * spec D Limits "Pro input plus output budget": 9 MP across the output (as
 * generated, so at most 4 MP) and the references counted as D handles them
 * (see countedReferencePixels). 1 MP output allows 8 references, 2 MP 7.
 */
function checkProBudget(endpoint: DEndpoint, outputPixels: number, references: DReference[]): void {
  const output = Math.min(outputPixels, MAX_OUTPUT_PIXELS);
  const counted = countedReferencePixels(references.map((reference) => reference.fact.pixels));
  let used = output;
  for (const [index, pixels] of counted.entries()) {
    used += pixels;
    if (used > PRO_BUDGET_PIXELS) {
      const room = Math.floor((PRO_BUDGET_PIXELS - output) / PIXELS_PER_MEGAPIXEL);
      throw new InputError(
        references[index]!.label,
        `${endpoint}'s 9 MP input plus output budget: a ${describeMegapixels(output)} output leaves room for ${room} references of 1 MP, got ${references.length}`,
        `at most ${room} references at this size, or a smaller output`,
      );
    }
  }
}

function sizeWarnings(width: number, height: number, references: DReference[]): string[] {
  const warnings: string[] = [];
  const outputPixels = width * height;
  if (outputPixels > MAX_OUTPUT_PIXELS) {
    warnings.push(`${width}x${height} is ${describeMegapixels(outputPixels)}, above D's 4 MP limit: D reduces the output to 4 MP; priced at 4 MP`);
  }
  const [single] = references;
  if (references.length === 1 && single) {
    // spec D Limits "Reference handling": a single reference keeps its resolution, so its size matters to the price and the pro budget.
    if (single.fact.pixels === null) {
      warnings.push(`the size of ${single.label} is not known to mediagate (a URL, or not a PNG or JPEG): ${UNKNOWN_SINGLE_REFERENCE}`);
    } else if (single.fact.pixels > MAX_OUTPUT_PIXELS) {
      warnings.push(`${single.label} is ${describeMegapixels(single.fact.pixels)}: D keeps a single reference's resolution up to 4 MP and does not say what it does above; counted as 4 MP`);
    }
  }
  for (const reference of references) {
    if (reference.fact.kind === "other") {
      warnings.push(`${reference.label} is neither an http(s) URL nor base64 image data; sent as given (D's value format is not shown)`);
    }
  }
  return warnings;
}

/** Checks a job for D and builds the exact submit body. Pure: no I/O. */
export function validateDRequest(request: JobRequest): ValidatedRequest {
  if (!isRecord(request.input)) throw new InputError("input", "must be an object");
  const endpoint = endpointOf(request.model);
  if (request.operation !== undefined) {
    throw new InputError("operation", "D has no separate operations: editing adds reference images to the same endpoint");
  }
  const unchecked = uncheckedFields(request);
  const prompt = promptOf(request.input);
  const width = sideOf(request.input, "width");
  const height = sideOf(request.input, "height");
  const seed = seedOf(request.input);
  const references = collectReferences(request);
  const info = D_ENDPOINT_INFO[endpoint];
  checkReferenceLimit(endpoint, info, references);
  if (info.hasProBudget) checkProBudget(endpoint, width * height, references);

  const body: Record<string, unknown> = { prompt, width, height };
  for (const reference of references) body[reference.fact.field] = reference.value;
  if (seed !== undefined) body.seed = seed;
  // spec D: other optional fields are not shown; they are sent unchanged and the user is told they were not checked.
  for (const field of unchecked) body[field] = request.input[field];

  const warnings = [
    ...longPromptWarnings("prompt", prompt, "D publishes no prompt length limit"),
    ...sizeWarnings(width, height, references),
    ...unchecked.map((field) => `${field} is not a field the D spec shows; sent unchanged and unchecked`),
  ];
  const facts: DFacts = {
    endpoint,
    tier: info.tier,
    width,
    height,
    outputPixels: width * height,
    reducedToFourMegapixels: width * height > MAX_OUTPUT_PIXELS,
    references: references.map((reference) => reference.fact),
    referenceValueFormat: references.length > 0 ? REFERENCE_VALUE_FORMAT : null,
    referenceSizeAssumption: references.length === 1 && references[0]!.fact.pixels === null ? UNKNOWN_SINGLE_REFERENCE : null,
    imageCount: 1,
    imageCountNote: IMAGE_COUNT_NOTE,
  };
  return { provider: "d", model: endpoint, operation: null, body, warnings, facts: { ...facts } };
}

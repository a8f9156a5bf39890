import type { DEndpoint } from "./endpoints.js";
import { DApiError, invalidField } from "./errors.js";
import { MIN_SIDE, PIXELS_PER_MEGAPIXEL, servedSize, SIDE_STEP, type ImageSize } from "./megapixels.js";
import { parseReferences, referenceFieldName, type DReference } from "./references.js";

/** A submit body that passed validation. */
export interface DSubmitRequest {
  /** The body exactly as parsed from the request, fields the spec does not show included. */
  body: Record<string, unknown>;
  prompt: string;
  /** The size asked for. */
  requestedSize: ImageSize;
  /** The size generated and billed: the requested one, reduced to 4 MP when larger. */
  outputSize: ImageSize;
  /** The seed given, if any (its presence and form are "not shown"; the sandbox accepts an integer). */
  seed?: number;
  references: DReference[];
}

/**
 * Whether width and height are required is not shown (only prompt is marked
 * required): the sandbox defaults a missing side to 1024.
 */
const DEFAULT_SIDE = 1024;
/** spec D Limits: the pro tier's input plus output budget, in megapixels. */
const PRO_BUDGET_MEGAPIXELS = 9;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function side(body: Record<string, unknown>, field: "width" | "height"): number {
  const value = body[field];
  if (value === undefined || value === null) return DEFAULT_SIDE;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) throw invalidField(field, "must be an integer");
  // spec D submit request: "multiple of 16; size between 64x64 and 4 MP".
  if (value % SIDE_STEP !== 0) throw invalidField(field, `must be a multiple of ${SIDE_STEP}`);
  if (value < MIN_SIDE) throw invalidField(field, `must be at least ${MIN_SIDE}`);
  return value;
}

/**
 * spec D Limits: "9 MP: 1 MP output allows up to 8 references, 2 MP up to
 * 7, fewer as output grows", with several references counting 1 MP each. A
 * single reference (at most 4 MP, since larger ones are reduced) never breaks
 * the budget next to an output of at most 4 MP.
 */
function checkProBudget(outputSize: ImageSize, references: readonly DReference[]): void {
  if (references.length < 2) return;
  const outputMegapixels = (outputSize.width * outputSize.height) / PIXELS_PER_MEGAPIXEL;
  const allowed = Math.floor(PRO_BUDGET_MEGAPIXELS - outputMegapixels);
  if (references.length > allowed) {
    throw invalidField(
      referenceFieldName(allowed + 1),
      `the pro input plus output budget is ${PRO_BUDGET_MEGAPIXELS} MP: a ${outputSize.width}x${outputSize.height} output allows at most ${allowed} reference images`,
    );
  }
}

/**
 * Checks a submit body against spec D "submit request". Fields the spec does
 * not show are ignored (kept in the job's recorded body), except
 * `negative_prompt`, which the spec says is not supported.
 */
export function parseSubmitRequest(body: unknown, endpoint: DEndpoint, referenceLimit: number): DSubmitRequest {
  if (!isRecord(body)) throw invalidField("body", "must be a JSON object");

  const prompt = body.prompt;
  if (typeof prompt !== "string" || prompt.trim().length === 0) throw invalidField("prompt", "is required and must be a non-empty string");
  // spec D "What the service does" 4: negative prompts are not supported; any value is refused rather than ignored.
  if (Object.hasOwn(body, "negative_prompt")) {
    throw new DApiError(422, "unsupported_field", "negative_prompt: negative prompts are not supported", "negative_prompt");
  }

  const requestedSize = { width: side(body, "width"), height: side(body, "height") };
  const outputSize = servedSize(requestedSize);

  const seed = body.seed;
  if (seed !== undefined && seed !== null && (typeof seed !== "number" || !Number.isSafeInteger(seed))) {
    throw invalidField("seed", "must be an integer");
  }

  const references = parseReferences(body, referenceLimit);
  if (endpoint.proBudget) checkProBudget(outputSize, references);

  return { body, prompt, requestedSize, outputSize, ...(typeof seed === "number" ? { seed } : {}), references };
}

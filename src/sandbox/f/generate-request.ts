import { invalidRequest } from "./errors.js";

/**
 * spec F request: rendering_speed; "the remaining values ... not shown". The
 * sandbox accepts these; FLASH is refused (400) on the model versions of
 * option `flashRefusedModels`.
 */
export const F_RENDERING_SPEEDS = ["FLASH", "TURBO", "DEFAULT", "QUALITY"] as const;
export type FRenderingSpeed = (typeof F_RENDERING_SPEEDS)[number];

/**
 * Sandbox choices for resolution (the spec shows one example, 1024x1024 and
 * no value set): each side a multiple of 16, 256 to 2048, so the sizes real
 * clients of such services send (1312x736, 1536x640, …) are accepted.
 */
export const F_RESOLUTION_STEP = 16;
export const F_MIN_SIDE = 256;
export const F_MAX_SIDE = 2048;
const DEFAULT_RESOLUTION = "1024x1024";
const MAX_IMAGES = 8;
const MAX_SEED = 2_147_483_647;

export interface FResolution {
  width: number;
  height: number;
  /** As written in the payload: "WxH". */
  text: string;
}

export interface FGenerateRequest {
  promptKind: "text" | "json";
  /** text_prompt, or json_prompt's text as received. */
  prompt: string;
  resolution: FResolution;
  renderingSpeed: FRenderingSpeed;
  seeds: number[];
}

export function parseResolution(value: string): FResolution {
  const match = /^(\d{1,5})x(\d{1,5})$/.exec(value);
  if (!match) throw invalidRequest("resolution", 'must have the form "WIDTHxHEIGHT", e.g. 1024x1024');
  const width = Number(match[1]);
  const height = Number(match[2]);
  for (const side of [width, height]) {
    if (side % F_RESOLUTION_STEP !== 0 || side < F_MIN_SIDE || side > F_MAX_SIDE) {
      throw invalidRequest("resolution", `each side must be a multiple of ${F_RESOLUTION_STEP} from ${F_MIN_SIDE} to ${F_MAX_SIDE}`);
    }
  }
  return { width, height, text: `${width}x${height}` };
}

function integerField(fields: ReadonlyMap<string, string>, name: string, min: number, max: number): number | undefined {
  const text = fields.get(name);
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
    throw invalidRequest(name, `must be an integer from ${min} to ${max}`);
  }
  return Number(text);
}

export interface FParseContext {
  flashRefused: boolean;
  random: () => number;
}

/** The form fields of a generate request. Fields the sandbox does not know are ignored. */
export function parseGenerateRequest(fields: ReadonlyMap<string, string>, context: FParseContext): FGenerateRequest {
  const text = fields.get("text_prompt");
  const json = fields.get("json_prompt");
  // spec F Errors: text_prompt and json_prompt together are rejected (mutually exclusive); neither is the sandbox's 400 too.
  if (text !== undefined && json !== undefined) throw invalidRequest("text_prompt", "text_prompt and json_prompt are mutually exclusive");
  if (text === undefined && json === undefined) throw invalidRequest("text_prompt", "one of text_prompt or json_prompt is required");
  let prompt: string;
  let promptKind: FGenerateRequest["promptKind"];
  if (text !== undefined) {
    if (text.trim() === "") throw invalidRequest("text_prompt", "must not be empty");
    prompt = text;
    promptKind = "text";
  } else {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json!);
    } catch {
      throw invalidRequest("json_prompt", "must be a JSON object");
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw invalidRequest("json_prompt", "must be a JSON object");
    prompt = json!;
    promptKind = "json";
  }

  const resolution = parseResolution(fields.get("resolution") ?? DEFAULT_RESOLUTION);

  const speed = fields.get("rendering_speed") ?? "DEFAULT";
  if (!(F_RENDERING_SPEEDS as readonly string[]).includes(speed)) {
    throw invalidRequest("rendering_speed", `must be one of ${F_RENDERING_SPEEDS.join(", ")}`);
  }
  // spec F Errors: "rendering_speed FLASH on this model version: 400".
  if (speed === "FLASH" && context.flashRefused) throw invalidRequest("rendering_speed", "FLASH is not available for this model version");

  const count = integerField(fields, "num_images", 1, MAX_IMAGES) ?? 1;
  const firstSeed = integerField(fields, "seed", 0, MAX_SEED);
  const seeds = Array.from({ length: count }, (_unused, index) =>
    firstSeed !== undefined ? (firstSeed + index) % (MAX_SEED + 1) : Math.floor(context.random() * (MAX_SEED + 1)),
  );
  return { promptKind, prompt, resolution, renderingSpeed: speed as FRenderingSpeed, seeds };
}

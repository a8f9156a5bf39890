/**
 * spec E "What the service does" 1: five asynchronous operations. The
 * operation values are the spec's names, in kebab case; the short forms are
 * accepted as aliases and normalised.
 */
export const E_OPERATIONS = [
  "generate-image",
  "expand-image",
  "fill-image",
  "generate-object-composite",
  "generate-similar-images",
] as const;
export type EOperation = (typeof E_OPERATIONS)[number];

/** The generate endpoint's version, chosen by the job's model (spec E Versioning: /v3/ standard, /v4/ the newer model's generate). */
export const E_MODELS = ["v3", "v4"] as const;
export type EModel = (typeof E_MODELS)[number];

export const E_DEFAULT_OPERATION: EOperation = "generate-image";

const ALIASES: Record<string, EOperation> = {
  generate: "generate-image",
  expand: "expand-image",
  fill: "fill-image",
  "object-composite": "generate-object-composite",
  composite: "generate-object-composite",
  similar: "generate-similar-images",
};

export interface EOperationInfo {
  /** Path under `{e_base_url}` for each model the operation exists for. */
  paths: Partial<Record<EModel, string>>;
  /** False when the spec does not show the path and mediagate follows the shown `-async` pattern. */
  pathShown: boolean;
  /** spec E submit request: "at least a text prompt is required" (the generate request). */
  promptRequired: boolean;
  /**
   * Where local source images go, in the order of the job's `images`. The
   * spec names no image field for any operation; `image` and (fill only)
   * `mask` are mediagate's choice (see SOURCE_IMAGE_FORMAT). Empty: the
   * operation takes no source image.
   */
  imageFields: readonly string[];
}

/**
 * spec E Endpoints: generate (v3, v4) and expand paths are shown; "Paths of
 * the fill, composite and similar-image operations … not shown". Those
 * follow the shown pattern `/v3/images/{name}-async` and can be overridden
 * by the adapter's `operationPaths` without a code change.
 */
export const E_OPERATION_INFO: Record<EOperation, EOperationInfo> = {
  "generate-image": {
    paths: { v3: "/v3/images/generate-async", v4: "/v4/images/generate-async" },
    pathShown: true,
    promptRequired: true,
    imageFields: [],
  },
  "expand-image": { paths: { v3: "/v3/images/expand-async" }, pathShown: true, promptRequired: false, imageFields: ["image"] },
  "fill-image": { paths: { v3: "/v3/images/fill-async" }, pathShown: false, promptRequired: false, imageFields: ["image", "mask"] },
  "generate-object-composite": {
    paths: { v3: "/v3/images/generate-object-composite-async" },
    pathShown: false,
    promptRequired: false,
    imageFields: ["image"],
  },
  "generate-similar-images": {
    paths: { v3: "/v3/images/generate-similar-async" },
    pathShown: false,
    promptRequired: false,
    imageFields: ["image"],
  },
};

/** The canonical operation a user's value names, or null. */
export function operationOf(value: string): EOperation | null {
  if ((E_OPERATIONS as readonly string[]).includes(value)) return value as EOperation;
  return ALIASES[value] ?? null;
}

export function isEModel(value: string): value is EModel {
  return (E_MODELS as readonly string[]).includes(value);
}

export const OPERATION_VALUES = `${E_OPERATIONS.join(", ")} (or ${Object.keys(ALIASES).join(", ")})`;

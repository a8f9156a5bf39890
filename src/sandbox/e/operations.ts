/**
 * spec E What the service does 1: five asynchronous operations, with the
 * newer model's generate as a sixth endpoint. Paths of generate (v3 and v4)
 * and expand are the spec's; those of fill, object composite and similar
 * images are "not shown" and chosen here in the same `-async` pattern.
 */
export type EOperation = "generate" | "generate-v4" | "expand" | "fill" | "object-composite" | "similar";

export interface EOperationSpec {
  operation: EOperation;
  /** Path under `{e_base_url}`. */
  path: string;
  /** spec E submit request: "at least a text prompt is required" for generation; the sandbox's choice for the others. */
  promptRequired: boolean;
  /** Image-to-image operations take an uploaded source image in `image.source.uploadId`. */
  sourceImage: boolean;
  /** Fill also takes a mask in `mask.source.uploadId`. */
  mask: boolean;
  /** The custom-model field (`customModelId`) is accepted by the generate endpoints. */
  customModel: boolean;
}

export const E_OPERATIONS: readonly EOperationSpec[] = [
  { operation: "generate", path: "/v3/images/generate-async", promptRequired: true, sourceImage: false, mask: false, customModel: true },
  { operation: "generate-v4", path: "/v4/images/generate-async", promptRequired: true, sourceImage: false, mask: false, customModel: true },
  { operation: "expand", path: "/v3/images/expand-async", promptRequired: false, sourceImage: true, mask: false, customModel: false },
  { operation: "fill", path: "/v3/images/fill-async", promptRequired: true, sourceImage: true, mask: true, customModel: false },
  {
    operation: "object-composite",
    path: "/v3/images/generate-object-composite-async",
    promptRequired: true,
    sourceImage: true,
    mask: false,
    customModel: false,
  },
  { operation: "similar", path: "/v3/images/generate-similar-async", promptRequired: false, sourceImage: true, mask: false, customModel: false },
];

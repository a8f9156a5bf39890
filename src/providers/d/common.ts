import { parseRatio, parseSize, type CommonCapabilities, type CommonMapping, type CommonRequest, type Dimensions, type Unhonoured } from "../../core/common-request.js";
import type { JobRequest } from "../adapter.js";
import { D_ENDPOINT_INFO, isDEndpoint } from "./models.js";

/** spec D submit request: width and height are multiples of 16, at least 64. */
const SIDE_STEP = 16;
const SIDE_MINIMUM = 64;
/** An aspect ratio alone is sent at about one megapixel: D takes a size, and 1 MP is its price unit. */
const RATIO_AREA = 1024 * 1024;

function roundSide(side: number): number {
  return Math.max(SIDE_MINIMUM, Math.round(side / SIDE_STEP) * SIDE_STEP);
}

/** The size D is sent for an aspect ratio given without a size: about 1 MP, each side a multiple of 16. */
export function dSizeForRatio(ratio: Dimensions): Dimensions {
  const height = Math.sqrt((RATIO_AREA * ratio.height) / ratio.width);
  return { width: roundSide((height * ratio.width) / ratio.height), height: roundSide(height) };
}

/**
 * A common request for a D endpoint: `prompt`, `width`/`height` from `size`
 * (each side rounded to D's multiple of 16, with a warning naming what is
 * sent) or from `aspect_ratio` (about 1 MP), `seed`, and `images` as
 * reference images (`input_image`, `input_image_2`, …; the endpoint's limit
 * and the pro budget are checked by `validate`).
 *
 * Not honoured: video; `n` above 1 (D makes one image per request); no size
 * and no aspect ratio (D's default size is not shown and the price depends on
 * it, as for a native request).
 */
export function dFromCommon(request: CommonRequest, model: string): CommonMapping<JobRequest> {
  if (request.task !== "image") return { ok: false, unhonoured: [{ field: "task", reason: "D makes images, not videos" }] };
  const unhonoured: Unhonoured[] = [];
  const warnings: string[] = [];
  const input: Record<string, unknown> = {};
  if (request.prompt === undefined) unhonoured.push({ field: "prompt", reason: "D needs a prompt" });
  else input.prompt = request.prompt;

  const size = request.size !== undefined ? parseSize(request.size) : null;
  const ratio = request.aspect_ratio !== undefined ? parseRatio(request.aspect_ratio) : null;
  if (size) {
    const sent = { width: roundSide(size.width), height: roundSide(size.height) };
    if (sent.width !== size.width || sent.height !== size.height) {
      warnings.push(`size ${request.size} sent as width ${sent.width}, height ${sent.height} (D takes multiples of 16 from 64)`);
    }
    Object.assign(input, sent);
  } else if (ratio) {
    const sent = dSizeForRatio(ratio);
    warnings.push(`aspect_ratio ${request.aspect_ratio} sent as width ${sent.width}, height ${sent.height} (D takes a size: about 1 MP, multiples of 16)`);
    Object.assign(input, sent);
  } else {
    unhonoured.push({ field: "size", reason: "D needs a size or aspect_ratio: its default size is not shown and the price depends on it" });
  }
  if (request.seed !== undefined) input.seed = request.seed;
  if (request.n !== undefined && request.n > 1) unhonoured.push({ field: "n", reason: `D makes one image per request, not ${request.n}` });

  if (unhonoured.length > 0) return { ok: false, unhonoured };
  return { ok: true, request: { provider: "d", model, input, ...(request.images?.length ? { images: request.images } : {}) }, warnings };
}

/** What `dFromCommon` honours for a D endpoint (`mediagate models`). */
export function dCommonCapabilities(model: string): CommonCapabilities | null {
  if (!isDEndpoint(model)) return null;
  const info = D_ENDPOINT_INFO[model];
  return {
    task: "image",
    honours: {
      prompt: "required",
      size: "each side rounded to a multiple of 16 from 64 (a warning names what is sent); above 4 MP D reduces the output to 4 MP",
      aspect_ratio: "sent as a size of about 1 MP in multiples of 16 (size or aspect_ratio is required)",
      seed: "any whole number",
      n: "1 only: one image per request",
      images: `up to ${info.referenceLimit} reference images, URLs or files${info.hasProBudget ? " (within the 9 MP input plus output budget)" : ""}`,
    },
    refuses: {},
    priceBasis: info.priceRow === null ? `unpriced: ${model} has no price in D's table` : `per megapixel of the output, at ${info.priceRow}'s rate on D's pricing page${info.priceNote ? ` (${info.priceNote})` : ""}`,
  };
}

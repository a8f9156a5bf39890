import type { DEndpoint, DPricedEndpointId } from "./endpoints.js";
import { MAX_OUTPUT_PIXELS, wholeMegapixels, type ImageSize } from "./megapixels.js";
import type { DReference } from "./references.js";

/** One row of the rates table, in integer micro-USD. */
export interface DRate {
  firstMegapixelMicroUsd: number;
  nextMegapixelMicroUsd: number;
  referenceMegapixelMicroUsd: number;
}

/**
 * spec D rates, from the pricing page (not the documentation site's "from"
 * prices, which differ for pro editing and flex): USD per MP × 1,000,000.
 */
export const D_RATES: Readonly<Record<DPricedEndpointId, DRate>> = {
  "gen-2-max": { firstMegapixelMicroUsd: 70_000, nextMegapixelMicroUsd: 30_000, referenceMegapixelMicroUsd: 30_000 },
  "gen-2-pro": { firstMegapixelMicroUsd: 30_000, nextMegapixelMicroUsd: 15_000, referenceMegapixelMicroUsd: 15_000 },
  "gen-2-flex": { firstMegapixelMicroUsd: 50_000, nextMegapixelMicroUsd: 50_000, referenceMegapixelMicroUsd: 50_000 },
  "gen-2-compact-4b": { firstMegapixelMicroUsd: 14_000, nextMegapixelMicroUsd: 1_000, referenceMegapixelMicroUsd: 1_000 },
  "gen-2-compact-9b": { firstMegapixelMicroUsd: 15_000, nextMegapixelMicroUsd: 2_000, referenceMegapixelMicroUsd: 2_000 },
};

/** spec D "What the service does" 3: 1 credit = 0.01 USD. */
export const MICRO_USD_PER_CREDIT = 10_000;

/**
 * spec D Limits "Reference handling": with several references each is billed
 * as 1 MP (cost rule 4); a single one keeps its resolution up to 4 MP and is
 * rounded up on its own (rule 2). A single reference whose size the sandbox
 * cannot read (a URL, or base64 that is not PNG) is billed as 1 MP.
 */
function referenceMegapixels(references: readonly DReference[]): number {
  if (references.length !== 1) return references.length;
  const size = references[0]!.size;
  if (!size) return 1;
  return wholeMegapixels(Math.min(size.width * size.height, MAX_OUTPUT_PIXELS));
}

/**
 * spec D cost rules, in order: output capped at 4 MP and rounded up to a
 * whole megapixel; the first megapixel at the first-MP rate, each further one
 * at the next-MP rate; references at the per-reference rate. A batch would
 * multiply by its image count, but no image-count field is shown, so every
 * job is one image.
 */
export function jobCostMicroUsd(
  endpoint: DEndpoint,
  outputSize: ImageSize,
  references: readonly DReference[],
  rates: Readonly<Record<DPricedEndpointId, DRate>> = D_RATES,
): number {
  const rate = rates[endpoint.billedAs];
  const outputMegapixels = wholeMegapixels(Math.min(outputSize.width * outputSize.height, MAX_OUTPUT_PIXELS));
  const outputMicroUsd = rate.firstMegapixelMicroUsd + (outputMegapixels - 1) * rate.nextMegapixelMicroUsd;
  return outputMicroUsd + referenceMegapixels(references) * rate.referenceMegapixelMicroUsd;
}

/** spec D cost rule 1: one megapixel is 1024 x 1024 pixels, divisor 1,048,576. */
export const PIXELS_PER_MEGAPIXEL = 1_048_576;

/** spec D Limits "Output size": at most 4 MP for every operation; larger is reduced to 4 MP. */
export const MAX_OUTPUT_PIXELS = 4 * PIXELS_PER_MEGAPIXEL;

/** spec D Limits "Pro input plus output budget": 9 MP. */
export const PRO_BUDGET_PIXELS = 9 * PIXELS_PER_MEGAPIXEL;

/** spec D cost rule 2: output capped at 4 MP, then rounded up to a whole megapixel. */
export function billedOutputMegapixels(outputPixels: number): number {
  return Math.ceil(Math.min(outputPixels, MAX_OUTPUT_PIXELS) / PIXELS_PER_MEGAPIXEL);
}

/** Megapixels with two decimals, for messages ("1.43 MP"). */
export function describeMegapixels(pixels: number): string {
  return `${(pixels / PIXELS_PER_MEGAPIXEL).toFixed(2).replace(/\.?0+$/, "")} MP`;
}

/**
 * The pixels each reference counts for, in the pro budget and in the price
 * (spec D Limits "Reference handling"): with several references each one is
 * reduced to 1 MP (and cost rule 4 bills each as 1 MP); a single reference up
 * to 4 MP keeps its resolution. A single reference of unknown size (`null`) is
 * assumed to be 1 MP, and one above 4 MP is counted as 4 MP (what D does with
 * it is not shown; outputs are reduced to 4 MP, so mediagate assumes the same).
 */
export function countedReferencePixels(referencePixels: ReadonlyArray<number | null>): number[] {
  if (referencePixels.length !== 1) return referencePixels.map(() => PIXELS_PER_MEGAPIXEL);
  const [single] = referencePixels;
  return [single === null || single === undefined ? PIXELS_PER_MEGAPIXEL : Math.min(single, MAX_OUTPUT_PIXELS)];
}

/** spec D cost rule 1: one megapixel is 1024 x 1024 pixels. */
export const PIXELS_PER_MEGAPIXEL = 1_048_576;
/** spec D Limits "Output size": at most 4 MP for every operation. */
export const MAX_OUTPUT_PIXELS = 4 * PIXELS_PER_MEGAPIXEL;
/** spec D submit request: each side a multiple of 16, 64 at least. */
export const SIDE_STEP = 16;
export const MIN_SIDE = 64;

export interface ImageSize {
  width: number;
  height: number;
}

/** Whole megapixels, rounded up (spec D cost rule 2). */
export function wholeMegapixels(pixels: number): number {
  return Math.ceil(pixels / PIXELS_PER_MEGAPIXEL);
}

function downToStep(side: number): number {
  return Math.max(MIN_SIDE, Math.floor(side / SIDE_STEP) * SIDE_STEP);
}

/**
 * spec D Limits "Output size": larger than 4 MP "is reduced to 4 MP". How is
 * not shown; the sandbox scales both sides by the same factor (keeping the
 * aspect ratio), then rounds each down to a multiple of 16, so the result is
 * the largest such size not above 4 MP. A side that would fall under 64 stays
 * 64 and the other side gives way.
 */
export function servedSize(requested: ImageSize): ImageSize {
  const pixels = requested.width * requested.height;
  if (pixels <= MAX_OUTPUT_PIXELS) return requested;
  const scale = Math.sqrt(MAX_OUTPUT_PIXELS / pixels);
  let width = downToStep(requested.width * scale);
  let height = downToStep(requested.height * scale);
  if (width * height > MAX_OUTPUT_PIXELS) {
    if (width === MIN_SIDE) height = downToStep(MAX_OUTPUT_PIXELS / MIN_SIDE);
    else width = downToStep(MAX_OUTPUT_PIXELS / MIN_SIDE);
  }
  return { width, height };
}

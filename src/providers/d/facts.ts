import { z } from "zod";

/**
 * spec D submit request: "The value format of reference fields … not shown."
 * mediagate's choice, recorded with every job that has references.
 */
export const REFERENCE_VALUE_FORMAT =
  "D does not show the value format of reference fields: mediagate sends http(s) URLs as given, local files as bare base64 of their bytes (no data: prefix), and input_image fields given in input unchanged";

/** spec D cost rule 5 multiplies by the image count, but no image-count field is shown: every job is one image. */
export const IMAGE_COUNT_NOTE = "D shows no image-count field: each job is one image";

/** One reference image as validation measured it. */
export interface DReferenceFact {
  /** The field it is sent as: `input_image`, `input_image_2`, … */
  field: string;
  /** Given as a native field in `input`, or through the job's `images`. */
  from: "input" | "images";
  /** How it is sent: a URL, base64 bytes, or a string mediagate recognises as neither (sent as given). */
  kind: "url" | "base64" | "other";
  width: number | null;
  height: number | null;
  /** width × height, or null when the size is not known (URLs are not fetched to measure them). */
  pixels: number | null;
}

/** What `validate` derived, stored with the job: pricing reads it back from here. */
export interface DFacts {
  endpoint: string;
  tier: string;
  width: number;
  height: number;
  outputPixels: number;
  /** spec D Limits: above 4 MP the provider reduces the output to 4 MP. */
  reducedToFourMegapixels: boolean;
  references: DReferenceFact[];
  referenceValueFormat: string | null;
  /** Set when a single reference's size is unknown: what mediagate assumed for the pro budget and the price. */
  referenceSizeAssumption: string | null;
  imageCount: number;
  imageCountNote: string;
}

/** The part of the facts pricing needs, checked again when read back from the store. */
export const DPriceFacts = z.object({
  endpoint: z.string(),
  outputPixels: z.number().int().positive(),
  references: z.array(z.object({ pixels: z.number().int().positive().nullable() })),
  imageCount: z.number().int().positive(),
});
export type DPriceFacts = z.infer<typeof DPriceFacts>;

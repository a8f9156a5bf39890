/**
 * One callable operation of service B: `{vendor}/{model}/{function}`, its
 * request fields and its pricing. The catalog records, the input_schema, the
 * validation of submits and the prices are all derived from this one
 * description, so they cannot disagree.
 */

/** The function segment: input and output modality (spec B rule 1: choose an operation by it). */
export type BFunction =
  | "image-to-video"
  | "text-to-video"
  | "keyframes-to-video"
  | "video-to-video"
  | "reference-to-audio"
  | "text-to-audio";

export type BMediaType = "video" | "audio";

/** "unavailable": listed in the catalog but refused at submit (spec B Versioning: the catalog is the source of availability). */
export type BAvailability = "available" | "unavailable";

export type BPricingUnit = "per_second" | "per_minute" | "per_request";

export type BFieldValue = string | number;

export interface BField {
  name: string;
  type: "string" | "integer" | "number";
  required: boolean;
  description: string;
  /** JSON Schema `format` (only "uri" is used). */
  format?: "uri";
  enum?: readonly BFieldValue[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: BFieldValue;
}

/** A rate applies when every field named in `when` has that value; the first matching rate of the list wins. */
export interface BRate {
  when?: Readonly<Record<string, BFieldValue>>;
  /** As published, in USD per unit (the spec's rates table, platform fee included). */
  usd: number;
  microUsd: number;
}

/** What the per-second or per-minute quantity is measured on. */
export type BBilledQuantity =
  /** The body's `duration_s`. */
  | "duration_s"
  /** The spoken length of the body's `text`, `speechSeconds()`. */
  | "speech_seconds";

export interface BPricing {
  unit: BPricingUnit;
  /** Absent for per-request operations. */
  billedQuantity?: BBilledQuantity;
  rates: readonly BRate[];
  /** "published": the spec's rates table; "sandbox": an operation the spec does not price, priced by the sandbox. */
  source: "published" | "sandbox";
}

export interface BOperation {
  /** `{vendor}/{model}/{function}`; the model may itself contain slashes (spec B Versioning). */
  apiId: string;
  vendor: string;
  model: string;
  function: BFunction;
  title: string;
  outputMediaType: BMediaType;
  availability: BAvailability;
  pricing: BPricing;
  fields: readonly BField[];
}

/** Spoken length of a text: 15 characters a second, at least one second (the sandbox's own measure). */
export function speechSeconds(text: string): number {
  return Math.max(1, Math.ceil(text.length / 15));
}

export function operationId(vendor: string, model: string, operationFunction: BFunction): string {
  return `${vendor}/${model}/${operationFunction}`;
}

/** spec D Endpoints: the hosted endpoint identifiers, each sent as `/v1/{endpoint}`. */
export const D_ENDPOINTS = [
  "gen-2-max",
  "gen-2-pro",
  "gen-2-pro-preview",
  "gen-2-flex",
  "gen-2-compact-4b",
  "gen-2-compact-9b",
  "gen-2-compact-9b-preview",
  "gen-2-compact-9b-kv-finetuned",
  "gen-ctx-max",
] as const;
export type DEndpoint = (typeof D_ENDPOINTS)[number];

/** The endpoints with a row in the pricing page's table (spec D Limits, "Rates"). */
export type DPricedEndpoint = "gen-2-max" | "gen-2-pro" | "gen-2-flex" | "gen-2-compact-4b" | "gen-2-compact-9b";

export type DTier = "max" | "pro" | "flex" | "compact" | "context-editing";

export interface DEndpointInfo {
  tier: DTier;
  /**
   * spec D Limits "Reference images": compact up to 4; max, pro and flex up
   * to 8 through the API. gen-ctx-max is not listed: mediagate allows it 4,
   * the smallest limit the spec publishes for any hosted tier, so a request
   * it accepts is within every published limit.
   */
  referenceLimit: number;
  /**
   * The table row this endpoint is billed by, or null when it has none.
   * Preview endpoints are not in the table: they share their tier's contract
   * (spec D Versioning) and are priced at its rate. Fine-tuned endpoints bill
   * at their base endpoint's rate (spec D cost rule 6). gen-ctx-max has no
   * price in the spec.
   */
  priceRow: DPricedEndpoint | null;
  /** Why `priceRow` differs from the endpoint itself, written into the estimate's source. */
  priceNote: string | null;
  /** spec D Limits "Pro input plus output budget": 9 MP across the output and the references. */
  hasProBudget: boolean;
}

export const D_ENDPOINT_INFO: Record<DEndpoint, DEndpointInfo> = {
  "gen-2-max": { tier: "max", referenceLimit: 8, priceRow: "gen-2-max", priceNote: null, hasProBudget: false },
  "gen-2-pro": { tier: "pro", referenceLimit: 8, priceRow: "gen-2-pro", priceNote: null, hasProBudget: true },
  "gen-2-pro-preview": { tier: "pro", referenceLimit: 8, priceRow: "gen-2-pro", priceNote: "gen-2-pro-preview is not in the price table: priced at its tier's endpoint gen-2-pro", hasProBudget: true },
  "gen-2-flex": { tier: "flex", referenceLimit: 8, priceRow: "gen-2-flex", priceNote: null, hasProBudget: false },
  "gen-2-compact-4b": { tier: "compact", referenceLimit: 4, priceRow: "gen-2-compact-4b", priceNote: null, hasProBudget: false },
  "gen-2-compact-9b": { tier: "compact", referenceLimit: 4, priceRow: "gen-2-compact-9b", priceNote: null, hasProBudget: false },
  "gen-2-compact-9b-preview": { tier: "compact", referenceLimit: 4, priceRow: "gen-2-compact-9b", priceNote: "gen-2-compact-9b-preview is not in the price table: priced at its tier's endpoint gen-2-compact-9b", hasProBudget: false },
  "gen-2-compact-9b-kv-finetuned": {
    tier: "compact",
    referenceLimit: 4,
    priceRow: "gen-2-compact-9b",
    priceNote: "gen-2-compact-9b-kv-finetuned is a fine-tuned endpoint: billed at its base endpoint gen-2-compact-9b's rate during the public beta (may change)",
    hasProBudget: false,
  },
  "gen-ctx-max": { tier: "context-editing", referenceLimit: 4, priceRow: null, priceNote: null, hasProBudget: false },
};

export function isDEndpoint(model: string): model is DEndpoint {
  return Object.hasOwn(D_ENDPOINT_INFO, model);
}

/**
 * spec D Endpoints: "The dev tier has no hosted endpoint (open weights, local
 * only, non-commercial). Base variants are not offered on the public API."
 * Returns why a model names one of them, or null.
 */
export function unhostedReason(model: string): string | null {
  const parts = model.toLowerCase().split(/[-_\s]+/);
  if (parts.includes("dev")) return "the dev tier has no hosted endpoint (open weights, local only, non-commercial)";
  if (parts.includes("base")) return "base variants are not offered on D's public API";
  return null;
}

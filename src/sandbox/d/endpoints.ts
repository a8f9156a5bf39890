/**
 * spec D Endpoints: the hosted endpoint identifiers. The dev tier (open
 * weights, local only) and the base variants have no hosted endpoint, so they
 * are absent here and answer 404 like any unknown identifier.
 */
export const D_ENDPOINT_IDS = [
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

export type DEndpointId = (typeof D_ENDPOINT_IDS)[number];

/** The endpoints whose rates the pricing page lists; every other endpoint bills at one of these. */
export type DPricedEndpointId = "gen-2-max" | "gen-2-pro" | "gen-2-flex" | "gen-2-compact-4b" | "gen-2-compact-9b";

export interface DEndpoint {
  id: DEndpointId;
  /** spec D Limits "Reference images": how many `input_image…` fields the endpoint takes through the API. */
  referenceLimit: number;
  /** spec D Limits: the pro tier's 9 MP input plus output budget. */
  proBudget: boolean;
  /** Whose row of the rates table bills this endpoint. */
  billedAs: DPricedEndpointId;
  /**
   * spec D Limits "Concurrent tasks": the older context-editing endpoint
   * allows 6, a cap of its own on top of the key's 24 (its tasks count in both).
   */
  contextEditing: boolean;
}

const COMPACT_REFERENCE_LIMIT = 4;
const MAX_PRO_FLEX_REFERENCE_LIMIT = 8;
/**
 * gen-ctx-max is not listed under "Reference images". The sandbox takes the
 * smallest limit the spec publishes for any hosted tier (compact's 4), so a
 * client that stays within it is safe whatever the real number is.
 */
const CONTEXT_EDITING_REFERENCE_LIMIT = 4;

function endpoint(
  id: DEndpointId,
  referenceLimit: number,
  billedAs: DPricedEndpointId,
  flags: { proBudget?: boolean; contextEditing?: boolean } = {},
): DEndpoint {
  return { id, referenceLimit, billedAs, proBudget: flags.proBudget ?? false, contextEditing: flags.contextEditing ?? false };
}

/**
 * Preview endpoints share the contract of their non-preview form (spec D
 * Versioning) but are not in the rates table: they bill at the rate of the
 * tier they preview. The fine-tuned endpoint bills at its base endpoint's
 * rate (cost rule 6). gen-ctx-max has no price anywhere: the sandbox bills it
 * as gen-2-max, the other "max" tier.
 */
export const D_ENDPOINTS: Readonly<Record<DEndpointId, DEndpoint>> = {
  "gen-2-max": endpoint("gen-2-max", MAX_PRO_FLEX_REFERENCE_LIMIT, "gen-2-max"),
  "gen-2-pro": endpoint("gen-2-pro", MAX_PRO_FLEX_REFERENCE_LIMIT, "gen-2-pro", { proBudget: true }),
  "gen-2-pro-preview": endpoint("gen-2-pro-preview", MAX_PRO_FLEX_REFERENCE_LIMIT, "gen-2-pro", { proBudget: true }),
  "gen-2-flex": endpoint("gen-2-flex", MAX_PRO_FLEX_REFERENCE_LIMIT, "gen-2-flex"),
  "gen-2-compact-4b": endpoint("gen-2-compact-4b", COMPACT_REFERENCE_LIMIT, "gen-2-compact-4b"),
  "gen-2-compact-9b": endpoint("gen-2-compact-9b", COMPACT_REFERENCE_LIMIT, "gen-2-compact-9b"),
  "gen-2-compact-9b-preview": endpoint("gen-2-compact-9b-preview", COMPACT_REFERENCE_LIMIT, "gen-2-compact-9b"),
  "gen-2-compact-9b-kv-finetuned": endpoint("gen-2-compact-9b-kv-finetuned", COMPACT_REFERENCE_LIMIT, "gen-2-compact-9b"),
  "gen-ctx-max": endpoint("gen-ctx-max", CONTEXT_EDITING_REFERENCE_LIMIT, "gen-2-max", { contextEditing: true }),
};

export function findEndpoint(identifier: string): DEndpoint | undefined {
  return Object.hasOwn(D_ENDPOINTS, identifier) ? D_ENDPOINTS[identifier as DEndpointId] : undefined;
}

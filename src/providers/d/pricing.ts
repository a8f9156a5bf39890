import { formatMicroUsd, usdToMicroUsd } from "../../core/money.js";
import type { Charge, Estimate, ProviderStatus, ValidatedRequest } from "../adapter.js";
import { DPriceFacts } from "./facts.js";
import { billedOutputMegapixels, countedReferencePixels, describeMegapixels, MAX_OUTPUT_PIXELS, PIXELS_PER_MEGAPIXEL } from "./megapixels.js";
import { D_ENDPOINT_INFO, isDEndpoint, type DPricedEndpoint } from "./models.js";

/**
 * spec D Limits: "Where the two official price views differ, state which one
 * you used." `pricing-page` (the default) is the pricing page's table;
 * `docs-from` is the documentation site's "from" prices.
 */
export type DPriceView = "pricing-page" | "docs-from";
export const D_PRICE_VIEWS: readonly DPriceView[] = ["pricing-page", "docs-from"];

interface PagePrice {
  firstMpMicroUsd: number;
  nextMpMicroUsd: number;
  referenceMpMicroUsd: number;
}

/** spec D Limits "Rates (USD, pricing page)". */
const PRICING_PAGE: Record<DPricedEndpoint, PagePrice> = {
  "gen-2-max": { firstMpMicroUsd: usdToMicroUsd(0.07), nextMpMicroUsd: usdToMicroUsd(0.03), referenceMpMicroUsd: usdToMicroUsd(0.03) },
  "gen-2-pro": { firstMpMicroUsd: usdToMicroUsd(0.03), nextMpMicroUsd: usdToMicroUsd(0.015), referenceMpMicroUsd: usdToMicroUsd(0.015) },
  "gen-2-flex": { firstMpMicroUsd: usdToMicroUsd(0.05), nextMpMicroUsd: usdToMicroUsd(0.05), referenceMpMicroUsd: usdToMicroUsd(0.05) },
  "gen-2-compact-4b": { firstMpMicroUsd: usdToMicroUsd(0.014), nextMpMicroUsd: usdToMicroUsd(0.001), referenceMpMicroUsd: usdToMicroUsd(0.001) },
  "gen-2-compact-9b": { firstMpMicroUsd: usdToMicroUsd(0.015), nextMpMicroUsd: usdToMicroUsd(0.002), referenceMpMicroUsd: usdToMicroUsd(0.002) },
};

type DocsPrice =
  | { unit: "megapixel"; generationMicroUsd: number; editingMicroUsd: number | null; note: string | null }
  | { unit: "image"; imageMicroUsd: number };

/**
 * spec D Limits, the documentation site's "from" prices: max 0.07 per MP; pro
 * 0.03 per MP for generation and 0.045 for editing; flex 0.05 per MP (the
 * model overview states 0.06); compact 0.014 per image (4B), 0.015 (9B).
 * They name no reference price, so in this view the rate is applied to the
 * output's megapixels (pro's editing rate when there are references) and
 * references are not priced separately.
 */
const DOCS_FROM: Record<DPricedEndpoint, DocsPrice> = {
  "gen-2-max": { unit: "megapixel", generationMicroUsd: usdToMicroUsd(0.07), editingMicroUsd: null, note: null },
  "gen-2-pro": { unit: "megapixel", generationMicroUsd: usdToMicroUsd(0.03), editingMicroUsd: usdToMicroUsd(0.045), note: null },
  "gen-2-flex": { unit: "megapixel", generationMicroUsd: usdToMicroUsd(0.05), editingMicroUsd: null, note: "the model overview states $0.06 per MP" },
  "gen-2-compact-4b": { unit: "image", imageMicroUsd: usdToMicroUsd(0.014) },
  "gen-2-compact-9b": { unit: "image", imageMicroUsd: usdToMicroUsd(0.015) },
};

/** What the formula needs: the output size, each reference's pixels (null: unknown) and the image count. */
export interface DPriceInput {
  endpoint: string;
  outputPixels: number;
  referencePixels: ReadonlyArray<number | null>;
  imageCount: number;
}

/** A formula price in integer micro-USD (null: unpriced) and the formula as text, naming the price view. */
export interface DPrice {
  microUsd: number | null;
  formula: string;
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

function pricingPagePrice(row: DPricedEndpoint, input: DPriceInput): { microUsd: number; terms: string[] } {
  const rate = PRICING_PAGE[row];
  // spec D cost rules 2 and 3: output capped at 4 MP and rounded up; first MP at the first-MP rate, the rest at the next-MP rate.
  const outputMp = billedOutputMegapixels(input.outputPixels);
  let microUsd = rate.firstMpMicroUsd + (outputMp - 1) * rate.nextMpMicroUsd;
  const terms = [`1 MP × ${formatMicroUsd(rate.firstMpMicroUsd)} first MP`];
  if (outputMp > 1) terms.push(`${outputMp - 1} MP × ${formatMicroUsd(rate.nextMpMicroUsd)} next MP`);
  // spec D cost rules 2 and 4: each reference rounded up separately; with several, each is billed 1 MP.
  const referenceMps = countedReferencePixels(input.referencePixels).map((pixels) => Math.ceil(pixels / PIXELS_PER_MEGAPIXEL));
  for (const mp of new Set(referenceMps)) {
    const count = referenceMps.filter((each) => each === mp).length;
    microUsd += count * mp * rate.referenceMpMicroUsd;
    terms.push(`${plural(count, "reference")} × ${mp} MP × ${formatMicroUsd(rate.referenceMpMicroUsd)}/MP`);
  }
  return { microUsd, terms };
}

function docsFromPrice(row: DPricedEndpoint, input: DPriceInput): { microUsd: number; terms: string[] } {
  const rate = DOCS_FROM[row];
  const hasReferences = input.referencePixels.length > 0;
  const referenceNote = hasReferences ? ["references not priced separately in this view"] : [];
  if (rate.unit === "image") {
    return { microUsd: rate.imageMicroUsd, terms: [`${formatMicroUsd(rate.imageMicroUsd)} per image`, ...referenceNote] };
  }
  const outputMp = billedOutputMegapixels(input.outputPixels);
  const editing = hasReferences && rate.editingMicroUsd !== null;
  const perMp = editing ? rate.editingMicroUsd! : rate.generationMicroUsd;
  const terms = [`${outputMp} MP × ${formatMicroUsd(perMp)}/MP${editing ? " (editing)" : ""}`, ...referenceNote];
  if (rate.note) terms.push(rate.note);
  return { microUsd: outputMp * perMp, terms };
}

/** spec D cost rules, applied in order, in integer micro-USD. Pure. */
export function priceD(input: DPriceInput, view: DPriceView = "pricing-page"): DPrice {
  const viewName = view === "pricing-page" ? "D pricing page" : "D documentation 'from' prices";
  if (!isDEndpoint(input.endpoint)) return { microUsd: null, formula: `unpriced: ${input.endpoint} is not a D endpoint` };
  const info = D_ENDPOINT_INFO[input.endpoint];
  if (info.priceRow === null) {
    return { microUsd: null, formula: `unpriced: neither of D's price views lists ${input.endpoint} (the older context-editing endpoint)` };
  }
  const { microUsd, terms } = view === "pricing-page" ? pricingPagePrice(info.priceRow, input) : docsFromPrice(info.priceRow, input);
  const notes: string[] = [];
  if (info.priceNote) notes.push(info.priceNote);
  if (input.outputPixels > MAX_OUTPUT_PIXELS) notes.push(`output ${describeMegapixels(input.outputPixels)} priced at 4 MP (D reduces it)`);
  if (view === "pricing-page" && input.referencePixels.length === 1 && input.referencePixels[0] === null) {
    notes.push("single reference of unknown size assumed 1 MP");
  }
  // spec D cost rule 5: a batch multiplies the base cost by the image count.
  const images = input.imageCount > 1 ? ` × ${input.imageCount} images` : "";
  const formula = `${viewName}: ${input.endpoint} ${terms.join(" + ")}${images}${notes.length ? `; ${notes.join("; ")}` : ""}`;
  return { microUsd: microUsd * input.imageCount, formula };
}

/** Reads the facts `validate` stored with the job; null when they are missing or unreadable. */
function priceOf(request: ValidatedRequest, view: DPriceView): DPrice {
  const facts = DPriceFacts.safeParse(request.facts);
  if (!facts.success) return { microUsd: null, formula: "unpriced: the job's D facts are missing or unreadable" };
  const { endpoint, outputPixels, references, imageCount } = facts.data;
  return priceD({ endpoint, outputPixels, referencePixels: references.map((reference) => reference.pixels), imageCount }, view);
}

export function estimateD(request: ValidatedRequest, view: DPriceView = "pricing-page"): Estimate {
  const price = priceOf(request, view);
  return { microUsd: price.microUsd, source: price.microUsd === null ? price.formula : `${price.formula}; estimate` };
}

/** D reports no charge: a succeeded job is priced by formula; for any other outcome the charge is unknown. */
export function chargeD(request: ValidatedRequest, outcome: ProviderStatus, view: DPriceView = "pricing-page"): Charge {
  if (outcome.kind !== "succeeded") return { microUsd: null, source: "D does not publish whether failed jobs are charged" };
  const price = priceOf(request, view);
  return { microUsd: price.microUsd, source: price.microUsd === null ? price.formula : `${price.formula}; computed by mediagate, D reports no charge` };
}

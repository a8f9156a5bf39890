export { createDAdapter, type DAdapterConfig } from "./adapter.js";
export { validateDRequest } from "./schema.js";
export { chargeD, D_PRICE_VIEWS, estimateD, priceD, type DPrice, type DPriceInput, type DPriceView } from "./pricing.js";
export { D_ENDPOINT_INFO, D_ENDPOINTS, type DEndpoint, type DEndpointInfo, type DTier } from "./models.js";
export { IMAGE_COUNT_NOTE, REFERENCE_VALUE_FORMAT, type DFacts, type DReferenceFact } from "./facts.js";
export { billedOutputMegapixels, MAX_OUTPUT_PIXELS, PIXELS_PER_MEGAPIXEL } from "./megapixels.js";
export { imageSizeOf, imageSizeOfText, type ImageSize } from "../../core/image-size.js";

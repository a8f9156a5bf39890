/**
 * Provider B: a catalog of media operations, each an asynchronous job.
 *
 * How a JobRequest names an operation (spec B Endpoints rule 1: the path is
 * `{vendor}/{model}/{function}`, slashes inside api_ids and models are
 * literal, and an operation is chosen by its function segment):
 *
 * - `model: "vendorx/video-2.5", operation: "image-to-video"`: the model, and
 *   the function as the operation; the api_id is `model + "/" + operation`.
 * - `model: "vendorx/video-2.5/image-to-video"` and no operation: the full
 *   api_id, as `mediagate catalog` lists it.
 *
 * Either way the validated request stores `model` = every segment but the
 * last (`kestrel/motion/v3`) and `operation` = the function. Nothing about
 * paths, fields, enums, prices or support is inferred from a name: `prefetch`
 * reads the catalog record (`GET /catalog/apis/{api_id}?expand=inputs`) and
 * `validate` checks the input against its `input_schema`.
 */
export { createBAdapter, type BAdapter, type BAdapterConfig } from "./adapter.js";
export { createBAccount, type BAccount, type BAccountConfig, type BBalance } from "./account.js";
export { apiIdOf, apiIdPath, splitApiId, type BApiIdParts } from "./api-id.js";
export {
  BCatalogCache,
  readCatalogList,
  readCatalogRecord,
  type BAvailability,
  type BCachedOperation,
  type BCatalogEntry,
  type BCatalogList,
  type BCatalogRecord,
} from "./catalog.js";
export { bEndpoints, keyHeaders, type BEndpoints } from "./endpoints.js";
export { compileInputSchema, type InputProblem, type InputSchemaCheck } from "./input-schema.js";
export { B_JOB_STATUSES, BJob, billingOf, jobErrorOf, mediaOf, parseJob, type BMedia } from "./job-object.js";
export { PENDING_REREAD_MS, UNAVAILABLE_REREAD_MS } from "./settlement.js";
export { checkSpendRange, MAX_SPEND_SPAN_DAYS, type BSpendReport, type BSpendRow } from "./spend.js";
export { validateBRequest, type BFacts } from "./validate.js";
export { BWebhookError, verifyBWebhook, WEBHOOK_TOLERANCE_MS, type BWebhookErrorCode, type BWebhookEvent, type VerifyBWebhookOptions } from "./webhook.js";

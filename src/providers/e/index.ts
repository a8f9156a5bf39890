export { createEAdapter, type EAdapter, type EAdapterConfig, type ECancelMethod, type EUnshownPathOperation } from "./adapter.js";
export { ASSUMED_TOKEN_LIFETIME_MS, MAX_REFRESH_MARGIN_MS } from "./auth.js";
export { SOURCE_IMAGE_FORMAT, UPLOAD_MEDIA_TYPES, UPLOAD_VALIDITY_MS, type EFacts, type EPendingUpload, type EUploadMediaType } from "./facts.js";
export { E_DEFAULT_OPERATION, E_MODELS, E_OPERATION_INFO, E_OPERATIONS, type EModel, type EOperation, type EOperationInfo } from "./operations.js";
export { E_UNPRICED_SOURCE } from "./pricing.js";
export { mediaTypeOf, validateERequest } from "./schema.js";
export { eScopeList, type EScopeNames } from "./scopes.js";
export { REUPLOAD_MARGIN_MS } from "./uploads.js";

export { createFAdapter, type FAdapterConfig } from "./adapter.js";
export { validateFRequest, type FFacts, type FValidationSettings } from "./schema.js";
export { readGeneration, type GenerationReading } from "./generation-status.js";
export { checkWebhookUrl, type ResolveHost } from "./webhook-url.js";
export { chargeF, estimateF, F_PRICE_SOURCE } from "./pricing.js";
export { decodeEd25519X, ed25519PublicKey, FKeyCache, parseJwks, type FKeySet, type FPublicKey, type JwksLoader } from "./jwks.js";
export { F_WEBHOOK_HEADERS, fSignedMessage, verifyWithKeys, type FSignedHeaders } from "./signature.js";
export {
  createFWebhookVerifier,
  DEFAULT_F_JWKS_REFRESH_COOLDOWN_MS,
  DEFAULT_F_WEBHOOK_TOLERANCE_MS,
  FWebhookVerificationError,
  jwksUrlLoader,
  verifyFDelivery,
  type FSignedDelivery,
  type FVerifiedDelivery,
  type FVerifyCall,
  type FWebhookFailure,
  type FWebhookHeaders,
  type FWebhookVerifier,
  type FWebhookVerifierOptions,
} from "./webhook-verifier.js";

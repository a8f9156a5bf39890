/**
 * The library's face: what `import … from "mediagate"` gives. The class
 * itself is the application's (`app/mediagate.ts`), which the AI SDK
 * provider uses too.
 */
export { Mediagate, type CommonSubmitRequest, type MediagateOptions, type SubmitOptions } from "./app/mediagate.js";
export type { Job, JobOutput, JobState, JobEvent } from "./core/job.js";
export type { JobTiming } from "./app/eta.js";
export type { JobRequest, Estimate, ProviderId } from "./providers/adapter.js";
export type { CommonRequest, CommonTask, ImageInput } from "./core/common-request.js";
export { NoEligibleTargetError, type TargetVerdict } from "./engine/route.js";
export { InputError, ConfigError, BudgetError, ProviderError, MediagateError } from "./core/errors.js";
export { formatMicroUsd, usdToMicroUsd } from "./core/money.js";
// Webhook verification usable on its own (without the engine or `mediagate serve`).
export { BWebhookError, verifyBWebhook, type BWebhookEvent } from "./providers/b/index.js";
export {
  createFWebhookVerifier,
  FWebhookVerificationError,
  type FVerifiedDelivery,
  type FWebhookVerifier,
  type FWebhookVerifierOptions,
} from "./providers/f/index.js";


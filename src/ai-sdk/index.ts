/**
 * `mediagate/ai-sdk`: an AI SDK (`ai` 6) provider whose image and video
 * models run through mediagate's durable queue, limits and ledger.
 *
 * ```ts
 * import { generateImage } from "ai";
 * import { createMediagate } from "mediagate/ai-sdk";
 *
 * const mediagate = createMediagate(); // or createMediagate({ gate }) with an instance you opened
 * const { image, providerMetadata } = await generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a red fox", size: "1024x768" });
 * ```
 *
 * What a call becomes: one job per image or video asked for, each a common
 * request (`task`, `prompt`, `size`, …) for the model's target or route,
 * judged against every target before anything is sent. Whatever the common
 * request cannot carry and would change the result (`mask`, `fps`, another
 * provider's `providerOptions`) is refused, never dropped; what a target
 * changes (D's multiples of 16) comes back as a warning. The bytes returned
 * are those of the saved files; `providerMetadata.mediagate.images[i]` (or
 * `.videos[i]`) names the job, its target, its charge and the route's attempts.
 *
 * Aborting a call stops the waiting, not the jobs: they stay in the store and
 * go on. Give `providerOptions.mediagate.ref` and the same call again takes
 * them up instead of paying twice.
 */
export { createMediagate, type MediagateProvider, type MediagateProviderSettings } from "./provider.js";
export { MediagateImageModel } from "./image-model.js";
export { MediagateVideoModel, type VideoCallOptions } from "./video-model.js";
export type { MediagateTarget } from "./target.js";
export type { MediagateCallOptions } from "./provider-options.js";
export { MediagateJobError, MediagateWaitAbortedError } from "./errors.js";

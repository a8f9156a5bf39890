import { UnsupportedFunctionalityError, type ImageModelV3, type ImageModelV3CallOptions, type SharedV3Warning } from "@ai-sdk/provider";
import type { CommonSubmitRequest } from "../app/mediagate.js";
import { outputMetadata, runCallJobs } from "./call-jobs.js";
import { imageInputOf } from "./files.js";
import { headerWarnings } from "./headers.js";
import type { ModelSettings } from "./model-settings.js";
import { checkCallText, mediagateCallOptions, MEDIAGATE_NAMESPACE } from "./provider-options.js";
import { modelIdOf, routingOf, type MediagateTarget } from "./target.js";

type ImageResult = Awaited<ReturnType<ImageModelV3["doGenerate"]>>;

/**
 * The AI SDK's image call as a common image request:
 *
 * | AI SDK            | common request | how |
 * |---|---|---|
 * | `prompt`          | `prompt`        | as is |
 * | `size` "WxH"      | `size`          | as is; a target that changes it (D's multiples of 16) says so in a warning |
 * | `aspectRatio`     | `aspect_ratio`  | as is; with `size`, both must describe the same shape |
 * | `seed`            | `seed`          | as is; with `n` > 1, seed, seed + 1, … (one per job, see `runCallJobs`), with a warning |
 * | `files`           | `images`        | links as given (http(s) only), bytes as files |
 * | `n`               | one job per image | never `n` in one request (see `runCallJobs`) |
 * | `mask`            | refused         | a common request carries no mask; dropping it would make another picture |
 * | `providerOptions` | `.mediagate` only | see `MediagateCallOptions`; other namespaces refused |
 * | `headers`         | warned          | not sent (see `headerWarnings`) |
 * | `abortSignal`     | ends the wait   | the jobs go on (see `MediagateWaitAbortedError`) |
 */
export class MediagateImageModel implements ImageModelV3 {
  readonly specificationVersion = "v3";
  readonly provider = "mediagate.image";
  readonly modelId: string;
  /**
   * The AI SDK hands all `n` images to one `doGenerate` (it divides `n` by
   * this), which queues one job per image. Were it 1, the SDK would make `n`
   * identical calls, and a ref given in `providerOptions` would name the same
   * one job in each: `n` copies of one image. Any finite number at least `n`
   * does; Infinity would make the SDK's count of calls 0.
   */
  readonly maxImagesPerCall = Number.MAX_SAFE_INTEGER;

  constructor(
    private readonly target: MediagateTarget,
    private readonly settings: ModelSettings,
  ) {
    this.modelId = modelIdOf(target);
  }

  async doGenerate(options: ImageModelV3CallOptions): Promise<ImageResult> {
    const startedAt = new Date();
    const call = mediagateCallOptions(options.providerOptions);
    checkCallText(options.prompt, call);
    if (options.mask !== undefined) {
      throw new UnsupportedFunctionalityError({
        functionality: "mask",
        message: `mask: a common request carries no inpainting mask, and leaving it out would make another picture; give a provider's native mask field in providerOptions.${MEDIAGATE_NAMESPACE}.provider_options.<provider>`,
      });
    }
    const warnings: SharedV3Warning[] = headerWarnings(options.headers);
    const request: CommonSubmitRequest = {
      task: "image",
      ...(options.prompt !== undefined ? { prompt: options.prompt } : {}),
      ...(options.size !== undefined ? { size: options.size } : {}),
      ...(options.aspectRatio !== undefined ? { aspect_ratio: options.aspectRatio } : {}),
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
      ...(options.files !== undefined && options.files.length > 0 ? { images: options.files.map((file, index) => imageInputOf(file, `files[${index}]`, `image-${index + 1}`)) } : {}),
      ...(call.provider_options !== undefined ? { provider_options: call.provider_options } : {}),
      ...routingOf(this.target, call),
    };
    const gate = await this.settings.gate();
    const result = await runCallJobs({ gate, request, count: options.n, ref: call.ref, outDir: this.settings.outDir, cancelAfterS: call.cancel_after_s, signal: options.abortSignal, mediaPrefix: "image/" });
    return {
      images: result.outputs.map((output) => output.bytes),
      warnings: [...warnings, ...result.warnings],
      // The AI SDK keeps only `images` of an image model's metadata, so everything is said per image.
      providerMetadata: { [MEDIAGATE_NAMESPACE]: { images: result.outputs.map(outputMetadata) } },
      response: { timestamp: startedAt, modelId: result.targets.join(","), headers: undefined },
    };
  }
}

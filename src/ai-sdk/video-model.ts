import {
  InvalidArgumentError,
  UnsupportedFunctionalityError,
  type Experimental_VideoModelV3 as VideoModelV3,
  type Experimental_VideoModelV3CallOptions as VideoModelV3CallOptions,
  type SharedV3Warning,
} from "@ai-sdk/provider";
import type { ImageInput } from "../core/common-request.js";
import type { CommonSubmitRequest } from "../app/mediagate.js";
import { outputMetadata, runCallJobs } from "./call-jobs.js";
import { imageInputOf, type SdkFile } from "./files.js";
import { headerWarnings } from "./headers.js";
import type { ModelSettings } from "./model-settings.js";
import { checkCallText, mediagateCallOptions, MEDIAGATE_NAMESPACE } from "./provider-options.js";
import { modelIdOf, routingOf, type MediagateTarget } from "./target.js";

type VideoResult = Awaited<ReturnType<VideoModelV3["doGenerate"]>>;

/**
 * The call options `experimental_generateVideo` of `ai` 6.0 passes beyond
 * the V3 type of `@ai-sdk/provider` 3.0.10: role-tagged frames, reference
 * inputs and audio (later versions of the provider package type them).
 */
export interface VideoCallOptions extends Omit<VideoModelV3CallOptions, "aspectRatio"> {
  frameImages?: Array<{ image: SdkFile; frameType: "first_frame" | "last_frame" }> | undefined;
  inputReferences?: SdkFile[] | undefined;
  generateAudio?: boolean | undefined;
  /** The SDK's type says "W:H"; its `experimental_generateVideo` also passes "adaptive" (the ratio of the first frame). */
  aspectRatio: VideoModelV3CallOptions["aspectRatio"] | "adaptive";
}

/** The first and last frame of a call: `frameImages` by role, `image` (the SDK's start image) as the first frame. */
function framesOf(options: VideoCallOptions): { first?: SdkFile; last?: SdkFile } {
  const byRole = (role: "first_frame" | "last_frame") => (options.frameImages ?? []).filter((frame) => frame.frameType === role);
  const firsts = byRole("first_frame");
  const lasts = byRole("last_frame");
  if (firsts.length > 1 || lasts.length > 1) {
    throw new InvalidArgumentError({ argument: "frameImages", message: `frameImages: one first_frame and one last_frame at most, got ${firsts.length} and ${lasts.length}` });
  }
  const frameFirst = firsts[0]?.image;
  // The SDK passes its start image as `image` and, when a first_frame is given, that very frame: a different one would be dropped.
  if (options.image !== undefined && frameFirst !== undefined && options.image !== frameFirst) {
    throw new InvalidArgumentError({ argument: "image", message: "image and frameImages' first_frame are two different first frames; give one" });
  }
  const first = frameFirst ?? options.image;
  const last = lasts[0]?.image;
  return { ...(first !== undefined ? { first } : {}), ...(last !== undefined ? { last } : {}) };
}

/**
 * The AI SDK's video call as a common video request:
 *
 * | AI SDK                    | common request | how |
 * |---|---|---|
 * | `prompt`                  | `prompt`           | as is (may be left out with a first frame) |
 * | `aspectRatio`             | `aspect_ratio`     | as is, "adaptive" included |
 * | `resolution` "WxH"        | `size`             | a target that takes another form says what it sends (A: a ratio and 720p) |
 * | `duration`                | `duration_s`       | as is; a target that rounds it says so |
 * | `seed`                    | `seed`             | as is; with `n` > 1, seed, seed + 1, … as for images |
 * | `image`, `frameImages`    | `first_frame`, `last_frame` | links as given (http(s) only), bytes as files |
 * | `inputReferences`         | `reference_images` | images only; a reference video is refused |
 * | `generateAudio`           | `generate_audio`   | as is |
 * | `n`                       | one job per video  | as for images |
 * | `fps`                     | refused            | a common request has no frame rate; leaving it out would make another clip |
 * | `providerOptions`, `headers`, `abortSignal` | as for images | |
 */
export class MediagateVideoModel implements VideoModelV3 {
  readonly specificationVersion = "v3";
  readonly provider = "mediagate.video";
  readonly modelId: string;
  /** All `n` videos in one `doGenerate`, one job each, for the reason given on the image model's `maxImagesPerCall`. */
  readonly maxVideosPerCall = Number.MAX_SAFE_INTEGER;

  constructor(
    private readonly target: MediagateTarget,
    private readonly settings: ModelSettings,
  ) {
    this.modelId = modelIdOf(target);
  }

  async doGenerate(options: VideoCallOptions): Promise<VideoResult> {
    const startedAt = new Date();
    const call = mediagateCallOptions(options.providerOptions);
    checkCallText(options.prompt, call);
    if (options.fps !== undefined) {
      throw new UnsupportedFunctionalityError({
        functionality: "fps",
        message: `fps: a common request has no frame rate, and leaving it out would make another clip; give a provider's native field in providerOptions.${MEDIAGATE_NAMESPACE}.provider_options.<provider>`,
      });
    }
    const warnings: SharedV3Warning[] = headerWarnings(options.headers);
    const { first, last } = framesOf(options);
    const references: ImageInput[] = (options.inputReferences ?? []).map((reference, index) => imageInputOf(reference, `inputReferences[${index}]`, `reference-${index + 1}`));
    const request: CommonSubmitRequest = {
      task: "video",
      ...(options.prompt !== undefined ? { prompt: options.prompt } : {}),
      ...(options.aspectRatio !== undefined ? { aspect_ratio: options.aspectRatio } : {}),
      ...(options.resolution !== undefined ? { size: options.resolution } : {}),
      ...(options.duration !== undefined ? { duration_s: options.duration } : {}),
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
      ...(first !== undefined ? { first_frame: imageInputOf(first, "first frame", "first-frame") } : {}),
      ...(last !== undefined ? { last_frame: imageInputOf(last, "last frame", "last-frame") } : {}),
      ...(references.length > 0 ? { reference_images: references } : {}),
      ...(options.generateAudio !== undefined ? { generate_audio: options.generateAudio } : {}),
      ...(call.provider_options !== undefined ? { provider_options: call.provider_options } : {}),
      ...routingOf(this.target, call),
    };
    const gate = await this.settings.gate();
    const result = await runCallJobs({ gate, request, count: options.n, ref: call.ref, outDir: this.settings.outDir, cancelAfterS: call.cancel_after_s, signal: options.abortSignal, mediaPrefix: "video/" });
    return {
      videos: result.outputs.map(({ bytes, output }) => ({ type: "binary", data: bytes, mediaType: output.contentType })),
      warnings: [...warnings, ...result.warnings],
      providerMetadata: { [MEDIAGATE_NAMESPACE]: { videos: result.outputs.map(outputMetadata) } },
      response: { timestamp: startedAt, modelId: result.targets.join(","), headers: undefined },
    };
  }
}

import { InvalidArgumentError, NoSuchModelError, type ProviderV3 } from "@ai-sdk/provider";
import { MediagateError } from "../core/errors.js";
import { Mediagate, type MediagateOptions } from "../app/mediagate.js";
import { MediagateImageModel } from "./image-model.js";
import type { ModelSettings } from "./model-settings.js";
import { checkTarget, type MediagateTarget } from "./target.js";
import { MediagateVideoModel } from "./video-model.js";

/**
 * Which Mediagate instance the provider's calls go through, and where their
 * files go. Give at most one of `gate` and `open`; with neither, one is
 * opened from the MEDIAGATE_* environment variables (`process.env`), whose
 * errors name the variable to set.
 */
export interface MediagateProviderSettings {
  /** An instance you opened: you keep owning it (the provider's `close()` leaves it open). */
  gate?: Mediagate;
  /**
   * How to open an instance on the first call (nothing is opened before):
   * the provider owns it, runs its engine in this process unless
   * `runEngine: false`, and closes it in `close()`.
   */
  open?: MediagateOptions;
  /** Where outputs are saved (default: the instance's MEDIAGATE_OUTPUT_DIR). */
  outDir?: string;
}

export interface MediagateProvider extends ProviderV3 {
  /** An image model over one target (`"d/gen-2-pro"`) or a route (`{ route: ["d/gen-2-pro", "f/img-v2"] }`). */
  image(target: MediagateTarget): MediagateImageModel;
  imageModel(target: MediagateTarget): MediagateImageModel;
  /** A video model over one target (`"a/vidgen-2-0-250601"`) or a route. */
  video(target: MediagateTarget): MediagateVideoModel;
  /** The name `experimental_generateVideo` looks for on a provider given a model id as a string. */
  videoModel(target: MediagateTarget): MediagateVideoModel;
  /** The instance the calls go through (opened now, when the provider owns it and has not opened it yet): for `get`, `list`, `cancel`, `wait`. */
  mediagate(): Promise<Mediagate>;
  /**
   * Closes the instance the provider opened (its engine stops; jobs not
   * finished stay in the store for the next engine), after which calls are
   * refused. An instance given as `gate` is left open: its owner closes it.
   */
  close(): Promise<void>;
}

/**
 * An AI SDK provider whose image and video models run each call as durable
 * mediagate jobs: queued in the store before anything is sent, sent within
 * the providers' limits, retried, charged to the ledger and saved to files.
 *
 * ```ts
 * const mediagate = createMediagate({ gate });
 * const { image } = await generateImage({ model: mediagate.image("d/gen-2-pro"), prompt, size: "1024x768" });
 * ```
 */
export function createMediagate(settings: MediagateProviderSettings = {}): MediagateProvider {
  if (settings.gate !== undefined && settings.open !== undefined) {
    throw new InvalidArgumentError({ argument: "open", message: "createMediagate: give gate (an open instance) or open (options to open one), not both" });
  }
  let opening: Promise<Mediagate> | null = null;
  let closed = false;

  const gate = (): Promise<Mediagate> => {
    if (closed) return Promise.reject(new MediagateError("provider_closed", "this mediagate AI SDK provider was closed; create another to make more calls"));
    if (settings.gate !== undefined) return Promise.resolve(settings.gate);
    opening ??= Mediagate.open(settings.open ?? {}).catch((error: unknown) => {
      // A failed open (a variable not set) is tried again by the next call, once it may have been fixed.
      opening = null;
      throw error;
    });
    return opening;
  };
  const modelSettings: ModelSettings = { gate, outDir: settings.outDir };

  const image = (target: MediagateTarget) => {
    checkTarget(target, "imageModel");
    return new MediagateImageModel(target, modelSettings);
  };
  const video = (target: MediagateTarget) => {
    checkTarget(target, "videoModel");
    return new MediagateVideoModel(target, modelSettings);
  };
  const noModel = (modelType: "languageModel" | "embeddingModel") => (modelId: string): never => {
    throw new NoSuchModelError({ modelId, modelType, message: `mediagate makes images and videos; it has no ${modelType} ${modelId}` });
  };

  return {
    specificationVersion: "v3",
    image,
    imageModel: image,
    video,
    videoModel: video,
    languageModel: noModel("languageModel"),
    embeddingModel: noModel("embeddingModel"),
    textEmbeddingModel: noModel("embeddingModel"),
    mediagate: gate,
    async close() {
      if (closed) return;
      closed = true;
      const owned = opening;
      opening = null;
      if (owned === null) return;
      // An open that failed left nothing to close.
      const instance = await owned.catch(() => null);
      await instance?.close();
    },
  };
}

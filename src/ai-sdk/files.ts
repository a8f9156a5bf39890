import { InvalidArgumentError, UnsupportedFunctionalityError, type ImageModelV3File } from "@ai-sdk/provider";
import type { ImageInput } from "../core/common-request.js";
import { imageTypeOf } from "../core/image-type.js";

/** An image the AI SDK hands a model (image files, video frames and references have this one shape). */
export type SdkFile = ImageModelV3File;

const EXTENSIONS: Readonly<Record<string, string>> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" };

/**
 * An AI SDK file as a common request's image: a link as given, bytes as a
 * file already read (`{ fileName, bytes }`), named `name` with the extension
 * of its type. `field` names it in messages (`files[0]`, `frameImages[1]`).
 *
 * Only http(s) links are taken: the library reads any other text as a local
 * file path, which a link handed to a model must never become. Anything that
 * is not an image (a reference video) is refused: a common request carries
 * images only. Whether the bytes are an image the library judges by their
 * first bytes, before anything is sent.
 */
export function imageInputOf(file: SdkFile, field: string, name: string): ImageInput {
  // A common request has no options per image: options given for one would be dropped.
  if (file.providerOptions !== undefined && Object.keys(file.providerOptions).length > 0) {
    throw new InvalidArgumentError({ argument: `${field}.providerOptions`, message: `${field}.providerOptions: mediagate takes no options per image; give native fields in the call's providerOptions.mediagate.provider_options` });
  }
  if (file.type === "url") {
    if (!/^https?:\/\//i.test(file.url)) {
      throw new InvalidArgumentError({
        argument: field,
        message: `${field}: ${JSON.stringify(file.url.slice(0, 80))} is not an http(s) link; give an image as an http(s) URL or as its bytes`,
      });
    }
    return file.url;
  }
  if (!file.mediaType.startsWith("image/")) {
    throw new UnsupportedFunctionalityError({
      functionality: `${field} of type ${file.mediaType}`,
      message: `${field}: mediagate takes images (PNG, JPEG or WebP) here, not ${file.mediaType}`,
    });
  }
  const bytes = typeof file.data === "string" ? Buffer.from(file.data, "base64") : Buffer.from(file.data.buffer, file.data.byteOffset, file.data.byteLength);
  const extension = EXTENSIONS[imageTypeOf(bytes) ?? file.mediaType] ?? "bin";
  return { fileName: `${name}.${extension}`, bytes };
}

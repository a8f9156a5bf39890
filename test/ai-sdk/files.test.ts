import { InvalidArgumentError, UnsupportedFunctionalityError } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { imageInputOf } from "../../src/ai-sdk/files.js";

/** The smallest PNG: the signature and an IHDR of 1x1. */
const TINY_PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
/** A JPEG's first bytes: start of image, then a marker. */
const JPEG_START = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]);
/** Bytes that are no image by their signature. */
const NOT_AN_IMAGE = Buffer.from("not an image at all");

/** The error `read` throws, or null. */
function thrownBy(read: () => unknown): unknown {
  try {
    read();
    return null;
  } catch (error) {
    return error;
  }
}

describe("AI SDK provider: an image handed to a model as a common request's image", () => {
  it("AI SDK files: an http or https link (in any case) is taken as given", () => {
    for (const url of ["https://images.example/fox.png", "http://images.example/fox.png", "HTTPS://IMAGES.EXAMPLE/FOX.PNG"]) {
      expect(imageInputOf({ type: "url", url }, "files[0]", "image-1")).toBe(url);
    }
  });

  it("AI SDK files: any other link is refused naming the field (the library would read it as a local path), its text cut at 80 characters", () => {
    for (const url of ["file:///etc/passwd", "ftp://images.example/fox.png", " https://images.example/fox.png", "https:/images.example/fox.png", "/etc/passwd", "data:image/png;base64,AAAA"]) {
      const error = thrownBy(() => imageInputOf({ type: "url", url }, "frameImages[1]", "last-frame"));
      expect(InvalidArgumentError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ argument: "frameImages[1]", message: `frameImages[1]: ${JSON.stringify(url)} is not an http(s) link; give an image as an http(s) URL or as its bytes` });
    }
    const long = `file:///${"a".repeat(100)}`;
    const error = thrownBy(() => imageInputOf({ type: "url", url: long }, "files[2]", "image-3"));
    expect((error as Error).message).toBe(`files[2]: ${JSON.stringify(long.slice(0, 80))} is not an http(s) link; give an image as an http(s) URL or as its bytes`);
  });

  it("AI SDK files: bytes given as base64 text or as a view into a larger buffer are read as exactly those bytes, a file named with the type their first bytes show", () => {
    const fromBase64 = imageInputOf({ type: "file", mediaType: "image/png", data: TINY_PNG.toString("base64") }, "files[0]", "image-1");
    expect(fromBase64).toEqual({ fileName: "image-1.png", bytes: TINY_PNG });

    const larger = Buffer.concat([Buffer.from("before"), TINY_PNG, Buffer.from("after")]);
    const view = new Uint8Array(larger.buffer, larger.byteOffset + 6, TINY_PNG.length);
    const fromView = imageInputOf({ type: "file", mediaType: "image/png", data: view }, "inputReferences[0]", "reference-1");
    expect(fromView).toEqual({ fileName: "reference-1.png", bytes: TINY_PNG });
  });

  it("AI SDK files: the extension follows the bytes over the stated type (PNG bytes called JPEG are .png); bytes of no known type take the stated one's, else .bin", () => {
    const named = (mediaType: string, data: Uint8Array) => (imageInputOf({ type: "file", mediaType, data }, "files[0]", "image-1") as { fileName: string }).fileName;
    expect(named("image/jpeg", TINY_PNG)).toBe("image-1.png");
    expect(named("image/png", JPEG_START)).toBe("image-1.jpg");
    expect(named("image/webp", NOT_AN_IMAGE)).toBe("image-1.webp");
    expect(named("image/jpeg", NOT_AN_IMAGE)).toBe("image-1.jpg");
    expect(named("image/png", NOT_AN_IMAGE)).toBe("image-1.png");
    expect(named("image/gif", NOT_AN_IMAGE)).toBe("image-1.bin");
  });

  it("AI SDK files: a file that is not an image (a reference video) is refused as unsupported, naming the field and its type", () => {
    for (const mediaType of ["video/mp4", "application/octet-stream"]) {
      const error = thrownBy(() => imageInputOf({ type: "file", mediaType, data: TINY_PNG }, "inputReferences[1]", "reference-2"));
      expect(UnsupportedFunctionalityError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ functionality: `inputReferences[1] of type ${mediaType}`, message: `inputReferences[1]: mediagate takes images (PNG, JPEG or WebP) here, not ${mediaType}` });
    }
  });

  it("AI SDK files: options given for one image are refused (a common request has none per image); an empty set of options is none", () => {
    const error = thrownBy(() => imageInputOf({ type: "url", url: "https://images.example/fox.png", providerOptions: { d: { strength: 0.5 } } }, "files[1]", "image-2"));
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      argument: "files[1].providerOptions",
      message: "files[1].providerOptions: mediagate takes no options per image; give native fields in the call's providerOptions.mediagate.provider_options",
    });
    const onBytes = thrownBy(() => imageInputOf({ type: "file", mediaType: "image/png", data: TINY_PNG, providerOptions: { d: {} } }, "files[0]", "image-1"));
    expect(onBytes).toMatchObject({ argument: "files[0].providerOptions" });
    expect(imageInputOf({ type: "url", url: "https://images.example/fox.png", providerOptions: {} }, "files[0]", "image-1")).toBe("https://images.example/fox.png");
  });
});

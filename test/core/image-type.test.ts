import { describe, expect, it } from "vitest";
import { imageTypeOf } from "../../src/core/image-type.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import { jpegHeader } from "../providers/d/images.js";

describe("image types by their first bytes", () => {
  it("PNG, JPEG and WebP are recognised by their signatures", () => {
    expect(imageTypeOf(renderPng(8, 8, "x", 1))).toBe("image/png");
    expect(imageTypeOf(jpegHeader(64, 48))).toBe("image/jpeg");
    expect(imageTypeOf(Buffer.from("RIFF\u0000\u0000\u0000\u0000WEBPVP8 ", "latin1"))).toBe("image/webp");
  });

  it("text, an empty file, a truncated signature and other containers are not images", () => {
    expect(imageTypeOf(Buffer.from("root:x:0:0:root:/root:/bin/bash\n"))).toBeNull();
    expect(imageTypeOf(Buffer.alloc(0))).toBeNull();
    expect(imageTypeOf(renderPng(8, 8, "x", 1).subarray(0, 7))).toBeNull();
    expect(imageTypeOf(Buffer.from([0xff, 0xd8]))).toBeNull();
    expect(imageTypeOf(Buffer.from("RIFF\u0000\u0000\u0000\u0000WAVEfmt ", "latin1"))).toBeNull();
    expect(imageTypeOf(Buffer.from("GIF89a"))).toBeNull();
  });
});

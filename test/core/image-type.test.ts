import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { IMAGE_MEDIA_TYPES, IMAGE_TYPES_ALLOWED, imageTypeOf } from "../../src/core/image-type.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import { jpegHeader } from "../providers/d/images.js";

describe("image types by their first bytes", () => {
  it("PNG, JPEG and WebP are recognised by their signatures", () => {
    expect(imageTypeOf(renderPng(8, 8, "x", 1))).toBe("image/png");
    expect(imageTypeOf(jpegHeader(64, 48))).toBe("image/jpeg");
    expect(imageTypeOf(Buffer.from("RIFF\u0000\u0000\u0000\u0000WEBPVP8 ", "latin1"))).toBe("image/webp");
  });

  it("real files: every PNG, JPEG and WebP fixture is recognised, and a GIF is not one of the types sent", () => {
    const image = (name: string) => readFileSync(new URL(`images/${name}`, import.meta.url));
    for (const name of ["rgb.png", "rgb16.png", "palette.png", "interlaced.png"]) expect(imageTypeOf(image(name)), name).toBe("image/png");
    for (const name of ["baseline.jpg", "progressive.jpg", "arithmetic.jpg", "cmyk.jpg", "exif-orientation-6.jpg"]) expect(imageTypeOf(image(name)), name).toBe("image/jpeg");
    for (const name of ["lossy.webp", "lossless.webp", "alpha.webp", "animated.webp"]) expect(imageTypeOf(image(name)), name).toBe("image/webp");
    for (const name of ["gif87a.gif", "gif89a.gif", "animated.gif"]) expect(imageTypeOf(image(name)), name).toBeNull();
  });

  it("a real file cut inside its signature is not an image; cut after it, it still is (the size, not the type, needs the rest)", () => {
    const image = (name: string) => readFileSync(new URL(`images/${name}`, import.meta.url));
    for (const [name, signatureLength] of [["rgb.png", 8], ["baseline.jpg", 3], ["lossy.webp", 12]] as const) {
      const whole = image(name);
      for (let length = 0; length < signatureLength; length++) expect(imageTypeOf(whole.subarray(0, length)), `${name} cut to ${length}`).toBeNull();
      expect(imageTypeOf(whole.subarray(0, signatureLength)), `${name} cut to ${signatureLength}`).toBe(imageTypeOf(whole));
    }
  });

  it("text, an empty file, a truncated signature and other containers are not images", () => {
    expect(imageTypeOf(Buffer.from("root:x:0:0:root:/root:/bin/bash\n"))).toBeNull();
    expect(imageTypeOf(Buffer.alloc(0))).toBeNull();
    expect(imageTypeOf(renderPng(8, 8, "x", 1).subarray(0, 7))).toBeNull();
    expect(imageTypeOf(Buffer.from([0xff, 0xd8]))).toBeNull();
    expect(imageTypeOf(Buffer.from("RIFF\u0000\u0000\u0000\u0000WAVEfmt ", "latin1"))).toBeNull();
    expect(imageTypeOf(Buffer.from("GIF89a"))).toBeNull();
  });

  it("the shortest signatures are enough: eight PNG bytes, three JPEG bytes, twelve WebP bytes", () => {
    expect(imageTypeOf(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe("image/png");
    expect(imageTypeOf(Buffer.from([0xff, 0xd8, 0xff]))).toBe("image/jpeg");
    expect(imageTypeOf(Buffer.from("RIFF\u0000\u0000\u0000\u0000WEBP", "latin1"))).toBe("image/webp");
    expect(imageTypeOf(Buffer.from("RIFF\u0000\u0000\u0000\u0000WEB", "latin1"))).toBeNull();
  });

  it("each byte of a JPEG's start counts: FF D8 then FF", () => {
    for (const bytes of [[0x00, 0xd8, 0xff], [0xff, 0x00, 0xff], [0xff, 0xd8, 0x00], [0xd8, 0xff, 0xff]]) expect(imageTypeOf(Buffer.from(bytes)), String(bytes)).toBeNull();
  });

  it("a WebP needs both RIFF and WEBP in their places", () => {
    expect(imageTypeOf(Buffer.from("RIFX\u0000\u0000\u0000\u0000WEBPVP8 ", "latin1"))).toBeNull();
    expect(imageTypeOf(Buffer.from("\u0000\u0000\u0000\u0000RIFFWEBPVP8 ", "latin1"))).toBeNull();
  });

  it("the bytes of a view into a larger buffer are read from the view's start", () => {
    const file = Buffer.concat([Buffer.from("padding!"), Buffer.from([0xff, 0xd8, 0xff, 0xe0])]);
    expect(imageTypeOf(new Uint8Array(file.buffer, file.byteOffset + 8, 4))).toBe("image/jpeg");
    expect(imageTypeOf(new Uint8Array(file.buffer, file.byteOffset, 8))).toBeNull();
  });

  it("refusals name the three types sent as files", () => {
    expect(IMAGE_MEDIA_TYPES).toEqual(["image/png", "image/jpeg", "image/webp"]);
    expect(IMAGE_TYPES_ALLOWED).toBe("a PNG, JPEG or WebP image");
  });
});

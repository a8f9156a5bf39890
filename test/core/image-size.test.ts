import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { imageSizeOf, imageSizeOfText } from "../../src/core/image-size.js";
import { renderPng } from "../../src/sandbox/media/png.js";

/** Real files made by ImageMagick, libjpeg-turbo, libwebp and exiftool (see images/README.md), with their sizes. */
const FIXTURES: Record<string, { width: number; height: number }> = {
  "rgb.png": { width: 301, height: 67 },
  "rgb16.png": { width: 301, height: 67 },
  "palette.png": { width: 33, height: 17 },
  "interlaced.png": { width: 40, height: 30 },
  "baseline.jpg": { width: 301, height: 67 },
  "progressive.jpg": { width: 301, height: 67 },
  "arithmetic.jpg": { width: 301, height: 67 },
  "cmyk.jpg": { width: 301, height: 67 },
  "exif-orientation-6.jpg": { width: 301, height: 67 },
  "lossy.webp": { width: 301, height: 67 },
  "lossless.webp": { width: 301, height: 67 },
  "alpha.webp": { width: 301, height: 67 },
  "animated.webp": { width: 300, height: 40 },
  "gif87a.gif": { width: 301, height: 67 },
  "gif89a.gif": { width: 301, height: 67 },
  "animated.gif": { width: 300, height: 40 },
};

function fixture(name: string): Buffer {
  return readFileSync(new URL(`images/${name}`, import.meta.url));
}

describe("image sizes read from the image's own header", () => {
  it("real PNG (8- and 16-bit, palette, interlaced), JPEG (baseline, progressive, arithmetic-coded, CMYK), WebP (lossy, lossless, extended, animated) and GIF (87a, 89a, animated) files give their size", () => {
    for (const [name, size] of Object.entries(FIXTURES)) expect(imageSizeOf(fixture(name)), name).toEqual(size);
  });

  it("a JPEG's EXIF orientation is not applied: a photo turned 90° gives its stored size", () => {
    expect(imageSizeOf(fixture("exif-orientation-6.jpg"))).toEqual(imageSizeOf(fixture("baseline.jpg")));
  });

  it("PNGs drawn by the sandbox give the size they were drawn at", () => {
    for (const [width, height] of [[1, 1], [17, 3], [300, 2], [2, 300]] as const) {
      expect(imageSizeOf(renderPng(width, height, "a fox", 7)), `${width}x${height}`).toEqual({ width, height });
    }
  });

  it("a file cut short at any length gives its size or null, never another size, even when the bytes after the cut are in the same memory", () => {
    for (const [name, size] of Object.entries(FIXTURES)) {
      const whole = fixture(name);
      for (let length = 0; length < whole.length; length++) {
        // The cut is a view into a larger buffer whose next bytes could pass for a size (as in Node's shared Buffer pool).
        const cut = Buffer.concat([whole.subarray(0, length), Buffer.alloc(64, 0x41)]).subarray(0, length);
        const answer = imageSizeOf(cut);
        if (answer !== null) expect(answer, `${name} cut to ${length} bytes`).toEqual(size);
      }
    }
  });

  it("each format's size is there once its header is: PNG at 24 bytes, GIF at 10, WebP lossy at 30, lossless at 25, extended at 30", () => {
    const complete: Record<string, number> = { "rgb.png": 24, "gif89a.gif": 10, "lossy.webp": 30, "lossless.webp": 25, "alpha.webp": 30 };
    for (const [name, length] of Object.entries(complete)) {
      expect(imageSizeOf(fixture(name).subarray(0, length - 1)), `${name} cut to ${length - 1}`).toBeNull();
      expect(imageSizeOf(fixture(name).subarray(0, length)), `${name} cut to ${length}`).toEqual(FIXTURES[name]);
    }
  });

  it("a JPEG whose next bytes are not a marker segment gives null, not a frame size found further on", () => {
    const fakeFrame = Buffer.from([0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x10]);
    expect(imageSizeOf(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00]), Buffer.alloc(4096, 0x00), fakeFrame]))).toBeNull();
    expect(imageSizeOf(Buffer.concat([Buffer.from([0xff, 0xd8]), Buffer.alloc(1024 * 1024, 0x00)]))).toBeNull();
    // Scan data before any frame header, and the end of the image.
    expect(imageSizeOf(Buffer.from([0xff, 0xd8, 0xff, 0xda, 0x00, 0x02, ...fakeFrame]))).toBeNull();
    expect(imageSizeOf(Buffer.from([0xff, 0xd8, 0xff, 0xd9, ...fakeFrame]))).toBeNull();
  });

  it("a WebP or GIF with a broken signature, start code or chunk name gives null", () => {
    const broken = (name: string, at: number, byte: number) => {
      const bytes = Buffer.from(fixture(name));
      bytes[at] = byte;
      return imageSizeOf(bytes);
    };
    expect(broken("lossy.webp", 23, 0x00)).toBeNull(); // start code 9D 01 2A
    expect(broken("lossless.webp", 20, 0x00)).toBeNull(); // signature 2F
    expect(broken("alpha.webp", 15, 0x59)).toBeNull(); // "VP8Y"
    expect(broken("lossy.webp", 8, 0x58)).toBeNull(); // "XEBP"
    expect(broken("gif89a.gif", 4, 0x38)).toBeNull(); // "GIF88a"
    // A zero width or height is no size.
    expect(imageSizeOf(Buffer.concat([fixture("gif89a.gif").subarray(0, 6), Buffer.from([0, 0, 67, 0])]))).toBeNull();
  });

  it("an image given as base64 text, bare or as a data: URL, is read the same", () => {
    const webp = fixture("lossless.webp").toString("base64");
    expect(imageSizeOfText(webp)).toEqual({ width: 301, height: 67 });
    expect(imageSizeOfText(`data:image/webp;base64,${webp}`)).toEqual({ width: 301, height: 67 });
    expect(imageSizeOfText(`data:image/gif;base64,${fixture("animated.gif").toString("base64")}`)).toEqual({ width: 300, height: 40 });
    expect(imageSizeOfText("https://images.example/a.webp")).toBeNull();
  });
});

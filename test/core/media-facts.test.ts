import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { mediaFactsOf } from "../../src/core/media-facts.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import { videoFor } from "../../src/sandbox/media/video.js";

describe("what a saved output's bytes say", () => {
  it("a PNG's size is read from its header", () => {
    expect(mediaFactsOf(renderPng(1024, 768, "a fox", 7), "image/png")).toEqual({ width: 1024, height: 768 });
  });

  it("a WebP, GIF or JPEG output's size is read from its header too (real files)", () => {
    const image = (name: string) => readFileSync(new URL(`images/${name}`, import.meta.url));
    expect(mediaFactsOf(image("lossy.webp"), "image/webp")).toEqual({ width: 301, height: 67 });
    expect(mediaFactsOf(image("animated.gif"), "image/gif")).toEqual({ width: 300, height: 40 });
    expect(mediaFactsOf(image("progressive.jpg"), "image/jpeg")).toEqual({ width: 301, height: 67 });
  });

  it("an MP4 or MOV gives its video track's size and its length in seconds (real H.264 files of one second)", () => {
    expect(mediaFactsOf(videoFor("16:9", "mp4"), "video/mp4")).toEqual({ width: 128, height: 72, duration_s: 1 });
    expect(mediaFactsOf(videoFor("9:16", "mov"), "video/quicktime")).toEqual({ width: 72, height: 128, duration_s: 1 });
  });

  it("bytes that do not parse, or a type it does not read, give no fact rather than a guess", () => {
    expect(mediaFactsOf(Buffer.from("not a picture"), "image/png")).toEqual({});
    expect(mediaFactsOf(videoFor("16:9", "mp4").subarray(0, 40), "video/mp4")).toEqual({});
    expect(mediaFactsOf(Buffer.from("ID3"), "audio/mpeg")).toEqual({});
  });
});

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { probeVideo } from "../../src/sandbox/media/video-probe.js";
import { taggedVideo, videoFor } from "../../src/sandbox/media/video.js";

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("sandbox videos are tagged per task", () => {
  it("each task's video has its own bytes, and the same task always the same", () => {
    const first = taggedVideo("16:9", "mp4", "A task cgt-1");
    const second = taggedVideo("16:9", "mp4", "A task cgt-2");
    expect(sha256(first)).not.toBe(sha256(second));
    expect(sha256(taggedVideo("16:9", "mp4", "A task cgt-1"))).toBe(sha256(first));
  });

  it("the tag is a top-level free box: the file is still a real MP4 or MOV of the ratio", () => {
    for (const container of ["mp4", "mov"] as const) {
      const tagged = taggedVideo("9:16", container, "C video v-9");
      expect(probeVideo(tagged)).toEqual(probeVideo(videoFor("9:16", container)));
      const free = tagged.subarray(videoFor("9:16", container).length);
      expect(free.readUInt32BE(0)).toBe(free.length);
      expect(free.toString("latin1", 4, 8)).toBe("free");
      expect(free.subarray(8).toString("utf8")).toBe("mediagate sandbox: C video v-9");
    }
  });
});

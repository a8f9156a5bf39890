import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { INPUT_FILES_FACT, inputFilesOf, requestLines, requestView } from "../../src/app/request-view.js";
import type { Job } from "../../src/core/job.js";
import { renderPng } from "../../src/sandbox/media/png.js";

/** What produced an output (issue 37, part 4): the request as every face shows it, its files named, never their bytes. */

const png = renderPng(32, 32, "a fox", 7);
const sha = createHash("sha256").update(png).digest("hex");

function jobOf(overrides: Partial<Job>): Pick<Job, "provider" | "model" | "operation" | "body" | "facts" | "route"> {
  return { provider: "d", model: "gen-2-pro", operation: null, body: {}, facts: {}, route: null, ...overrides };
}

describe("inputFilesOf: the local files a request carries", () => {
  it("a native request's images by field, name, type, size and sha256; links are not files", () => {
    expect(inputFilesOf({ provider: "d", model: "gen-2-pro", input: {}, images: ["https://example.com/a.png", { fileName: "fox.png", bytes: png }] })).toEqual([
      { field: "images[1]", name: "fox.png", type: "image/png", bytes: png.length, sha256: sha },
    ]);
  });

  it("a common request's images, frames and reference images; bytes of no known type keep a null type", () => {
    const text = Buffer.from("not an image");
    const files = inputFilesOf({
      common: { task: "video", prompt: "p", images: [{ fileName: "a.png", bytes: png }], first_frame: { fileName: "first.png", bytes: png }, last_frame: { fileName: "last.txt", bytes: text }, reference_images: [{ fileName: "r.png", bytes: png }] },
      targets: [],
      routeBy: "order",
      fallbackOnFailure: false,
    } as never);
    expect(files.map((file) => [file.field, file.name, file.type])).toEqual([
      ["images[0]", "a.png", "image/png"],
      ["first_frame", "first.png", "image/png"],
      ["last_frame", "last.txt", null],
      ["reference_images[0]", "r.png", "image/png"],
    ]);
  });
});

describe("requestView: the request sent, files named in place, links without their query", () => {
  it("bare base64 of an image and a base64 data: URL become file mentions named by their sha256; short or non-image text stays text", () => {
    const view = requestView(
      jobOf({
        body: { prompt: "a fox", width: 512, input_image: png.toString("base64"), mask: `data:image/png;base64,${png.toString("base64")}`, seed: 7, id: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", nested: [{ ref: png.toString("base64") }] },
        facts: { [INPUT_FILES_FACT]: [{ field: "images[0]", name: "fox.png", type: "image/png", bytes: png.length, sha256: sha }] },
      }),
    );
    const mention = { file: { name: "fox.png", type: "image/png", bytes: png.length, sha256: sha } };
    expect(view.input).toEqual({ prompt: "a fox", width: 512, input_image: mention, mask: mention, seed: 7, id: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", nested: [{ ref: mention }] });
    expect(JSON.stringify(view)).not.toContain(png.toString("base64").slice(0, 40));
    expect(view.files).toHaveLength(1);
  });

  it("a file not among the named ones is mentioned without a name; a long base64 text that is no image stays as it is", () => {
    const other = renderPng(16, 16, "other", 1);
    const noise = Buffer.alloc(120, 7).toString("base64");
    const view = requestView(jobOf({ body: { a: other.toString("base64"), b: noise } }));
    expect(view.input.a).toEqual({ file: { name: null, type: "image/png", bytes: other.length, sha256: createHash("sha256").update(other).digest("hex") } });
    expect(view.input.b).toBe(noise);
  });

  it("a link is shown without its query (where signatures are) and without its user part", () => {
    const view = requestView(jobOf({ body: { image_url: "https://bucket.example/in/fox.png?X-Amz-Signature=abc123&X-Amz-Credential=key", plain: "https://cdn.example/a.png" } }));
    expect(view.input).toEqual({ image_url: "https://bucket.example/in/fox.png?…", plain: "https://cdn.example/a.png" });
    expect(JSON.stringify(view)).not.toContain("abc123");
  });

  it("a common request's route: the targets tried, the one it is on, those left; the text form lists each field, file and the route", () => {
    const route = { current: "f/img-v2", tried: [{ name: "d/gen-2-pro" }], next: [{ name: "e/v3" }], fallbackOnFailure: false, failingSince: null };
    const view = requestView(jobOf({ provider: "f", model: "img-v2", route: route as never, body: { text_prompt: "a fox" }, facts: { [INPUT_FILES_FACT]: [{ field: "images[0]", name: "fox.png", type: "image/png", bytes: 10, sha256: sha }] } }));
    expect(view.route).toEqual({ current: "f/img-v2", tried: ["d/gen-2-pro"], next: ["e/v3"] });
    expect(requestLines(view)).toEqual(["  target f/img-v2", '  text_prompt: "a fox"', `  file images[0]: fox.png (image/png, 10 bytes, sha256 ${sha})`, "  route: d/gen-2-pro → [f/img-v2] → e/v3"]);
    expect(requestLines(requestView(jobOf({ operation: "edit" })))[0]).toBe("  target d/gen-2-pro/edit");
  });
});

import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import type { EPendingUpload } from "../../../src/providers/e/index.js";
import { TransportError } from "../../../src/providers/http.js";
import { renderPng } from "../../../src/sandbox/media/png.js";
import type { EEmulatorOptions } from "../../../src/sandbox/e/index.js";
import { providerError } from "../../helpers/errors.js";
import { CLIENT_ID, DAY, startE, thrown, type EWorld } from "./world.js";

let world: EWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function start(options: EEmulatorOptions = {}): Promise<EWorld> {
  world = await startE(options);
  return world;
}

const SOURCE = renderPng(96, 64, "a harbour", 1);
const MASK = renderPng(96, 64, "a mask", 2);

function imageJob(operation: string, images: JobRequest["images"], input: Record<string, unknown> = { prompt: "a red boat" }): JobRequest {
  return { provider: "e", model: "v3", operation, input, images };
}

const uploadRequests = (w: EWorld) => w.requests().filter((entry) => entry.url === "/e/v2/storage/image");

describe("E client: source image uploads", () => {
  it("E: a local source image is uploaded to /v2/storage/image at submit time, never at validation", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const request = adapter.validate(imageJob("expand-image", [{ fileName: "harbour.png", bytes: SOURCE }]));
    expect(w.requests()).toHaveLength(0);
    const job = await adapter.submit(request, context);
    const [upload] = uploadRequests(w);
    expect(upload).toMatchObject({ method: "POST", statusCode: 200 });
    expect(upload!.headers["content-type"]).toBe("image/png");
    expect(upload!.headers["x-api-key"]).toBe(CLIENT_ID);
    expect(upload!.headers.authorization).toBe(`Bearer ${w.e.tokens()[0]!.accessToken}`);
    const [stored] = w.e.uploads();
    expect(stored).toMatchObject({ bytes: SOURCE.length, size: { width: 96, height: 64 } });
    expect(w.e.job(job.providerJobId)).toMatchObject({ operation: "expand", sourceUploadId: stored!.id });
    expect(w.e.job(job.providerJobId)!.body).toEqual({ prompt: "a red boat", image: { source: { uploadId: stored!.id } } });
  });

  it("E: the upload is reused for the same bytes within its 7 days", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const request = adapter.validate(imageJob("generate-similar-images", [{ fileName: "a.png", bytes: SOURCE }], {}));
    const first = await adapter.submit(request, context);
    w.advance(6 * DAY);
    // The same bytes under another name are the same upload (keyed by SHA-256).
    const second = await adapter.submit(adapter.validate(imageJob("generate-similar-images", [{ fileName: "copy.png", bytes: Buffer.from(SOURCE) }], {})), context);
    expect(uploadRequests(w)).toHaveLength(1);
    expect(w.e.job(second.providerJobId)!.sourceUploadId).toBe(w.e.job(first.providerJobId)!.sourceUploadId);
  });

  it("E: an upload older than 7 days is redone before the submit", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const request = adapter.validate(imageJob("expand-image", [{ fileName: "a.png", bytes: SOURCE }]));
    await adapter.submit(request, context);
    w.advance(7 * DAY);
    const later = await adapter.submit(request, context);
    expect(uploadRequests(w)).toHaveLength(2);
    // The sandbox would answer 400 upload_expired to the first upload's id.
    expect(w.e.job(later.providerJobId)!.sourceUploadId).toBe(w.e.uploads()[1]!.id);
  });

  it("E: different bytes are uploaded separately; fill sends the second file as its mask", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const job = await adapter.submit(
      adapter.validate(imageJob("fill-image", [{ fileName: "scene.png", bytes: SOURCE }, { fileName: "mask.png", bytes: MASK }])),
      context,
    );
    const [source, mask] = w.e.uploads();
    expect(uploadRequests(w)).toHaveLength(2);
    expect(w.e.job(job.providerJobId)).toMatchObject({ operation: "fill", sourceUploadId: source!.id, maskUploadId: mask!.id });
    expect(w.submits()[0]!.url).toBe("/e/v3/images/fill-async");
  });

  it("E: the object composite goes to its -async endpoint with the uploaded image", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const job = await adapter.submit(adapter.validate(imageJob("generate-object-composite", [{ fileName: "object.png", bytes: SOURCE }])), context);
    expect(w.submits()[0]!.url).toBe("/e/v3/images/generate-object-composite-async");
    expect(w.e.job(job.providerJobId)).toMatchObject({ operation: "object-composite", sourceUploadId: w.e.uploads()[0]!.id });
  });

  it("E: each image operation submits to its own -async endpoint (expand shown; fill, composite, similar in the shown pattern)", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const endpoints: Record<string, [string, string]> = {
      "expand-image": ["/e/v3/images/expand-async", "expand"],
      "fill-image": ["/e/v3/images/fill-async", "fill"],
      "generate-object-composite": ["/e/v3/images/generate-object-composite-async", "object-composite"],
      "generate-similar-images": ["/e/v3/images/generate-similar-async", "similar"],
    };
    for (const [operation, [path, sandboxOperation]] of Object.entries(endpoints)) {
      const images = [{ fileName: "a.png", bytes: SOURCE }, ...(operation === "fill-image" ? [{ fileName: "mask.png", bytes: MASK }] : [])];
      const job = await adapter.submit(adapter.validate(imageJob(operation, images)), context);
      expect(w.submits().at(-1)).toMatchObject({ url: path, statusCode: 202 });
      expect(w.e.job(job.providerJobId)!.operation).toBe(sandboxOperation);
    }
    // One upload of the source serves all four; fill's mask is the only other.
    expect(uploadRequests(w)).toHaveLength(2);
  });

  it("E: the images travel in facts as base64 with their SHA-256, and the stored request is JSON", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const request = adapter.validate(imageJob("expand-image", [{ fileName: "a.png", bytes: SOURCE }]));
    const stored = JSON.parse(JSON.stringify(request)) as typeof request;
    expect(stored).toEqual(request);
    expect(stored.body).toEqual({ prompt: "a red boat" });
    const [upload] = stored.facts.uploads as EPendingUpload[];
    expect(upload).toMatchObject({ field: "image", mediaType: "image/png", byteLength: SOURCE.length, sha256: createHash("sha256").update(SOURCE).digest("hex") });
    expect(Buffer.from(upload!.base64, "base64").equals(SOURCE)).toBe(true);
    // A request read back from the store submits the same way.
    await adapter.submit(stored, context);
    expect(w.e.uploads()[0]!.bytes).toBe(SOURCE.length);
  });

  it("E: a refused upload fails before any submit is sent; a lost one means the submit was not sent", async () => {
    const w = await start();
    const { adapter, context } = w.client({}, { maxAttempts: 1 });
    const request = adapter.validate(imageJob("expand-image", [{ fileName: "a.png", bytes: SOURCE }]));
    w.sandbox.injectFault({ provider: "e", path: /storage\/image/, fault: { kind: "status", status: 413, body: { message: "too large" } }, times: 1 });
    const refused = await providerError(() => adapter.submit(request, context));
    expect(refused).toMatchObject({ code: "provider_rejected" });
    expect(refused.detail.rawBody).toContain("too large");
    w.sandbox.injectFault({ provider: "e", path: /storage\/image/, fault: { kind: "drop" }, times: 1 });
    const lost = await thrown(() => adapter.submit(request, context));
    expect(lost).toBeInstanceOf(TransportError);
    expect((lost as TransportError).maybeSent).toBe(false);
    expect(w.submits()).toHaveLength(0);
  });
});

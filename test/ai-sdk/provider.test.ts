import { join } from "node:path";
import { InvalidArgumentError, NoSuchModelError } from "@ai-sdk/provider";
import { afterEach, describe, expect, it } from "vitest";
import { createMediagate } from "../../src/ai-sdk/index.js";
import { Mediagate } from "../../src/index.js";
import { tempDir } from "../helpers/stores.js";

/** What a provider that owns its instance is opened with: a fresh SQLite store and output folder, no provider configured, the engine not run. */
function freshEnv(): Record<string, string> {
  const folder = tempDir();
  cleanups.push(() => folder.remove());
  return { MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`, MEDIAGATE_OUTPUT_DIR: join(folder.path, "out") };
}

const cleanups: Array<() => void | Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CLOSED = { code: "provider_closed", message: "this mediagate AI SDK provider was closed; create another to make more calls" };

describe("AI SDK provider: the provider and the instance its calls go through", () => {
  it("AI SDK provider: gate (an open instance) and open (options to open one) together are refused", () => {
    let thrown: unknown = null;
    try {
      createMediagate({ gate: {} as Mediagate, open: { env: {} } });
    } catch (error) {
      thrown = error;
    }
    expect(InvalidArgumentError.isInstance(thrown)).toBe(true);
    expect(thrown).toMatchObject({ argument: "open", message: "createMediagate: give gate (an open instance) or open (options to open one), not both" });
  });

  it("AI SDK provider: an owned instance is opened once, on first use, and shared by the calls; close closes it, and later calls are refused", async () => {
    const mediagate = createMediagate({ open: { env: freshEnv(), runEngine: false } });
    const [one, two] = await Promise.all([mediagate.mediagate(), mediagate.mediagate()]);
    expect(one).toBeInstanceOf(Mediagate);
    expect(two).toBe(one);
    expect(await mediagate.mediagate()).toBe(one);
    expect(await one.list()).toEqual([]);
    await mediagate.close();
    await expect(one.list()).rejects.toThrow();
    await expect(mediagate.mediagate()).rejects.toMatchObject(CLOSED);
    // Closing again finds nothing more to close.
    await mediagate.close();
  });

  it("AI SDK provider: a failed open (a variable set wrong) rejects naming the variable, and the next call opens again once it is fixed", async () => {
    const env = { ...freshEnv(), MEDIAGATE_STORE_POOL_SIZE: "0" };
    const mediagate = createMediagate({ open: { env, runEngine: false } });
    await expect(mediagate.mediagate()).rejects.toMatchObject({ variable: "MEDIAGATE_STORE_POOL_SIZE" });
    delete (env as Record<string, string>).MEDIAGATE_STORE_POOL_SIZE;
    const opened = await mediagate.mediagate();
    expect(await opened.list()).toEqual([]);
    await mediagate.close();
    await expect(opened.list()).rejects.toThrow();
  });

  it("AI SDK provider: a provider closed before its open was used, or after its open failed, closes without error and refuses calls", async () => {
    const unused = createMediagate({ open: { env: freshEnv(), runEngine: false } });
    await unused.close();
    await expect(unused.mediagate()).rejects.toMatchObject(CLOSED);

    const failed = createMediagate({ open: { env: { ...freshEnv(), MEDIAGATE_STORE_POOL_SIZE: "0" }, runEngine: false } });
    const opening = failed.mediagate();
    await failed.close();
    await expect(opening).rejects.toMatchObject({ variable: "MEDIAGATE_STORE_POOL_SIZE" });
    await expect(failed.mediagate()).rejects.toMatchObject(CLOSED);
  });

  it("AI SDK provider: an instance given as gate is the one calls go through, and stays open when the provider closes (its owner closes it)", async () => {
    const gate = await Mediagate.open({ env: freshEnv(), runEngine: false });
    cleanups.push(() => gate.close());
    const mediagate = createMediagate({ gate });
    expect(await mediagate.mediagate()).toBe(gate);
    await mediagate.close();
    expect(await gate.list()).toEqual([]);
    await expect(mediagate.mediagate()).rejects.toMatchObject(CLOSED);
  });

  it("AI SDK provider: image and imageModel make image models, video and videoModel video models, each checking its target as its kind", () => {
    const mediagate = createMediagate({ open: { env: {} } });
    expect(mediagate.specificationVersion).toBe("v3");
    for (const model of [mediagate.image("d/gen-2-pro"), mediagate.imageModel("d/gen-2-pro")]) {
      expect(model).toMatchObject({ specificationVersion: "v3", provider: "mediagate.image", modelId: "d/gen-2-pro", maxImagesPerCall: Number.MAX_SAFE_INTEGER });
    }
    for (const model of [mediagate.video("a/vidgen-2-0-250601"), mediagate.videoModel({ route: ["a/vidgen-2-0-250601", "c/kling"] })]) {
      expect(model).toMatchObject({ specificationVersion: "v3", provider: "mediagate.video", maxVideosPerCall: Number.MAX_SAFE_INTEGER });
    }
    expect(mediagate.videoModel({ route: ["a/vidgen-2-0-250601", "c/kling"] }).modelId).toBe("a/vidgen-2-0-250601,c/kling");
    expect(() => mediagate.imageModel("gen-2-pro")).toThrow(expect.objectContaining({ modelType: "imageModel", modelId: "gen-2-pro" }));
    expect(() => mediagate.video("vidgen")).toThrow(expect.objectContaining({ modelType: "videoModel", modelId: "vidgen" }));
    expect(() => mediagate.videoModel("vidgen")).toThrow(expect.objectContaining({ modelType: "videoModel" }));
  });

  it("AI SDK provider: it has no language or embedding model (NoSuchModelError naming the kind and the id)", () => {
    const mediagate = createMediagate({ open: { env: {} } });
    const cases: Array<[() => unknown, string]> = [
      [() => mediagate.languageModel("d/gen-2-pro"), "languageModel"],
      [() => mediagate.embeddingModel("d/gen-2-pro"), "embeddingModel"],
      [() => mediagate.textEmbeddingModel!("d/gen-2-pro"), "embeddingModel"],
    ];
    for (const [make, modelType] of cases) {
      let thrown: unknown = null;
      try {
        make();
      } catch (error) {
        thrown = error;
      }
      expect(NoSuchModelError.isInstance(thrown)).toBe(true);
      expect(thrown).toMatchObject({ modelId: "d/gen-2-pro", modelType, message: `mediagate makes images and videos; it has no ${modelType} d/gen-2-pro` });
    }
  });
});

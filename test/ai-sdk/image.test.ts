import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InvalidArgumentError, UnsupportedFunctionalityError, type ImageModelV3CallOptions } from "@ai-sdk/provider";
import { generateImage } from "ai";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createMediagate, MediagateJobError } from "../../src/ai-sdk/index.js";
import { Mediagate, type Job } from "../../src/index.js";
import { createAllEmulators, type AllEmulatorOptions } from "../../src/sandbox/all.js";
import type { SandboxProviderId } from "../../src/sandbox/context.js";
import { openStore } from "../../src/store/open.js";
import { until } from "../helpers/until.js";
import { startWorld, type World } from "../helpers/world.js";

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** The smallest PNG: the signature and an IHDR of 1x1. */
const TINY_PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");

/** A PNG's size from its IHDR chunk, the first after the signature. */
function pngSize(bytes: Uint8Array): { width: number; height: number } {
  const buffer = Buffer.from(bytes);
  expect(buffer.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
  expect(buffer.toString("latin1", 12, 16)).toBe("IHDR");
  return { width: buffer.readUInt32BE(16), height: buffer.readUInt32BE(20) };
}

interface ImageMetadata {
  jobId: string;
  ref: string;
  target: string;
  path: string;
  chargeMicroUsd: number | null;
  attempts: Array<{ target: string; outcome: string }>;
}

function imagesMetadata(providerMetadata: unknown): ImageMetadata[] {
  return (providerMetadata as { mediagate: { images: ImageMetadata[] } }).mediagate.images;
}

/** An image call as `generateImage` hands it to the model: one image, nothing else set but `fields`. */
function imageCall(fields: Partial<ImageModelV3CallOptions>): ImageModelV3CallOptions {
  return { prompt: "a red fox in snow", n: 1, size: "256x256", aspectRatio: undefined, seed: undefined, files: undefined, mask: undefined, providerOptions: {}, ...fields };
}

beforeAll(() => {
  // Warnings are asserted on the results; the SDK's console copy of them is noise here.
  (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
});

let world: World | undefined;
let gate: Mediagate | undefined;
afterEach(async () => {
  await gate?.close();
  gate = undefined;
  await world?.close();
  world = undefined;
});

/** A sandbox with the given providers over loopback, a library instance on it, and the AI SDK provider over that instance. */
async function sandboxed(providers: SandboxProviderId[], options: AllEmulatorOptions = {}) {
  const emulators = createAllEmulators(options);
  world = await startWorld(emulators.list.filter((emulator) => providers.includes(emulator.id)));
  gate = await Mediagate.open({ env: world.env });
  return { emulators, world, gate, mediagate: createMediagate({ gate }) };
}

const FAST_D = { d: { renderTimeMs: 200 } };

describe("AI SDK provider: images through the sandbox (real HTTP over loopback)", () => {
  it("AI SDK image: generateImage on d/gen-2-pro is one durable job; the bytes are its saved PNG at the size asked, charged in the ledger, one submit at D", async () => {
    const { emulators, world, gate, mediagate } = await sandboxed(["d"], FAST_D);
    const result = await generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a red fox in snow", size: "1024x768" });

    const [metadata] = imagesMetadata(result.providerMetadata);
    const job = (await gate.get(metadata!.jobId))!;
    expect(job).toMatchObject({ state: "succeeded", provider: "d", model: "gen-2-pro" });
    const [output] = await gate.outputs(job.id);
    expect(Buffer.from(result.image.uint8Array).equals(readFileSync(output!.path))).toBe(true);
    expect(pngSize(result.image.uint8Array)).toEqual({ width: 1024, height: 768 });
    expect(result.image.mediaType).toBe("image/png");
    expect(result.images).toHaveLength(1);
    expect(metadata).toMatchObject({ ref: job.ref, target: "d/gen-2-pro", path: output!.path, chargeMicroUsd: job.chargeMicroUsd });
    expect(result.responses[0]!.modelId).toBe("d/gen-2-pro");
    // Charged, and the charge is in the ledger.
    expect(job.chargeMicroUsd).toBeGreaterThan(0);
    const store = await openStore(world.env.MEDIAGATE_STORE!);
    try {
      expect(await store.ledgerTotal({ provider: "d" })).toBe(job.chargeMicroUsd);
    } finally {
      await store.close();
    }
    expect(emulators.d.submitCount).toBe(1);
    // 1024x768 is D's own grid (multiples of 16): nothing was changed, so nothing to warn about.
    expect(result.warnings).toEqual([]);
  });

  it("AI SDK image: a size a target changes comes back as a warning naming what was sent", async () => {
    const { emulators, mediagate } = await sandboxed(["d"], FAST_D);
    const result = await generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a red fox in snow", size: "1000x750" });
    expect(result.warnings).toEqual([{ type: "other", message: expect.stringMatching(/^size 1000x750 sent as width 1008/) }]);
    expect(emulators.d.jobs).toHaveLength(1);
  });

  it("AI SDK image: a route whose first target refuses before accepting (D out of credits) makes the image on F; the metadata lists both attempts", async () => {
    const { emulators, mediagate } = await sandboxed(["d", "f"], { d: { balanceMicroUsd: 0 }, f: { renderMs: { min: 200, max: 400 } } });
    const result = await generateImage({ model: mediagate.image({ route: ["d/gen-2-pro", "f/img-v2"] }), prompt: "a red fox in snow", size: "1024x768" });
    const [metadata] = imagesMetadata(result.providerMetadata);
    expect(metadata!.target).toBe("f/img-v2");
    expect(metadata!.attempts.map((attempt) => attempt.target)).toEqual(["d/gen-2-pro", "f/img-v2"]);
    expect(metadata!.attempts[0]!.outcome).toMatch(/D refused it before accepting \(insufficient_credits/);
    expect(metadata!.attempts[1]!.outcome).toBe("succeeded");
    expect(result.responses[0]!.modelId).toBe("f/img-v2");
    expect(Buffer.from(result.image.uint8Array).equals(readFileSync(metadata!.path))).toBe(true);
    expect(emulators.d.rejected402Count).toBe(1);
    expect(emulators.d.jobs).toHaveLength(0);
  });

  it("AI SDK image: n images are n jobs of one image each (D makes one per request); a ref names them <ref>#1…, and the same call again takes them up without a new submit", async () => {
    const { emulators, gate, mediagate } = await sandboxed(["d"], FAST_D);
    const call = () => generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a red fox in snow", size: "512x512", n: 2, providerOptions: { mediagate: { ref: "foxes" } } });
    const first = await call();
    expect(first.images).toHaveLength(2);
    expect(imagesMetadata(first.providerMetadata).map((metadata) => metadata.ref)).toEqual(["foxes#1", "foxes#2"]);
    expect(emulators.d.submitCount).toBe(2);
    expect((await gate.list()).map((job: Job) => job.state)).toEqual(["succeeded", "succeeded"]);

    const again = await call();
    expect(again.images.map((image) => Buffer.from(image.uint8Array).toString("base64"))).toEqual(first.images.map((image) => Buffer.from(image.uint8Array).toString("base64")));
    expect(emulators.d.submitCount).toBe(2);
  });

  it("AI SDK image (issue 37, part 2): providerOptions.mediagate.cancel_after_s sets each job's deadline; a value it does not take is refused naming it", async () => {
    const { gate, mediagate } = await sandboxed(["d"], FAST_D);
    const before = Date.now();
    const result = await generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a fox in time", size: "512x512", providerOptions: { mediagate: { ref: "in-time", cancel_after_s: 600 } } });
    expect(result.images).toHaveLength(1);
    const job = (await gate.get("in-time"))!;
    expect(job.deadlineAt! - before).toBeGreaterThanOrEqual(600_000);
    await expect(generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "never", size: "512x512", providerOptions: { mediagate: { ref: "bad", cancel_after_s: -1 } } })).rejects.toThrow("providerOptions.mediagate.cancel_after_s: -1 is not a number of seconds it takes");
    expect(await gate.get("bad")).toBeNull();
  });

  it("AI SDK image: n 2 with a seed makes two images with seeds seed and seed + 1 (one seed would pay twice for one picture), and a warning says so; the same call again takes up the same two jobs", async () => {
    const { emulators, gate, mediagate } = await sandboxed(["d"], FAST_D);
    const call = () => generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a red fox in snow", size: "256x256", n: 2, seed: 7, providerOptions: { mediagate: { ref: "seeded" } } });
    const result = await call();
    expect(result.images).toHaveLength(2);
    expect(emulators.d.jobs.map((job) => job.seed)).toEqual([7, 8]);
    expect(Buffer.from(result.images[0]!.uint8Array).equals(Buffer.from(result.images[1]!.uint8Array))).toBe(false);
    expect(result.warnings).toEqual([{ type: "other", message: "n 2 with seed 7: each image has its own seed (7 and 8), since one seed would make the same image 2 times, each paid for" }]);
    const metadata = imagesMetadata(result.providerMetadata);
    expect(await Promise.all(metadata.map(async (image) => (await gate.get(image.jobId))!.body.seed))).toEqual([7, 8]);

    const again = await call();
    expect(imagesMetadata(again.providerMetadata).map((image) => image.jobId)).toEqual(metadata.map((image) => image.jobId));
    expect(emulators.d.submitCount).toBe(2);

    // Seeds past the largest whole number sent exactly are refused before anything is stored or sent.
    const past = generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a fox", size: "256x256", n: 2, seed: Number.MAX_SAFE_INTEGER });
    await expect(past).rejects.toSatisfy((error: unknown) => InvalidArgumentError.isInstance(error) && error.argument === "seed" && /give a seed of at most 9007199254740990$/.test(error.message));
    expect(emulators.d.submitCount).toBe(2);
    expect(await gate.list()).toHaveLength(2);
  });

  it("AI SDK image: reference images reach D as its input_image fields: a link as given, bytes as base64 of the file", async () => {
    const { gate, mediagate } = await sandboxed(["d"], FAST_D);
    const model = mediagate.image("d/gen-2-pro");
    const reference = (await generateImage({ model, prompt: "a fox", size: "256x256" })).image.uint8Array;
    const result = await generateImage({ model, prompt: { text: "the same fox at night", images: ["https://images.example/fox.png", reference] }, size: "256x256" });
    const job = (await gate.get(imagesMetadata(result.providerMetadata)[0]!.jobId))!;
    expect(job.body).toMatchObject({ input_image: "https://images.example/fox.png", input_image_2: Buffer.from(reference).toString("base64") });
    expect(job.state).toBe("succeeded");
  });

  it("AI SDK image: a mask, another provider's options and a request no target can honour are refused before anything is stored or sent", async () => {
    const { world, gate, mediagate } = await sandboxed(["d", "f"], FAST_D);
    const model = mediagate.image({ route: ["d/gen-2-pro", "f/img-v2"] });
    const masked = generateImage({ model, prompt: { text: "a fox", images: ["https://images.example/fox.png"], mask: "https://images.example/mask.png" }, size: "1024x768" });
    await expect(masked).rejects.toSatisfy((error: unknown) => UnsupportedFunctionalityError.isInstance(error) && error.functionality === "mask" && /^mask: /.test(error.message));

    const foreign = generateImage({ model, prompt: "a fox", providerOptions: { blackForestLabs: { width: 512, height: 512 } } });
    await expect(foreign).rejects.toSatisfy((error: unknown) => InvalidArgumentError.isInstance(error) && error.argument === "providerOptions.blackForestLabs");

    // D needs a size (its price depends on it); F takes no seed.
    const unhonoured = generateImage({ model, prompt: "a fox", seed: 7 });
    await expect(unhonoured).rejects.toThrow(/no target can take this request:\n {2}d\/gen-2-pro: size: D needs a size or aspect_ratio[^\n]*\n {2}f\/img-v2: seed: /);

    expect(world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
    expect(await gate.list()).toEqual([]);
  });

  it("AI SDK image: a prompt, ref or provider option that is not well-formed Unicode (a lone surrogate) is refused naming it, before anything is stored or sent", async () => {
    const { world, gate, mediagate } = await sandboxed(["d"], FAST_D);
    const model = mediagate.image("d/gen-2-pro");
    const prompt = generateImage({ model, prompt: "a fox\ud800", size: "1024x768" });
    await expect(prompt).rejects.toSatisfy((error: unknown) => InvalidArgumentError.isInstance(error) && error.argument === "prompt" && /lone surrogate U\+D800 at position 6/.test(error.message));
    for (const ref of ["fox\ud800", "fox\udc00"]) {
      const named = generateImage({ model, prompt: "a fox", size: "1024x768", providerOptions: { mediagate: { ref } } });
      await expect(named).rejects.toSatisfy((error: unknown) => InvalidArgumentError.isInstance(error) && error.argument === "providerOptions.mediagate.ref");
    }
    const option = generateImage({ model, prompt: "a fox", size: "1024x768", providerOptions: { mediagate: { provider_options: { d: { style: "noir\udfff" } } } } });
    await expect(option).rejects.toMatchObject({ field: "provider_options.d.style" });
    expect(world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
    expect(await gate.list()).toEqual([]);
  });

  it("AI SDK image: a job that ends failed rejects with MediagateJobError naming the job, its state and code; the SDK does not retry it (one submit)", async () => {
    const { emulators, gate, mediagate } = await sandboxed(["d"], { d: { renderTimeMs: 200, outcomeRates: { errorRate: 1 } } });
    // No ref (issue 36, finding 12): a retry by the SDK would be a new job and a second submit, which the count below sees.
    const call = generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a fox", size: "512x512" });
    const error = await call.then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(MediagateJobError.isInstance(error)).toBe(true);
    const stored = await gate.list();
    expect(stored).toHaveLength(1);
    const failed = stored[0]!;
    expect(failed.state).toBe("failed");
    expect(error).toMatchObject({ isRetryable: false, code: failed.error!.code, job: { id: failed.id, state: "failed" } });
    expect((error as Error).message).toContain(`mediagate job ${failed.id} (ref ${failed.ref}, d/gen-2-pro) ended failed: ${failed.error!.code}: `);
    expect(emulators.d.submitCount).toBe(1);
  });

  it("AI SDK image (issue 36, finding 12): a call whose job waits on a halted provider rejects saying it is queued, why, and that it goes on once that changes; nothing more is sent", async () => {
    const { emulators, gate, mediagate } = await sandboxed(["d"], { d: { renderTimeMs: 200, balanceMicroUsd: 0 } });
    const call = (prompt: string) => generateImage({ model: mediagate.image("d/gen-2-pro"), prompt, size: "512x512" }).then(() => null, (thrown: unknown) => thrown);
    // The first job meets D's empty balance: it fails, and D is halted.
    const first = await call("a fox");
    expect(MediagateJobError.isInstance(first)).toBe(true);
    expect((first as Error).message).toMatch(/ ended failed: /);
    // The second is not sent: it waits in the queue for the halt to be lifted.
    const second = await call("a heron");
    expect(MediagateJobError.isInstance(second)).toBe(true);
    const waiting = (second as MediagateJobError).job;
    expect(waiting.state).toBe("queued");
    expect((second as MediagateJobError).code).toBe(waiting.blockedCode ?? "provider_halted");
    expect((second as Error).message).toMatch(/ is queued and cannot move on by itself: \S+: .+; it stays in the store and goes on once that changes$/);
    expect(emulators.d.submitCount).toBe(1);
    expect((await gate.list()).map((job) => job.state).sort()).toEqual(["failed", "queued"]);
  });

  it("AI SDK image (issue 36, finding 12): a saved file changed since it was saved is not handed back (output_changed), one gone is output_unreadable; neither pays again", async () => {
    const { emulators, gate, mediagate } = await sandboxed(["d"], FAST_D);
    const call = () => generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a fox", size: "512x512", providerOptions: { mediagate: { ref: "kept-fox" } } });
    await call();
    const job = (await gate.get("kept-fox"))!;
    const [output] = await gate.outputs(job.id);
    writeFileSync(output!.path, Buffer.concat([readFileSync(output!.path), Buffer.from("tampered")]));
    const changed = await call().then(() => null, (thrown: unknown) => thrown);
    expect(MediagateJobError.isInstance(changed)).toBe(true);
    expect(changed).toMatchObject({ code: "output_changed", isRetryable: false });
    expect((changed as Error).message).toContain(`its file ${output!.path} no longer has the sha256 recorded when it was saved`);
    rmSync(output!.path);
    const gone = await call().then(() => null, (thrown: unknown) => thrown);
    expect(gone).toMatchObject({ code: "output_unreadable" });
    expect((gone as Error).message).toContain(`its file ${output!.path} cannot be read (ENOENT)`);
    expect(emulators.d.submitCount).toBe(1);
  });

  it("AI SDK image: aborting the call ends the wait, not the job: it stays in the store and goes on, and the same ref takes it up without paying twice", async () => {
    const { emulators, gate, mediagate } = await sandboxed(["d"], { d: { renderTimeMs: 1_500 } });
    const model = mediagate.image("d/gen-2-pro");
    const call = (abortSignal?: AbortSignal) => generateImage({ model, prompt: "a slow fox", size: "512x512", providerOptions: { mediagate: { ref: "slow-fox" } }, ...(abortSignal ? { abortSignal } : {}) });

    const controller = new AbortController();
    const aborted = call(controller.signal);
    await until(() => emulators.d.submitCount === 1, "D to accept the job");
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ name: "AbortError", jobs: [{ ref: "slow-fox" }] });
    const kept = (await gate.get("slow-fox"))!;
    expect(["submitting", "running", "capturing", "succeeded"]).toContain(kept.state);

    const resumed = await call();
    expect(imagesMetadata(resumed.providerMetadata)[0]!.jobId).toBe(kept.id);
    expect(pngSize(resumed.image.uint8Array)).toEqual({ width: 512, height: 512 });
    expect(emulators.d.submitCount).toBe(1);
  });

  it("AI SDK image: a provider given options opens its own instance on the first call and closes it; calls after close are refused", async () => {
    const emulators = createAllEmulators(FAST_D);
    world = await startWorld([emulators.d]);
    const mediagate = createMediagate({ open: { env: world.env } });
    const result = await generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a fox", aspectRatio: "1:1" });
    expect(pngSize(result.image.uint8Array).width).toBe(pngSize(result.image.uint8Array).height);
    const owned = await mediagate.mediagate();
    expect((await owned.list()).map((job: Job) => job.state)).toEqual(["succeeded"]);
    await mediagate.close();
    await expect(generateImage({ model: mediagate.image("d/gen-2-pro"), prompt: "a fox", aspectRatio: "1:1" })).rejects.toMatchObject({ code: "provider_closed" });
    expect(emulators.d.submitCount).toBe(1);
  });

  it("AI SDK image: a target that is not provider/model is no model (NoSuchModelError), and the provider has no language model", () => {
    const mediagate = createMediagate({ open: { env: {} } });
    expect(() => mediagate.image("gen-2-pro")).toThrow(/does not start with a provider/);
    expect(() => mediagate.image({ route: [] })).toThrow(/non-empty list of targets/);
    expect(() => mediagate.languageModel("d/gen-2-pro")).toThrow(/mediagate makes images and videos/);
  });

  it("AI SDK image: the model answers the saved file's bytes (one, with the seed as given), the metadata of its job and file, and the target as the response's model id", async () => {
    const { gate, mediagate } = await sandboxed(["d"], FAST_D);
    const model = mediagate.image("d/gen-2-pro");
    const before = Date.now();
    const result = await model.doGenerate(imageCall({ seed: 7, providerOptions: { mediagate: { ref: "direct-fox" } } }));
    const job = (await gate.get("direct-fox"))!;
    // One image with a seed: the seed as given, and nothing to warn about.
    expect(job.body.seed).toBe(7);
    const [output] = await gate.outputs(job.id);
    expect(result.images).toEqual([new Uint8Array(readFileSync(output!.path))]);
    expect(result.warnings).toEqual([]);
    expect(result.response).toEqual({ timestamp: expect.any(Date), modelId: "d/gen-2-pro", headers: undefined });
    expect(result.response.timestamp.getTime()).toBeGreaterThanOrEqual(before);
    expect(result.providerMetadata).toEqual({
      mediagate: {
        images: [
          {
            jobId: job.id,
            ref: "direct-fox",
            target: "d/gen-2-pro",
            provider: "d",
            model: "gen-2-pro",
            providerJobId: job.providerJobId,
            estimateMicroUsd: job.estimateMicroUsd,
            chargeMicroUsd: job.chargeMicroUsd,
            chargeState: job.chargeState,
            attempts: [{ target: "d/gen-2-pro", provider: "d", model: "gen-2-pro", providerJobId: job.providerJobId, outcome: "succeeded" }],
            warnings: [],
            path: output!.path,
            contentType: "image/png",
            bytes: output!.bytes,
            sha256: output!.sha256,
            metadata: output!.metadata,
            media: output!.media,
          },
        ],
      },
    });
    expect(job.providerJobId).toEqual(expect.any(String));
    expect(output!.media).toMatchObject({ width: 256, height: 256 });
  });

  it("AI SDK image: seeds of up to four jobs are listed (7, 8, 9 and 10), of more spanned (20 to 24); a warning every job gets is said once; jobs without a ref are named by the library, one model id for one target", async () => {
    const { emulators, gate, mediagate } = await sandboxed(["d"], FAST_D);
    const model = mediagate.image("d/gen-2-pro");
    const four = await generateImage({ model, prompt: "a red fox in snow", size: "1000x750", n: 4, seed: 7 });
    expect(four.warnings).toEqual([
      { type: "other", message: "n 4 with seed 7: each image has its own seed (7, 8, 9 and 10), since one seed would make the same image 4 times, each paid for" },
      { type: "other", message: expect.stringMatching(/^size 1000x750 sent as width 1008/) },
    ]);
    expect(four.responses.map((response) => response.modelId)).toEqual(["d/gen-2-pro"]);
    const refs = imagesMetadata(four.providerMetadata).map((image) => image.ref);
    expect(new Set(refs).size).toBe(4);
    for (const ref of refs) expect(ref).not.toMatch(/#/);

    const five = await generateImage({ model, prompt: "a red fox in snow", size: "256x256", n: 5, seed: 20 });
    expect(five.warnings).toEqual([{ type: "other", message: "n 5 with seed 20: each image has its own seed (20 to 24), since one seed would make the same image 5 times, each paid for" }]);
    expect(emulators.d.jobs.map((job) => job.seed)).toEqual([7, 8, 9, 10, 20, 21, 22, 23, 24]);
    expect(await gate.list()).toHaveLength(9);
  });

  it("AI SDK image: seed 2^53 - 2 with n 2 takes the two largest exact seeds; a seed that is not a whole number is left to submit, which names it (no seeds are made from it)", async () => {
    const { emulators, mediagate } = await sandboxed(["d"], FAST_D);
    const model = mediagate.image("d/gen-2-pro");
    const largest = await generateImage({ model, prompt: "a red fox in snow", size: "256x256", n: 2, seed: Number.MAX_SAFE_INTEGER - 1 });
    expect(largest.images).toHaveLength(2);
    expect(emulators.d.jobs.map((job) => job.seed)).toEqual([Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER]);
    for (const seed of [2 ** 60, 1.5]) {
      const refused = generateImage({ model, prompt: "a red fox in snow", size: "256x256", n: 2, seed });
      await expect(refused).rejects.toMatchObject({ field: "seed", message: `seed: must be a whole number from 0, got ${JSON.stringify(seed)}` });
    }
    expect(emulators.d.submitCount).toBe(2);
  });

  it("AI SDK image: n that is not a whole number from 1 is refused before anything is stored (the AI SDK checks nothing of n)", async () => {
    const { gate, mediagate } = await sandboxed(["d"], FAST_D);
    const model = mediagate.image("d/gen-2-pro");
    for (const n of [0, 1.5, Number.NaN]) {
      const error = await model.doGenerate(imageCall({ n })).then(
        () => null,
        (thrown: unknown) => thrown,
      );
      expect(InvalidArgumentError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ argument: "n", message: `n must be a whole number from 1, got ${JSON.stringify(n)}` });
    }
    expect(await gate.list()).toEqual([]);
  });

  it("AI SDK image: a call whose signal was aborted before it started stores and sends nothing, and rejects with the signal's reason", async () => {
    const { world, gate, mediagate } = await sandboxed(["d"], FAST_D);
    const reason = new Error("the user left");
    await expect(mediagate.image("d/gen-2-pro").doGenerate(imageCall({ abortSignal: AbortSignal.abort(reason) }))).rejects.toBe(reason);
    expect(await gate.list()).toEqual([]);
    expect(world.sandbox.requests().filter((request) => request.provider !== null)).toHaveLength(0);
  });

  it("AI SDK image: a provider given outDir saves its calls' files there", async () => {
    const { world, gate } = await sandboxed(["d"], FAST_D);
    const outDir = join(world.folder, "foxes");
    const result = await generateImage({ model: createMediagate({ gate, outDir }).image("d/gen-2-pro"), prompt: "a red fox in snow", size: "256x256" });
    const [metadata] = imagesMetadata(result.providerMetadata);
    expect(metadata!.path.startsWith(`${outDir}/`)).toBe(true);
    expect(Buffer.from(result.image.uint8Array).equals(readFileSync(metadata!.path))).toBe(true);
  });

  it("AI SDK image: an empty list of files is no reference image; headers the caller set come back as a warning, first", async () => {
    const { gate, mediagate } = await sandboxed(["d"], FAST_D);
    const result = await mediagate.image("d/gen-2-pro").doGenerate(imageCall({ files: [], size: "1000x750", headers: { "x-trace": "abc" } }));
    expect(result.images).toHaveLength(1);
    expect(result.warnings).toEqual([
      { type: "unsupported", feature: "headers", details: expect.stringMatching(/^not sent: x-trace; /) },
      { type: "other", message: expect.stringMatching(/^size 1000x750 sent as width 1008/) },
    ]);
    const [job] = await gate.list();
    expect(Object.keys(job!.body).filter((key) => key.startsWith("input_image"))).toEqual([]);
  });

  it("AI SDK image: each file is named in refusals by its place (files[1]) and reaches the library as image-1, image-2 … by its order", async () => {
    const { gate, mediagate } = await sandboxed(["d"], FAST_D);
    const model = mediagate.image("d/gen-2-pro");
    const link = await model.doGenerate(imageCall({ files: [{ type: "file", mediaType: "image/png", data: TINY_PNG }, { type: "url", url: "file:///etc/passwd" }] })).then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(link).toMatchObject({ argument: "files[1]", message: expect.stringMatching(/^files\[1\]: "file:\/\/\/etc\/passwd" is not an http\(s\) link/) });
    // Bytes that are no image are refused by the library, naming the file as the model named it.
    const junk = model.doGenerate(imageCall({ files: [{ type: "file", mediaType: "image/png", data: TINY_PNG }, { type: "file", mediaType: "image/png", data: Buffer.from("no picture") }] }));
    await expect(junk).rejects.toMatchObject({ field: "images[1]", message: expect.stringMatching(/^images\[1\]: file image-2\.png is not /) });
    expect(await gate.list()).toEqual([]);
  });

  it("AI SDK image: a call whose jobs end on two targets of its route (D's credits pay for one) names both as the response's model id", async () => {
    // One 256x256 image at D costs 30,000 micro-USD: the balance pays for one, the other job is refused (402) and handed to F.
    const { emulators, mediagate } = await sandboxed(["d", "f"], { d: { renderTimeMs: 200, balanceMicroUsd: 30_000 }, f: { renderMs: { min: 200, max: 400 } } });
    const result = await generateImage({ model: mediagate.image({ route: ["d/gen-2-pro", "f/img-v2"] }), prompt: "a red fox in snow", size: "256x256", n: 2 });
    const targets = imagesMetadata(result.providerMetadata).map((image) => image.target);
    expect([...targets].sort()).toEqual(["d/gen-2-pro", "f/img-v2"]);
    expect(result.responses.map((response) => response.modelId)).toEqual([targets.join(",")]);
    expect(emulators.d.jobs).toHaveLength(1);
  });
});

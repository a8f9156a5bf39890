import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/core/job.js";
import { fileStem } from "../../src/engine/capture.js";
import { createCEmulator } from "../../src/sandbox/c/index.js";
import { createDEmulator, type DEmulator } from "../../src/sandbox/d/index.js";
import { createEEmulator } from "../../src/sandbox/e/index.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import type { Store } from "../../src/store/store.js";
import { localFolderOutputs } from "../../src/outputs/local-folder.js";
import { fullDiskFor } from "../helpers/full-disk.js";
import { sqliteFactory } from "../helpers/stores.js";
import { storedJobWhen, untilJob } from "../helpers/until.js";
import { failOneAttemptThenHold, startWorld, stoppedMidDownload, type World, worldEngine } from "../helpers/world.js";

// What the capture step makes of each result: its file's name and type, what is kept beside it, and the state a
// job is left in when saving fails or the engine stops mid-download. Real sandboxes over loopback, real SQLite.

const D_RESULT_PATH = /^\/d-results\//;
const pro = (prompt: string) => ({ provider: "d" as const, model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

let store: Store;
let cleanup: () => Promise<void>;
let world: World | undefined;
beforeEach(async () => {
  ({ store, cleanup } = await sqliteFactory.open());
});
afterEach(async () => {
  await cleanup();
  await world?.close();
  world = undefined;
});

async function dWorld(options: Parameters<typeof createDEmulator>[0] = {}, timeScale = 20): Promise<{ d: DEmulator; world: World; outDir: string }> {
  const d = createDEmulator({ renderTimeMs: 1_000, ...options });
  world = await startWorld([d], { timeScale });
  return { d, world, outDir: join(world.folder, "out") };
}

describe("fileStem", () => {
  it("keeps a ref made of safe characters as it is, up to 120 of them", () => {
    expect(fileStem({ ref: "fox-1_a.b" })).toBe("fox-1_a.b");
    expect(fileStem({ ref: "x".repeat(120) })).toBe("x".repeat(120));
  });

  it("a longer ref is cut to 120 characters and ends in a hash of the whole ref (two long refs with one start differ)", () => {
    const one = fileStem({ ref: `${"x".repeat(120)}-one` });
    const two = fileStem({ ref: `${"x".repeat(120)}-two` });
    expect(one).toMatch(new RegExp(`^${"x".repeat(120)}-[0-9a-f]{6}$`));
    expect(one).not.toBe(two);
  });

  it("leading dots become one '_' (no hidden file, no '..'), dots inside stay", () => {
    expect(fileStem({ ref: "...fox.1" })).toMatch(/^_fox\.1-[0-9a-f]{6}$/);
    expect(fileStem({ ref: "." })).toMatch(/^_-[0-9a-f]{6}$/);
  });

  it("the hash is the first 6 hex digits of the ref's sha256", () => {
    expect(fileStem({ ref: "a b" })).toBe(`a_b-${sha256(Buffer.from("a b")).slice(0, 6)}`);
  });
});

describe("saving results: file types, names and what is kept beside them (SQLite, real sandboxes, virtual time)", () => {
  const png = renderPng(16, 16, "typed", 5);
  const riff = (kind: string) => Buffer.concat([Buffer.from("RIFF"), Buffer.from([0x24, 0, 0, 0]), Buffer.from(kind), Buffer.from("fmt ")]);
  const ftyp = (brand: string) => Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftyp"), Buffer.from(brand), Buffer.alloc(8)]);
  const octets = "application/octet-stream";
  const cases: Array<{ what: string; header: string; bytes: Buffer; contentType: string; extension: string }> = [
    { what: "PNG named PNG", header: "image/png", bytes: png, contentType: "image/png", extension: "png" },
    { what: "a known type in the header wins over the bytes, case and parameters aside", header: "IMAGE/JPEG; charset=binary", bytes: png, contentType: "image/jpeg", extension: "jpg" },
    { what: "a known type with a space before its parameters", header: "image/jpeg ; charset=binary", bytes: png, contentType: "image/jpeg", extension: "jpg" },
    { what: "WebP named WebP", header: "image/webp", bytes: riff("WEBP"), contentType: "image/webp", extension: "webp" },
    { what: "GIF named GIF", header: "image/gif", bytes: Buffer.from("GIF89a"), contentType: "image/gif", extension: "gif" },
    { what: "MP4 named MP4", header: "video/mp4", bytes: ftyp("isom"), contentType: "video/mp4", extension: "mp4" },
    { what: "QuickTime named QuickTime", header: "video/quicktime", bytes: ftyp("qt  "), contentType: "video/quicktime", extension: "mov" },
    { what: "WAV named audio/wav", header: "audio/wav", bytes: riff("WAVE"), contentType: "audio/wav", extension: "wav" },
    { what: "WAV named audio/x-wav", header: "audio/x-wav", bytes: riff("WAVE"), contentType: "audio/x-wav", extension: "wav" },
    { what: "MP3 named MP3", header: "audio/mpeg", bytes: Buffer.from("ID3\u0004"), contentType: "audio/mpeg", extension: "mp3" },
    { what: "JPEG bytes sent as octets", header: octets, bytes: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]), contentType: "image/jpeg", extension: "jpg" },
    { what: "WebP bytes sent as octets", header: octets, bytes: riff("WEBP"), contentType: "image/webp", extension: "webp" },
    { what: "WAV bytes sent as octets", header: octets, bytes: riff("WAVE"), contentType: "audio/wav", extension: "wav" },
    { what: "MP4 bytes sent as octets", header: octets, bytes: ftyp("isom"), contentType: "video/mp4", extension: "mp4" },
    { what: "QuickTime bytes sent as octets", header: octets, bytes: ftyp("qt  "), contentType: "video/quicktime", extension: "mov" },
    { what: "PNG bytes under a type we have no extension for", header: "image/bmp", bytes: png, contentType: "image/png", extension: "png" },
    { what: "unknown bytes keep the header's type, as .bin", header: "text/plain; charset=utf-8", bytes: Buffer.from("hello"), contentType: "text/plain", extension: "bin" },
    { what: "unknown bytes sent as octets", header: octets, bytes: Buffer.from("hello"), contentType: octets, extension: "bin" },
    { what: "JPEG's first byte alone is not JPEG", header: octets, bytes: Buffer.from([0xff, 0x00, 0xff, 0xd8]), contentType: octets, extension: "bin" },
    { what: "JPEG's second byte alone is not JPEG", header: octets, bytes: Buffer.from([0x00, 0xd8, 0xff, 0xd8]), contentType: octets, extension: "bin" },
    { what: "RIFF of another kind is not WebP or WAV", header: octets, bytes: riff("AVI "), contentType: octets, extension: "bin" },
    { what: "WEBP without RIFF is not WebP", header: octets, bytes: Buffer.concat([Buffer.from("RIFX"), riff("WEBP").subarray(4)]), contentType: octets, extension: "bin" },
    { what: "WAVE without RIFF is not WAV", header: octets, bytes: Buffer.concat([Buffer.from("RIFX"), riff("WAVE").subarray(4)]), contentType: octets, extension: "bin" },
    { what: "PNG's signature with its last byte wrong is not PNG", header: octets, bytes: Buffer.concat([png.subarray(0, 7), Buffer.from([0x0b]), png.subarray(8)]), contentType: octets, extension: "bin" },
    { what: "PNG's signature with its first byte wrong is not PNG", header: octets, bytes: Buffer.concat([Buffer.from([0x88]), png.subarray(1)]), contentType: octets, extension: "bin" },
  ];

  it(`names each result by its type: ${cases.length} answers, each saved with the extension of its type and its bytes as sent`, async () => {
    const { outDir } = await dWorld();
    const { engine, enqueue, wait } = worldEngine(world!, store, { virtualTime: true });
    engine.start();
    const seen = [];
    for (const [index, item] of cases.entries()) {
      world!.sandbox.injectFault({ provider: "d", method: "GET", path: D_RESULT_PATH, fault: { kind: "status", status: 200, body: item.bytes, headers: { "content-type": item.header } }, times: 1 });
      const job = await enqueue(pro(item.what), `case-${index}`);
      const [ended] = (await wait([job.id])).jobs;
      const [output] = await store.outputs(job.id);
      seen.push({ what: item.what, state: ended!.state, path: output?.path, contentType: output?.contentType, sha256: output?.sha256, bytes: output?.bytes });
    }
    await engine.stop();
    expect(seen).toEqual(
      cases.map((item, index) => ({
        what: item.what,
        state: "succeeded",
        path: join(outDir, `case-${index}.${item.extension}`),
        contentType: item.contentType,
        sha256: sha256(item.bytes),
        bytes: item.bytes.length,
      })),
    );
    for (const [index, item] of cases.entries()) expect(readFileSync(join(outDir, `case-${index}.${item.extension}`)).equals(item.bytes)).toBe(true);
  });

  it("E: the outputs of one job are numbered STEM-1, STEM-2, each with what E said of it (seed, alt text) in a .json beside it", async () => {
    const e = createEEmulator({ renderMs: { min: 2_000, max: 2_000 } });
    world = await startWorld([e], { timeScale: 60 });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const job = await enqueue({ provider: "e", model: "v3", input: { prompt: "two paper cranes", numVariations: 2, seeds: [11, 22] } }, "cranes");
    engine.start();
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("succeeded");
    expect(engine.stats().e!.downloads).toBe(2);
    const outDir = join(world.folder, "out");
    expect(readdirSync(outDir).sort()).toEqual(["cranes-1.png", "cranes-1.png.json", "cranes-2.png", "cranes-2.png.json"]);
    const outputs = await store.outputs(job.id);
    expect(outputs.map((output) => [output.index, output.path])).toEqual([
      [0, join(outDir, "cranes-1.png")],
      [1, join(outDir, "cranes-2.png")],
    ]);
    for (const output of outputs) {
      expect(JSON.parse(readFileSync(`${output.path}.json`, "utf8"))).toEqual(output.metadata);
      expect(output.metadata).toMatchObject({ seed: expect.any(Number) });
      expect(sha256(readFileSync(output.path))).toBe(output.sha256);
    }
    // The success event lists what was saved.
    const last = (await store.events(job.id)).at(-1)!;
    expect(last.toState).toBe("succeeded");
    expect(last.reason).toBe("saved 2 output(s)");
    expect(last.detail).toEqual({ outputs: outputs.map((output) => ({ path: output.path, bytes: output.bytes, sha256: output.sha256 })) });
  });

  it("C: an output the provider said nothing about gets no .json beside it, and is stored with empty metadata", async () => {
    const c = createCEmulator({ renderMs: { min: 20_000, max: 20_000 } });
    world = await startWorld([c], { timeScale: 60 });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const job = await enqueue({ provider: "c", model: "v6", input: { prompt: "a boat at night" } }, "boat");
    engine.start();
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("succeeded");
    expect(readdirSync(join(world.folder, "out"))).toEqual(["boat.mp4"]);
    const [output] = await store.outputs(job.id);
    expect(output!.metadata).toEqual({});
    expect(output!.contentType).toBe("video/mp4");
  });
});

describe("saving results: the state a job is left in (SQLite, real sandbox, virtual time)", () => {
  it("an answer of HTTP 300 is not a result: the download is tried again and the real file saved", async () => {
    const { outDir } = await dWorld();
    world!.sandbox.injectFault({ provider: "d", method: "GET", path: D_RESULT_PATH, fault: { kind: "status", status: 300, body: Buffer.from("choose") }, times: 1 });
    const { engine, enqueue, wait } = worldEngine(world!, store, { virtualTime: true });
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("succeeded");
    const downloads = world!.sandbox.requests().filter((request) => D_RESULT_PATH.test(request.url)).map((request) => request.statusCode);
    expect(downloads).toEqual([300, 200]);
    const saved = readFileSync(join(outDir, "lighthouse.png"));
    expect(saved.subarray(1, 4).toString("latin1")).toBe("PNG");
  });

  it("a result link fetch refuses (credentials in it) is never tried again: the job fails at once, charged as D charged it, with the refusal in its error and its last event", async () => {
    const { world } = await dWorld();
    const unsafe = `${world.sandbox.url.replace("://", "://user:secret@")}/d-results/elsewhere.png`;
    world.sandbox.injectFault({ provider: "d", method: "GET", path: /^\/d-poll\//, fault: { kind: "status", status: 200, body: { status: "Ready", result: { sample: unsafe } } } });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const states: string[] = [];
    engine.on("job", (job) => states.push(job.state));
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("failed");
    expect(ended!.error!.code).toBe("result_download_failed");
    expect(ended!.error!.message).toMatch(/not sent: fetch refuses a URL that carries credentials$/);
    expect(ended!.error!.message).not.toContain("secret");
    expect(ended!.pollFailures).toBe(0);
    expect(world.sandbox.requests().filter((request) => D_RESULT_PATH.test(request.url))).toEqual([]);
    expect(ended!.chargeMicroUsd).toBe(30_000);
    expect(states.at(-1)).toBe("failed");
    const last = (await store.events(job.id)).at(-1)!;
    expect(last.toState).toBe("failed");
    expect(last.reason).toBe(`could not save the results: ${ended!.error!.message}`);
  });

  it("a download that failed leaves the job capturing with one failure counted and the reason 'saving failed (…); retrying' until the next attempt, and says so to listeners", async () => {
    const { world } = await dWorld();
    failOneAttemptThenHold(world, D_RESULT_PATH, { kind: "status", status: 503 });
    const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
    const reported: Job[] = [];
    engine.on("job", (update) => {
      if (update.pollFailures === 1) reported.push(update);
    });
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    const between = await storedJobWhen(store, job.id, (current) => current.pollFailures === 1, "the first failed capture attempt to be recorded");
    expect(between.state).toBe("capturing");
    expect(between.error).toBeNull();
    expect(between.reason).toMatch(/^saving failed \(downloading output 1 from .* answered HTTP 503\); retrying$/);
    // Reported to listeners as it happened (a progress display shows it), not only written to the store.
    expect(reported.map((update) => update.reason)).toEqual([between.reason]);
    expect(between.nextAttemptAt).toBeGreaterThan(between.updatedAt);
    expect(between.nextAttemptAt - between.updatedAt).toBeLessThanOrEqual(2_000);
    const [ended] = (await wait([job.id])).jobs;
    await engine.stop();
    expect(ended!.state).toBe("succeeded");
    expect(ended!.pollFailures).toBe(0);
    expect(ended!.reason).toBeNull();
  });

  it("a full disk leaves the job capturing, blocked output_unwritable, with a reason naming the file and the next try 1 s on, then 2, 4 … up to 30 s; the try that works saves the bytes downloaded once", async () => {
    const { d, outDir } = await dWorld({}, 60);
    const outputs = fullDiskFor(3);
    const { engine, enqueue } = worldEngine(world!, store, { virtualTime: true, outputs });
    const blocked: Job[] = [];
    engine.on("job", (job) => {
      if (job.blockedCode === "output_unwritable") blocked.push(job);
    });
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    // (A wait for the batch would return at the block: a blocked job is reported to the user.)
    const ended = await untilJob(engine, store, job.id, (current) => current.state === "succeeded");
    await engine.stop();
    expect(blocked.map((job) => job.state)).toEqual(["capturing", "capturing", "capturing"]);
    expect(blocked[0]!.reason).toBe(
      `rendered, but cannot write ${join(outDir, "lighthouse.png")}: the disk is full (ENOSPC); saving again in 1 s (or re-run the command with a writable --out)`,
    );
    expect(blocked.map((job) => job.nextAttemptAt - job.updatedAt)).toEqual([1_000, 2_000, 4_000]);
    expect(ended.blockedCode).toBeNull();
    expect(d.jobs).toHaveLength(1);
    // Issue 36, finding 1: the bytes were kept in memory between the tries, not downloaded again for each.
    expect(d.jobs[0]!.downloads).toBe(1);
    expect(ended.finishedAt! - blocked[2]!.updatedAt).toBeGreaterThanOrEqual(4_000);
    const [output] = await store.outputs(job.id);
    expect(createHash("sha256").update(readFileSync(output!.path)).digest("hex")).toBe(output!.sha256);
  });

  it("issue 36, finding 1: a writer failing with an error of its own kind (a client's raw error, not an OutputSaveError) is a failed save too: the job stays capturing and is saved on the next try", async () => {
    const { d, outDir } = await dWorld({}, 60);
    let thrown = 0;
    const outputs = {
      ...localFolderOutputs,
      async write(path: string, bytes: Buffer) {
        if (thrown++ === 0) throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
        await localFolderOutputs.write(path, bytes);
      },
    };
    const { engine, enqueue } = worldEngine(world!, store, { virtualTime: true, outputs });
    const blocked: Job[] = [];
    engine.on("job", (job) => {
      if (job.blockedCode === "output_unwritable") blocked.push(job);
    });
    const job = await enqueue(pro("a lighthouse"), "lighthouse");
    engine.start();
    const ended = await untilJob(engine, store, job.id, (current) => current.state === "succeeded");
    await engine.stop();
    expect(blocked.map((update) => update.reason)).toEqual([
      `rendered, but cannot save to ${join(outDir, "lighthouse.png")}: socket hang up (ECONNRESET); saving again in 1 s (or re-run the command with a writable --out)`,
    ]);
    expect(ended.error).toBeNull();
    expect(d.jobs[0]!.downloads).toBe(1);
  });

  it("stopping the engine during a download leaves the job capturing with no error; the next engine saves it, with one submit and one charge", async () => {
    const { d, outDir } = await dWorld();
    // The download is held until the client gives up on it (the stop aborts it).
    const stopped = await stoppedMidDownload(world!, store, D_RESULT_PATH, ({ enqueue }) => enqueue(pro("a lighthouse"), "lighthouse"));
    expect(stopped.state).toBe("capturing");
    expect(stopped.error).toBeNull();
    expect(stopped.pollFailures).toBe(0);
    expect(stopped.leaseOwner).toBeNull();
    expect(existsSync(outDir) ? readdirSync(outDir) : []).toEqual([]);

    const second = worldEngine(world!, store, { virtualTime: true });
    second.engine.start();
    const [ended] = (await second.wait([stopped.id])).jobs;
    await second.engine.stop();
    expect(ended!.state).toBe("succeeded");
    expect(d.jobs).toHaveLength(1);
    expect(ended!.chargeMicroUsd).toBe(30_000);
    expect(await store.ledgerTotal()).toBe(30_000);
    expect(readdirSync(outDir).sort()).toEqual(["lighthouse.png", "lighthouse.png.json"]);
  });
});

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { IDEMPOTENT_ATTEMPTS } from "../../src/providers/http.js";
import type { FaultKind } from "../../src/sandbox/faults.js";
import { createDEmulator, type DEmulator } from "../../src/sandbox/d/index.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import type { Job } from "../../src/core/job.js";
import type { JobRequest } from "../../src/providers/adapter.js";
import type { Store } from "../../src/store/store.js";
import { jobJson } from "../../src/app/job-view.js";
import { sha256File } from "../helpers/d-sandbox.js";
import { storeFactories } from "../helpers/stores.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

const D_POLL_PATH = /^\/d-poll\//;
const D_RESULT_PATH = /^\/d-results\//;
/** ProviderHttp sends an idempotent request (a poll, a download) up to this many times before the engine sees the failure. */
const HTTP_ATTEMPTS = IDEMPOTENT_ATTEMPTS;
const pro = (prompt: string) => ({ provider: "d" as const, model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });

for (const factory of storeFactories) {
  describe(`saving results (${factory.name}, real sandbox, virtual time)`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    let world: World | undefined;
    beforeEach(async () => {
      ({ store, cleanup } = await factory.open());
    });
    afterEach(async () => {
      await cleanup();
      await world?.close();
      world = undefined;
    });

    async function dWorld(options: Parameters<typeof createDEmulator>[0] = {}): Promise<{ d: DEmulator; world: World; outDir: string }> {
      const d = createDEmulator({ renderTimeMs: 1_000, ...options });
      world = await startWorld([d], { timeScale: 20 });
      return { d, world, outDir: join(world.folder, "out") };
    }

    /** One job run to its end by an engine on the world's virtual clock (started, waited for, stopped). */
    async function runOne(world: World, request: JobRequest, ref?: string): Promise<{ job: Job; ended: Job | undefined }> {
      const { engine, enqueue, wait } = worldEngine(world, store, { virtualTime: true });
      const job = await enqueue(request, ref);
      engine.start();
      const [ended] = (await wait([job.id])).jobs;
      await engine.stop();
      return { job, ended };
    }

    /** What the sandbox answered to each download, in order. */
    const downloads = (world: World) => world.sandbox.requests().filter((request) => D_RESULT_PATH.test(request.url)).map((request) => request.statusCode);
    const filesIn = (folder: string) => (existsSync(folder) ? readdirSync(folder).sort() : []);

    /** Capture attempts before a job whose downloads keep failing is given up (src/engine/capture.ts). */
    const CAPTURE_ATTEMPTS = 5;
    const expiredLinks: Array<{ cause: string; fault: FaultKind | null; status: number }> = [
      { cause: "403: its ten minutes were over before the download", fault: null, status: 403 },
      { cause: "404 from the file host", fault: { kind: "status", status: 404, body: { code: "not_found" } }, status: 404 },
      { cause: "410 Gone from the file host", fault: { kind: "status", status: 410, body: { code: "gone" } }, status: 410 },
    ];
    for (const { cause, fault, status } of expiredLinks) {
      // A dead link is tried again (a provider that hands out a fresh link on every read, as B does, gives a working one),
      // reading the job first each time; one that stays dead fails result_expired once the bounded attempts are spent.
      it(`D: a result link that stays dead (${cause}) fails the job result_expired after ${CAPTURE_ATTEMPTS} attempts, each after a fresh read; nothing saved`, async () => {
        // A link lifetime of 0 makes the link dead by the time anyone can read it: the sandbox's own 403 link_expired.
        const { d, world, outDir } = await dWorld(fault ? {} : { sampleTtlMs: 0 });
        if (fault) world.sandbox.injectFault({ provider: "d", method: "GET", path: D_RESULT_PATH, fault });
        const { job, ended } = await runOne(world, pro("a lighthouse"));
        expect(ended!.state).toBe("failed");
        expect(ended!.error?.code).toBe("result_expired");
        expect(ended!.error?.message).toMatch(new RegExp(`answered HTTP ${status}$`));
        expect(downloads(world)).toEqual(Array(CAPTURE_ATTEMPTS).fill(status));
        expect(d.jobs[0]!.downloads).toBe(0);
        expect(await store.outputs(job.id)).toEqual([]);
        expect(filesIn(outDir)).toEqual([]);
        expect((await store.events(job.id)).map((event) => event.toState)).toEqual(["queued", "submitting", "running", "capturing", "failed"]);
      });
    }

    // A capture that fails after the provider reported success still records what the provider charged
    // (D bills at submit; B's charge is settled later): the ledger never under-reports what was paid.
    it("D: a job whose result link expired is still in the ledger at D's charge (D bills at submit)", async () => {
      const { d, world } = await dWorld({ sampleTtlMs: 0 });
      const { job, ended } = await runOne(world, pro("paid, never saved"));
      expect(ended!.error?.code).toBe("result_expired");
      expect(d.chargesMicroUsd[d.jobs[0]!.id]).toBe(30_000);
      expect(ended!.chargeMicroUsd).toBe(30_000);
      expect(await store.ledgerTotal()).toBe(30_000);
    });

    it("D: a download answering 503 is retried, reading the job again for a fresh link between attempts, and the job succeeds with its file matching its sha256", async () => {
      const { d, world, outDir } = await dWorld();
      world.sandbox.injectFault({ provider: "d", method: "GET", path: D_RESULT_PATH, fault: { kind: "status", status: 503 }, times: HTTP_ATTEMPTS + 1 });
      const { job, ended } = await runOne(world, pro("a lighthouse"), "lighthouse");
      expect(ended!.state).toBe("succeeded");
      expect(ended!.pollFailures).toBe(0);
      expect(downloads(world)).toEqual([...Array(HTTP_ATTEMPTS + 1).fill(503), 200]);
      // The first attempt's sends came back-to-back; the second attempt began with a read of the job.
      const log = world.sandbox.requests();
      const firstOfSecondAttempt = log.filter((request) => D_RESULT_PATH.test(request.url))[HTTP_ATTEMPTS]!;
      const lastOfFirstAttempt = log.filter((request) => D_RESULT_PATH.test(request.url))[HTTP_ATTEMPTS - 1]!;
      const between = log.slice(log.indexOf(lastOfFirstAttempt) + 1, log.indexOf(firstOfSecondAttempt));
      expect(between.filter((request) => D_POLL_PATH.test(request.url)).length).toBeGreaterThanOrEqual(1);
      const [output] = await store.outputs(job.id);
      expect(output!.path).toBe(join(outDir, "lighthouse.png"));
      expect(sha256File(output!.path)).toBe(output!.sha256);
      expect(filesIn(outDir)).toEqual(["lighthouse.png", "lighthouse.png.json"]);
      expect(d.jobs[0]!.downloads).toBe(1);
      expect(await store.ledgerTotal()).toBe(30_000);
    });

    it("D: a saved output keeps where it came from without the link's query (its signature): not in the store, not in the --json shape, so no answer hands out a second download", async () => {
      const { world } = await dWorld();
      const { job, ended } = await runOne(world, pro("a lighthouse"), "lighthouse");
      expect(ended!.state).toBe("succeeded");
      const served = world.sandbox.requests().find((request) => D_RESULT_PATH.test(request.url))!.url;
      expect(served).toContain("?");
      const [output] = await store.outputs(job.id);
      expect(output!.url).toBe(`${world.sandbox.url}${served.split("?")[0]}?…`);
      // A row saved before outputs were stored this way is shown the same.
      expect(jobJson(ended!, [{ ...output!, url: `${world.sandbox.url}${served}` }]).outputs[0]!.url).toBe(output!.url);
    });

    it("a ref that is not a safe file name is saved under a safe one ending in a hash of the ref: two such refs never share a file, and none leaves the folder", async () => {
      const { outDir } = await dWorld();
      const { engine, enqueue, wait } = worldEngine(world!, store, { virtualTime: true });
      const refs = ["fox/1 a", "fox?1 a", "../../escape", "plain-ref_1.x"];
      const jobs = [];
      for (const ref of refs) jobs.push(await enqueue(pro(`image for ${ref}`), ref));
      engine.start();
      const ended = (await wait(jobs.map((job) => job.id))).jobs;
      await engine.stop();
      expect(ended.map((job) => job.state)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
      const paths = await Promise.all(jobs.map(async (job) => (await store.outputs(job.id))[0]!.path));
      const names = paths.map((path) => path.slice(outDir.length + 1));
      expect(names[0]).toMatch(/^fox_1_a-[0-9a-f]{6}\.png$/);
      expect(names[1]).toMatch(/^fox_1_a-[0-9a-f]{6}\.png$/);
      expect(names[0]).not.toBe(names[1]);
      // Slashes become "_" and leading dots one "_" ("../../escape" → "__.._escape"): no path segment, so the file stays in the folder.
      expect(names[2]).toMatch(/^__\.\._escape-[0-9a-f]{6}\.png$/);
      // A ref that is already a safe name is the file's name as it is.
      expect(names[3]).toBe("plain-ref_1.x.png");
      for (const path of paths) expect(path.startsWith(`${outDir}/`)).toBe(true);
    });

    it("a result answered as application/octet-stream is named by its bytes (a PNG is saved as .png), and its bytes are kept as sent", async () => {
      const { outDir } = await dWorld();
      const png = renderPng(64, 48, "served without its type", 3);
      world!.sandbox.injectFault({
        provider: "d",
        method: "GET",
        path: D_RESULT_PATH,
        fault: { kind: "status", status: 200, body: png, headers: { "content-type": "application/octet-stream" } },
      });
      const { engine, enqueue, wait } = worldEngine(world!, store, { virtualTime: true });
      const job = await enqueue(pro("untyped"), "untyped");
      engine.start();
      const [ended] = (await wait([job.id])).jobs;
      await engine.stop();
      expect(ended!.state).toBe("succeeded");
      const [output] = await store.outputs(job.id);
      expect(output!.path).toBe(join(outDir, "untyped.png"));
      expect(readFileSync(output!.path).equals(png)).toBe(true);
      expect(sha256File(output!.path)).toBe(output!.sha256);
    });

    it("D: a download failing on five capture attempts in a row fails the job result_download_failed, each attempt after a fresh read; nothing is saved", async () => {
      const { d, world, outDir } = await dWorld();
      world.sandbox.injectFault({ provider: "d", method: "GET", path: D_RESULT_PATH, fault: { kind: "status", status: 503 } });
      const { job, ended } = await runOne(world, pro("a lighthouse"));
      expect(ended!.state).toBe("failed");
      expect(ended!.error?.code).toBe("result_download_failed");
      expect(ended!.error?.message).toMatch(/answered HTTP 503$/);
      // The provider error's detail is kept with it (the status, whether it was worth retrying).
      expect(ended!.error?.detail).toMatchObject({ provider: "d", httpStatus: 503, retryable: true });
      // One read that saw Ready before each of the five attempts: the read just before the first download, and one
      // before each later attempt. (Counted by position in the log: a read that arrives a moment before the render ends
      // can still answer Ready, so its arrival time does not tell which reads saw Ready.)
      const log = world.sandbox.requests();
      const firstDownload = log.findIndex((request) => D_RESULT_PATH.test(request.url));
      expect(1 + log.slice(firstDownload).filter((request) => D_POLL_PATH.test(request.url)).length).toBe(5);
      expect(d.jobs[0]!.downloads).toBe(0);
      expect(downloads(world).every((status) => status === 503)).toBe(true);
      expect(await store.outputs(job.id)).toEqual([]);
      expect(filesIn(outDir)).toEqual([]);
    });

    it("D: poll failures just before the Ready answer do not count against the capture's five attempts", async () => {
      const { world } = await dWorld();
      // Four polls in a row fail at the network, the fifth sees Ready; then one capture attempt fails.
      world.sandbox.injectFault({ provider: "d", method: "GET", path: D_POLL_PATH, fault: { kind: "drop" }, times: 4 * HTTP_ATTEMPTS });
      world.sandbox.injectFault({ provider: "d", method: "GET", path: D_RESULT_PATH, fault: { kind: "status", status: 503 }, times: HTTP_ATTEMPTS });
      const { job, ended } = await runOne(world, pro("a lighthouse"));
      expect(ended!.state).toBe("succeeded");
      expect(downloads(world)).toEqual([...Array(HTTP_ATTEMPTS).fill(503), 200]);
    });

    it("D: a temporary file left by a capture killed mid-write (STEM.png.tmp-XXXXXXXX) or mid folder check is removed by the job's next capture; other jobs' files stay", async () => {
      const { world, outDir } = await dWorld();
      mkdirSync(outDir, { recursive: true });
      const halfWritten = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a]);
      const leftovers = ["lighthouse.png.tmp-0123abcd", "lighthouse-2.png.tmp-89abcdef", "lighthouse.png.json.tmp-00ff00ff", ".mediagate-write-check-0123abcd"];
      const others = ["lighthouse-old.png.tmp-0123abcd", "harbour.png.tmp-0123abcd", "lighthouse.png.tmp-keep"];
      for (const name of [...leftovers, ...others]) writeFileSync(join(outDir, name), halfWritten);
      const { job, ended } = await runOne(world, pro("a lighthouse"), "lighthouse");
      expect(ended!.state).toBe("succeeded");
      expect(filesIn(outDir)).toEqual([...others, "lighthouse.png", "lighthouse.png.json"].sort());
      const [output] = await store.outputs(job.id);
      expect(sha256File(output!.path)).toBe(output!.sha256);
    });
  });
}

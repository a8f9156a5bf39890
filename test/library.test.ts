import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { BudgetError, ConfigError, InputError, type Job, Mediagate } from "../src/index.js";
import { type DWorld, sha256File, startDWorld } from "./helpers/d-sandbox.js";
import { cliEnvironment, tsxLoader } from "./helpers/cli.js";
import { cliPostgresStore, watchConnections } from "./helpers/pg-cli-store.js";
import { createAllEmulators } from "../src/sandbox/all.js";
import { startWorld } from "./helpers/world.js";
import { startTcpProxy } from "./helpers/tcp-proxy.js";
import { until } from "./helpers/until.js";
import { storeLocations, type StoreLocation } from "./helpers/store-locations.js";

const databaseUrl = process.env.DATABASE_URL;
const libraryCloseMain = fileURLToPath(new URL("./helpers/library-close-main.ts", import.meta.url));

const locations = storeLocations();
const pro = (prompt: string, width = 256) => ({ provider: "d" as const, model: "gen-2-pro", input: { prompt, width, height: 256 } });

for (const makeLocation of locations) {
  describe(`the Mediagate library (${makeLocation().name}, D sandbox over loopback)`, () => {
    let world: DWorld | undefined;
    let location: StoreLocation | undefined;
    const gates: Mediagate[] = [];
    afterEach(async () => {
      for (const gate of gates.splice(0)) await gate.close();
      await location?.cleanup();
      await world?.close();
      world = undefined;
      location = undefined;
    });

    async function open(env: Record<string, string> = {}, options: { runEngine?: boolean } = {}): Promise<Mediagate> {
      world ??= await startDWorld({ renderTimeMs: 400 });
      if (!location) {
        location = makeLocation();
        world.env.MEDIAGATE_STORE = await location.address(world.folder);
      }
      const gate = await Mediagate.open({ env: { ...world.env, ...env }, ...options });
      gates.push(gate);
      return gate;
    }

    it("submit then wait runs the job in the library's engine: progress sees each state in order, the PNG matches its sha256, get and list find it", async () => {
      const gate = await open();
      const job = await gate.submit(pro("a lighthouse"), { ref: "lighthouse" });
      expect(job).toMatchObject({ ref: "lighthouse", state: "queued", provider: "d", estimateMicroUsd: 30_000 });
      const seen: string[] = [];
      const done = await gate.wait(job.id, { onProgress: (update: Job) => seen.push(update.state) });
      expect(done.state).toBe("succeeded");
      expect(seen.filter((state, index) => state !== seen[index - 1])).toEqual(["submitting", "running", "capturing", "succeeded"]);
      const [output] = await gate.outputs(job.id);
      expect(output!.path).toBe(join(world!.env.MEDIAGATE_OUTPUT_DIR!, "lighthouse.png"));
      expect(sha256File(output!.path)).toBe(output!.sha256);
      expect((await gate.get("lighthouse"))!.id).toBe(job.id);
      expect((await gate.list({ states: ["succeeded"] })).map((listed) => listed.id)).toEqual([job.id]);
      expect(await gate.list({ states: ["queued"] })).toEqual([]);
      expect(done.chargeMicroUsd).toBe(30_000);
      expect(world!.submits()).toBe(1);
    });

    it("cancelAfterS sets the job's deadline (issue 37, part 2); a value it does not take is refused naming it, nothing stored", async () => {
      const gate = await open({}, { runEngine: false });
      const before = Date.now();
      const job = await gate.submit(pro("in time"), { ref: "deadline", cancelAfterS: 120 });
      expect(job.deadlineAt! - before).toBeGreaterThanOrEqual(120_000);
      expect(job.deadlineAt! - Date.now()).toBeLessThanOrEqual(120_000);
      await expect(gate.submit(pro("never"), { ref: "bad-deadline", cancelAfterS: 0 })).rejects.toMatchObject({ field: "cancelAfterS" });
      expect(await gate.get("bad-deadline")).toBeNull();
    });

    it("timing gives a queued job's position and, once a job of its model has finished, its expected start and finish (issue 37, part 1)", async () => {
      const runner = await open();
      await runner.wait((await runner.submit(pro("pace"), { ref: "pace" })).id);
      // Its engine stops: nothing takes the jobs queued next.
      gates.splice(gates.indexOf(runner), 1);
      await runner.close();
      const gate = await open({}, { runEngine: false });
      const first = await gate.submit(pro("first"), { ref: "first" });
      const second = await gate.submit(pro("second"), { ref: "second" });
      const before = Date.now();
      const timing = await gate.timing(second.id);
      expect(timing.queuePosition).toBe(2);
      // D's 24 slots are free: it starts now, and is done after the one job's time.
      expect(timing.expectedStartAt).toBeGreaterThanOrEqual(before);
      expect(timing.expectedFinishAt! - timing.expectedStartAt!).toBeGreaterThanOrEqual(400);
      expect((await gate.timing(first.id)).queuePosition).toBe(1);
      expect(await gate.timing("pace")).toEqual({ queuePosition: null, expectedStartAt: null, expectedFinishAt: null });
      expect(await gate.timing("no-such-job")).toEqual({ queuePosition: null, expectedStartAt: null, expectedFinishAt: null });
    });

    it("submitting the same ref again returns the stored job, and it is sent once", async () => {
      const gate = await open();
      const first = await gate.submit(pro("once"), { ref: "once" });
      const second = await gate.submit(pro("once"), { ref: "once" });
      expect(second.id).toBe(first.id);
      expect((await gate.wait(first.id)).state).toBe("succeeded");
      expect(await gate.list()).toHaveLength(1);
      expect(world!.submits()).toBe(1);
      // The ref names that request: another request under it is refused, not answered with the stored job's result.
      const other = await gate.submit(pro("twice"), { ref: "once" }).catch((error: unknown) => error);
      expect(other).toBeInstanceOf(InputError);
      expect((other as InputError).field).toBe("ref");
      expect((other as InputError).reason).toMatch(/already used by job .* with a different request/);
    });

    it("a common request (task, prompt, size, model or route) is routed and queued like a native one; its ref resumes it", async () => {
      const gate = await open();
      const common = { task: "image" as const, prompt: "a common fox", size: "1000x750", route: ["c/v6", "d/gen-2-pro"] };
      const job = await gate.submit(common, { ref: "common-fox" });
      expect(job).toMatchObject({ provider: "d", model: "gen-2-pro", body: { width: 1008, height: 752 }, route: { current: "d/gen-2-pro", next: [] } });
      expect(job.warnings).toContain("size 1000x750 sent as width 1008, height 752 (D takes multiples of 16 from 64)");
      expect((await gate.submit(common, { ref: "common-fox" })).id).toBe(job.id);
      expect((await gate.wait(job.id)).state).toBe("succeeded");
      expect(world!.submits()).toBe(1);
      expect(await gate.quote(common)).toMatchObject({ target: "d/gen-2-pro", microUsd: 30_000 });
    });

    it("quote gives the estimate and its source without storing or sending anything", async () => {
      const gate = await open();
      const quote = await gate.quote(pro("just asking", 1024));
      expect(quote.microUsd).toBe(30_000);
      expect(quote.source).toMatch(/gen-2-pro/);
      expect(quote.warnings).toEqual([]);
      expect(await gate.list()).toEqual([]);
      expect(world!.sandbox.requests()).toEqual([]);
    });

    it("submit refuses, before storing or sending anything: bad input (InputError naming the field), over budget (BudgetError), a provider not configured (ConfigError naming the variable)", async () => {
      const gate = await open();
      const invalid = await gate.submit(pro("bad width", 250)).catch((error: unknown) => error);
      expect(invalid).toBeInstanceOf(InputError);
      expect((invalid as InputError).field).toMatch(/width/);

      const tight = await open({ MEDIAGATE_BUDGET_USD: "0.02" });
      const over = await tight.submit(pro("too dear")).catch((error: unknown) => error);
      expect(over).toBeInstanceOf(BudgetError);
      expect(over).toMatchObject({ estimateMicroUsd: 30_000, budgetMicroUsd: 20_000 });

      const keyless = await open({ MEDIAGATE_D_API_KEY: "" });
      const unconfigured = await keyless.submit(pro("no key")).catch((error: unknown) => error);
      expect(unconfigured).toBeInstanceOf(ConfigError);
      expect((unconfigured as ConfigError).variable).toBe("MEDIAGATE_D_API_KEY");

      expect(await gate.list()).toEqual([]);
      expect(world!.sandbox.requests()).toEqual([]);
    });

    it("cancel ends a queued job locally and it is never sent; a job already sent (running) or finished is not cancelled and is tracked to its end", async () => {
      world = await startDWorld({ renderTimeMs: 1_500 });
      // No engine in this process: the jobs stay queued until another one runs them.
      const gate = await open({}, { runEngine: false });
      const queued = await gate.submit(pro("changed my mind"), { ref: "cancel-me" });
      const kept = await gate.submit(pro("keep me"), { ref: "keep-me" });
      expect(await gate.cancel(queued.id)).toBe(true);
      expect((await gate.get(queued.id))!.state).toBe("cancelled");
      expect(await gate.cancel(queued.id)).toBe(false);
      expect(await gate.cancel("no-such-job")).toBe(false);

      const runner = await open();
      const sent = new AbortController();
      await runner.wait(kept.id, { signal: sent.signal, onProgress: (update) => update.state === "running" && sent.abort() });
      expect(await gate.cancel(kept.id)).toBe(false);
      expect((await gate.get(kept.id))!.state).toBe("running");
      expect((await runner.wait(kept.id)).state).toBe("succeeded");
      expect(await gate.cancel(kept.id)).toBe(false);
      expect((await gate.get(queued.id))!.state).toBe("cancelled");
      expect(world!.submits()).toBe(1);
      expect(world!.d.jobs.map((job) => job.body.prompt)).toEqual(["keep me"]);
    });

    it("close stops the engine and releases its leases: a job left running is resumed by the next instance at once and sent only once", async () => {
      world = await startDWorld({ renderTimeMs: 2_000 });
      const first = await open();
      const job = await first.submit(pro("handed over"));
      const running = new AbortController();
      await first.wait(job.id, { signal: running.signal, onProgress: (update) => update.state === "running" && running.abort() });
      await first.close();
      gates.splice(gates.indexOf(first), 1);
      const left = (await (await open({}, { runEngine: false })).get(job.id))!;
      expect(left).toMatchObject({ state: "running", leaseOwner: null, leaseExpiresAt: null });

      const second = await open();
      expect((await second.wait(job.id)).state).toBe("succeeded");
      expect(world.submits()).toBe(1);
    });
  });
}

describe.runIf(databaseUrl)("closing the library while its store is away (real PostgreSQL behind a loopback proxy)", () => {
  it("a close that timed out no longer keeps the process alive: a library user's process ends by itself while the store stays away", async () => {
    const world = await startDWorld({ renderTimeMs: 300 });
    world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 400 } });
    const proxy = await startTcpProxy({ host: new URL(databaseUrl!).hostname, port: Number(new URL(databaseUrl!).port || 5432) });
    const pgStore = await cliPostgresStore(databaseUrl!, { viaPort: proxy.port });
    const child = spawn(process.execPath, ["--import", tsxLoader, libraryCloseMain], {
      env: cliEnvironment({ ...world.env, MEDIAGATE_STORE: pgStore.address }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      await until(() => stdout.includes("submitted"), "the library process to submit its job", 20_000);
      await until(() => world.submits() > 0, "D to receive the submit");
      // The submit is in flight (answered after 400 ms): its answer cannot be recorded, so the close times out.
      await proxy.cut();
      child.stdin!.write("go\n");
      await until(() => stdout.includes("closed"), "the library process to close");
      expect(stdout).toContain("closed timed_out");
      const closedAt = Date.now();
      // Before: the answer's retries (every few seconds, for as long as the store stayed away) held the process open for good.
      const code = await Promise.race([exited, new Promise<"alive">((resolve) => setTimeout(() => resolve("alive"), 15_000))]);
      expect(code).toBe(0);
      expect(Date.now() - closedAt).toBeLessThan(15_000);
    } finally {
      child.kill("SIGKILL");
      await proxy.restore();
      await pgStore.cleanup();
      await proxy.close();
      await world.close();
    }
  }, 60_000);

  it("close() gives up after its timeout instead of hanging, and says so; the answer it could not record is recorded when the store is back, and the next instance follows the job to its image, sent once", async () => {
    const world = await startDWorld({ renderTimeMs: 300 });
    // Submits are answered after 400 ms, so one is in flight when the store goes away.
    world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 400 } });
    const proxy = await startTcpProxy({ host: new URL(databaseUrl!).hostname, port: Number(new URL(databaseUrl!).port || 5432) });
    const pgStore = await cliPostgresStore(databaseUrl!, { viaPort: proxy.port });
    try {
      const gate = await Mediagate.open({ env: { ...world.env, MEDIAGATE_STORE: pgStore.address } });
      const job = await gate.submit(pro("cut off"), { ref: "cut-off" });
      await until(() => world.submits() > 0, "D to receive the submit");
      await proxy.cut();
      const started = Date.now();
      expect(await gate.close({ timeoutMs: 1_500 })).toBe("timed_out");
      expect(Date.now() - started).toBeLessThan(3_000);
      // The store stays away a while after the close gave up: the answer's recording fails again, after it.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      await proxy.restore();
      const next = await Mediagate.open({ env: { ...world.env, MEDIAGATE_STORE: pgStore.address } });
      const ended = await next.wait(job.id);
      expect(await next.close()).toBe("closed");
      // The closed instance went on offering D's answer to the store while this process lived: the store
      // back, it was recorded, so the job is followed to its image (D has no idempotency: without it the
      // job would be unknown_submission, never sent again).
      expect(ended.state).toBe("succeeded");
      expect(world.submits()).toBe(1);
    } finally {
      await pgStore.cleanup();
      await proxy.close();
      await world.close();
    }
  }, 60_000);
});

describe.runIf(databaseUrl)("the Mediagate library: MEDIAGATE_STORE_POOL_SIZE", () => {
  it("with MEDIAGATE_STORE_POOL_SIZE=1 the library's engine runs 12 D jobs at once on one connection to its PostgreSQL store", async () => {
    const world = await startDWorld({ renderTimeMs: 150 });
    const pgStore = await cliPostgresStore(databaseUrl!);
    const watcher = await watchConnections(databaseUrl!, pgStore.applicationName);
    let most = Number.NaN;
    const gate = await Mediagate.open({ env: { ...world.env, MEDIAGATE_STORE: pgStore.address, MEDIAGATE_STORE_POOL_SIZE: "1" } });
    try {
      const jobs = await Promise.all(Array.from({ length: 12 }, (_, index) => gate.submit(pro(`pool ${index}`), { ref: `pool-${index}` })));
      const done = await Promise.all(jobs.map((job) => gate.wait(job.id)));
      expect(done.map((job) => job.state)).toEqual(Array(12).fill("succeeded"));
    } finally {
      await gate.close();
      most = await watcher.stop();
      await pgStore.cleanup();
      await world.close();
    }
    expect(most).toBe(1);
  }, 60_000);
});

describe("the Mediagate library: MEDIAGATE_FALLBACK_AFTER_S", () => {
  it("a routed job whose first target fails before accepting (503s) for longer than MEDIAGATE_FALLBACK_AFTER_S moves to the next target in the library's engine too", async () => {
    const emulators = createAllEmulators({ f: { renderMs: { min: 200, max: 400 } } });
    const world = await startWorld(emulators.list);
    world.sandbox.injectFault({ provider: "d", method: "POST", fault: { kind: "status", status: 503, body: { detail: "down for maintenance" } } });
    const gate = await Mediagate.open({ env: { ...world.env, MEDIAGATE_FALLBACK_AFTER_S: "1" } });
    try {
      const job = await gate.submit({ task: "image", prompt: "a red fox in snow", size: "1024x768", route: ["d/gen-2-pro", "f/img-v2"] });
      const done = await gate.wait(job.id);
      expect(done).toMatchObject({ state: "succeeded", provider: "f" });
      // The bound the job was moved by is the setting's (the library's engine kept the default, 60 s, before): said by the job.
      expect(done.route!.tried[0]!.reason).toMatch(/failing for \d+ s, longer than the fallback bound of 1 s/);
      expect(emulators.d.jobs).toHaveLength(0);
    } finally {
      await gate.close();
      await world.close();
    }
  }, 60_000);
});

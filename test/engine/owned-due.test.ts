import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createDEmulator } from "../../src/sandbox/d/index.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { OutputWriter } from "../../src/outputs/local-folder.js";
import type { Store } from "../../src/store/store.js";
import { fullDiskFor } from "../helpers/full-disk.js";
import { tempDir } from "../helpers/stores.js";
import { storedJobWhen, until } from "../helpers/until.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

// The engine loop keeps its own jobs' next due times from its own steps' writes (issue 10) instead of reading them
// back after every step, and polls a running job that comes due as its own step wrote it. What another process writes to one of its jobs without a word (a `serve` on the same
// SQLite file nudging it for a webhook: SQLite has no LISTEN/NOTIFY) must still be seen within an idle tick. Real
// sandbox D, real SQLite (two store objects on one file, as two processes), virtual time at scale 20.

const D_POLL_PATH = /^\/d-poll\//;
const D_RESULT_PATH = /^\/d-results\//;

let world: World | undefined;
const stores: Store[] = [];
let folder: { path: string; remove(): void } | undefined;
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await world?.close();
  folder?.remove();
  world = folder = undefined;
});

/**
 * An engine on one SQLite file working on a job D renders for two minutes, and a second store object on the same
 * file (another process, which tells the engine nothing); the polls D received so far.
 */
async function slowJobStarted(options: { renderTimeMs: number; outputs?: OutputWriter; idleTickMs?: number; timeScale?: number } = { renderTimeMs: 120_000 }) {
  folder = tempDir();
  const file = join(folder.path, "owned.db");
  const store = await openSqliteStore(file);
  const other = await openSqliteStore(file);
  stores.push(store, other);
  const started = await startWorld([createDEmulator({ renderTimeMs: options.renderTimeMs })], { timeScale: options.timeScale ?? 20 });
  world = started;
  const { engine, enqueue } = worldEngine(started, store, { virtualTime: true, ...(options.outputs ? { outputs: options.outputs } : {}), ...(options.idleTickMs ? { idleTickMs: options.idleTickMs } : {}) });
  const job = await enqueue({ provider: "d", model: "gen-2-pro", input: { prompt: "a slow lighthouse", width: 256, height: 256 } }, "slow");
  engine.start();
  const requests = (path: RegExp) => started.sandbox.requests().filter((request) => path.test(request.url));
  return { other, clock: started.sandbox.clock, engine, job, polls: () => requests(D_POLL_PATH), downloads: () => requests(D_RESULT_PATH) };
}

/**
 * Once the engine has polled the job and set its next poll `aheadMs` or more ahead, another process (the second store
 * object) moves that poll to `to(now)`, telling the engine nothing. Returns the engine's own due time, the polls D had
 * received by then, and when the move was made.
 */
async function moveOncePolled(started: Awaited<ReturnType<typeof slowJobStarted>>, aheadMs: number, to: (now: number) => number) {
  const { other, clock, job, polls } = started;
  const waiting = await storedJobWhen(other, job.id, (stored) => stored.state === "running" && stored.nextAttemptAt - clock.now() >= aheadMs, `a poll ${aheadMs / 1_000} s ahead`, 30_000);
  const before = polls().length;
  const movedAt = clock.now();
  expect(await other.updateJob(job.id, { state: "running" }, { nextAttemptAt: to(movedAt) }, movedAt)).not.toBeNull();
  return { waiting, before, movedAt };
}

describe("the engine's own jobs' due times", () => {
  it("a job another process moves to now without a word is polled within an idle tick (500 ms of the engine's clock), not at the due time the engine set", async () => {
    const started = await slowJobStarted();
    const { engine, polls } = started;
    try {
      const { waiting, before, movedAt } = await moveOncePolled(started, 3_000, (now) => now);
      await until(() => polls().length > before, "the moved job's poll", 10_000);
      const polledAt = polls()[before]!.at;
      expect(polledAt - movedAt).toBeLessThan(1_500);
      expect(polledAt).toBeLessThan(waiting.nextAttemptAt - 1_000);
    } finally {
      await engine.stop();
    }
  });

  it("a running job taken from it without a word (another engine's lease on the same SQLite file) is polled once more at most, and nothing is written to it", async () => {
    const { other, clock, engine, job, polls } = await slowJobStarted();
    try {
      // Polled while it renders (each poll's step writes its next due time), then taken by another engine.
      await storedJobWhen(other, job.id, (stored) => stored.state === "running" && stored.lastPendingElapsedMs !== null, "a poll found it rendering", 30_000);
      const takenAt = clock.now();
      const taken = await other.updateJob(job.id, { state: "running" }, { leaseOwner: "engine_elsewhere", leaseExpiresAt: takenAt + 600_000, nextAttemptAt: takenAt + 600_000 }, takenAt);
      expect(taken).not.toBeNull();
      const before = polls().length;
      // 30 s of the engine's clock: its own schedule would have polled the job several times (every 15% of its age).
      await clock.sleep(30_000);
      expect(polls().length - before).toBeLessThanOrEqual(1);
      const after = (await other.getJob(job.id))!;
      expect(after).toMatchObject({ state: "running", leaseOwner: "engine_elsewhere", nextAttemptAt: takenAt + 600_000, updatedAt: taken!.updatedAt });
    } finally {
      await engine.stop();
    }
  });

  it("a job another process moves to now with a word (a webhook's nudge, another process's notice) is read and polled at once, not after an idle tick", async () => {
    // An idle tick of 20 s, so that a poll only the tick's read would find comes long after the word; virtual time at
    // scale 10, so that "at once" has room on a loaded machine.
    const started = await slowJobStarted({ renderTimeMs: 120_000, idleTickMs: 20_000, timeScale: 10 });
    const { engine, polls } = started;
    try {
      // D's polls are at most 5 s apart.
      const { waiting, before, movedAt } = await moveOncePolled(started, 4_000, (now) => now);
      engine.wake();
      await until(() => polls().length > before, "the moved job's poll", 20_000);
      // Not at the due time the engine had set (what it would do without reading the store after the word).
      expect(polls()[before]!.at - movedAt).toBeLessThan((waiting.nextAttemptAt - movedAt) / 2);
    } finally {
      await engine.stop();
    }
  });

  it("a running job is polled at the due time its own step set, as that step wrote it, not read back: moved later by another process without a word, it is still polled then", async () => {
    const started = await slowJobStarted();
    const { engine, polls } = started;
    try {
      const { waiting, before } = await moveOncePolled(started, 3_000, (now) => now + 3_600_000);
      // Read back from the store (its row says an hour from now), the job would not be polled before then.
      await until(() => polls().length > before, "the job's poll at its own due time", 20_000);
      expect(polls()[before]!.at).toBeGreaterThanOrEqual(waiting.nextAttemptAt);
      expect(polls()[before]!.at).toBeLessThan(waiting.nextAttemptAt + 1_500);
    } finally {
      await engine.stop();
    }
  });

  it("a capturing job (its result refused by a full disk, saved again after 1, 2, 4 … s) taken by another engine without a word is not downloaded again by this one, nor written: only a running job is polled from memory", async () => {
    const { other, clock, engine, job, downloads } = await slowJobStarted({ renderTimeMs: 2_000, outputs: fullDiskFor(1_000) });
    try {
      const refused = await storedJobWhen(other, job.id, (stored) => stored.state === "capturing" && stored.blockedCode === "output_unwritable", "a save refused", 30_000);
      const takenAt = clock.now();
      const taken = await other.updateJob(job.id, { state: "capturing" }, { leaseOwner: "engine_elsewhere", leaseExpiresAt: takenAt + 600_000, nextAttemptAt: takenAt + 600_000 }, takenAt);
      expect(taken).not.toBeNull();
      const before = downloads().length;
      expect(before).toBe(1);
      // Past the 30 s by which this engine would have tried to save it again, several times: a download of a result is
      // never free (A), and the job is the other engine's now.
      await clock.sleep(45_000);
      expect(downloads().length).toBe(before);
      expect((await other.getJob(job.id))!).toMatchObject({ state: "capturing", leaseOwner: "engine_elsewhere", updatedAt: taken!.updatedAt });
    } finally {
      await engine.stop();
    }
  });
});

import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createDEmulator } from "../../src/sandbox/d/index.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/store.js";
import { tempDir } from "../helpers/stores.js";
import { storedJobWhen, until } from "../helpers/until.js";
import { startWorld, type World, worldEngine } from "../helpers/world.js";

// The engine loop keeps its own jobs' next due times from its own steps' writes (issue 10) instead of reading them
// back after every step, and polls a running job that comes due as its own step wrote it. What another process writes to one of its jobs without a word (a `serve` on the same
// SQLite file nudging it for a webhook: SQLite has no LISTEN/NOTIFY) must still be seen within an idle tick. Real
// sandbox D, real SQLite (two store objects on one file, as two processes), virtual time at scale 20.

const D_POLL_PATH = /^\/d-poll\//;

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
async function slowJobStarted() {
  folder = tempDir();
  const file = join(folder.path, "owned.db");
  const store = await openSqliteStore(file);
  const other = await openSqliteStore(file);
  stores.push(store, other);
  const started = await startWorld([createDEmulator({ renderTimeMs: 120_000 })], { timeScale: 20 });
  world = started;
  const { engine, enqueue } = worldEngine(started, store, { virtualTime: true });
  const job = await enqueue({ provider: "d", model: "gen-2-pro", input: { prompt: "a slow lighthouse", width: 256, height: 256 } }, "slow");
  engine.start();
  const polls = () => started.sandbox.requests().filter((request) => D_POLL_PATH.test(request.url));
  return { other, clock: started.sandbox.clock, engine, job, polls };
}

describe("the engine's own jobs' due times", () => {
  it("a job another process moves to now without a word is polled within an idle tick (500 ms of the engine's clock), not at the due time the engine set", async () => {
    const { other, clock, engine, job, polls } = await slowJobStarted();
    try {
      // Polled while it renders: once the engine has set its next poll 3 s or more ahead, another process moves it.
      const waiting = await storedJobWhen(other, job.id, (stored) => stored.state === "running" && stored.nextAttemptAt - clock.now() >= 3_000, "a poll 3 s ahead", 30_000);
      const before = polls().length;
      const movedAt = clock.now();
      expect(await other.updateJob(job.id, { state: "running" }, { nextAttemptAt: movedAt }, movedAt)).not.toBeNull();
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
});

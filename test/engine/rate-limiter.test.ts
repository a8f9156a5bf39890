import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ScaledClock } from "../../src/core/clock.js";
import { READ_STARVATION_MS, RateLimiter, type RequestKind } from "../../src/engine/rate-limiter.js";
import type { Store } from "../../src/store/store.js";
import { sqliteFactory } from "../helpers/stores.js";

// Virtual time 100× real: a 60 s window is 0.6 s of the test's time.
const SCALE = 100;

describe("rate limiter queue (real SQLite store, virtual time)", () => {
  let store: Store;
  let cleanup: () => Promise<void>;
  let clock: ScaledClock;
  let limiter: RateLimiter;

  beforeEach(async () => {
    ({ store, cleanup } = await sqliteFactory.open());
    clock = new ScaledClock(SCALE);
    limiter = new RateLimiter(store, clock);
  });
  afterEach(async () => cleanup());

  async function send(windowMs: number, limit: number, kind: RequestKind, label: string, granted: string[]): Promise<void> {
    const answered = await limiter.take([{ key: "p:account", limit, windowMs }], undefined, kind);
    granted.push(label);
    await answered();
  }

  it("when the window is full, a submit waiting for it goes before reads that queued earlier", async () => {
    const granted: string[] = [];
    await send(60_000, 2, "read", "first", granted);
    await send(60_000, 2, "read", "second", granted);
    const waiting = [send(60_000, 2, "read", "read-1", granted), send(60_000, 2, "read", "read-2", granted), send(60_000, 2, "submit", "submit", granted)];
    await Promise.all(waiting);
    expect(granted).toEqual(["first", "second", "submit", "read-1", "read-2"]);
  });

  it(`a read that has waited ${READ_STARVATION_MS / 60_000} minutes goes before submits, so a long batch never starves its reads`, async () => {
    const granted: string[] = [];
    const windowMs = READ_STARVATION_MS + 60_000;
    await send(windowMs, 1, "submit", "first", granted);
    const read = send(windowMs, 1, "read", "read", granted);
    await clock.sleep(60_000);
    const submit = send(windowMs, 1, "submit", "submit", granted);
    await Promise.all([read, submit]);
    expect(granted).toEqual(["first", "read", "submit"]);
  });

  it("no more than the limit is granted within any window, counted from each answer", async () => {
    const grantedAt: number[] = [];
    const windows = [{ key: "p:account", limit: 3, windowMs: 60_000 }];
    await Promise.all(
      Array.from({ length: 7 }, async (_, index) => {
        const answered = await limiter.take(windows, undefined, index % 2 ? "read" : "submit");
        grantedAt.push(clock.now());
        await answered();
      }),
    );
    grantedAt.sort((left, right) => left - right);
    for (let index = 3; index < grantedAt.length; index++) expect(grantedAt[index]! - grantedAt[index - 3]!).toBeGreaterThan(60_000);
  });

  it("an aborted wait rejects with the signal's reason and gives up its place", async () => {
    const granted: string[] = [];
    await send(60_000, 1, "read", "first", granted);
    const controller = new AbortController();
    const aborted = limiter.take([{ key: "p:account", limit: 1, windowMs: 60_000 }], controller.signal, "submit");
    const read = send(60_000, 1, "read", "read", granted);
    controller.abort(new Error("engine stopping"));
    await expect(aborted).rejects.toThrow("engine stopping");
    await read;
    expect(granted).toEqual(["first", "read"]);
  });
});

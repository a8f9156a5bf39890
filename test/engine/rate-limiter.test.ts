import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Clock, ScaledClock } from "../../src/core/clock.js";
import { READ_STARVATION_MS, RateLimiter, type RequestKind } from "../../src/engine/rate-limiter.js";
import type { Store } from "../../src/store/store.js";
import { sqliteFactory } from "../helpers/stores.js";
import { until } from "../helpers/until.js";

/**
 * Virtual time that jumps to the end of a sleep as soon as the event loop is
 * free: a window of minutes passes at once, and every grant happens at an
 * exact virtual time. `sleeping` counts the sleeps in progress.
 */
class SteppingClock implements Clock {
  sleeping = 0;
  /** `stepping` false: sleeps never end by themselves, only by their signal. */
  constructor(
    private at: number,
    private readonly stepping = true,
  ) {}

  now(): number {
    return this.at;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      this.sleeping++;
      const onAbort = () => {
        if (wake) clearImmediate(wake);
        this.sleeping--;
        reject(signal!.reason);
      };
      const wake = this.stepping
        ? setImmediate(() => {
            signal?.removeEventListener("abort", onAbort);
            this.sleeping--;
            this.at += ms;
            resolve();
          })
        : undefined;
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

describe("rate limiter timing (real SQLite store, stepping virtual time)", () => {
  const T0 = 1_800_000_000_000;
  let store: Store;
  let cleanup: () => Promise<void>;
  let clock: SteppingClock;
  let limiter: RateLimiter;

  beforeEach(async () => {
    ({ store, cleanup } = await sqliteFactory.open());
    clock = new SteppingClock(T0);
    limiter = new RateLimiter(store, clock);
  });
  afterEach(async () => cleanup());

  /** Takes a token, notes when it was granted, and answers at once. */
  async function request(windows: Array<{ key: string; limit: number; windowMs: number }>, kind: RequestKind, label: string, log: Array<[string, number]>) {
    const answered = await limiter.take(windows, undefined, kind);
    log.push([label, clock.now() - T0]);
    await answered();
  }

  it("a request counts in the window until a full window plus one second after its answer (arrival and clock margin)", async () => {
    const window = [{ key: "p:account", limit: 2, windowMs: 60_000 }];
    const log: Array<[string, number]> = [];
    await Promise.all(["a", "b", "c", "d", "e"].map((label) => request(window, "submit", label, log)));
    expect(log).toEqual([
      ["a", 0],
      ["b", 0],
      ["c", 61_001],
      ["d", 61_001],
      ["e", 122_002],
    ]);
  });

  it("requests limited by different windows do not wait for each other", async () => {
    const log: Array<[string, number]> = [];
    await request([{ key: "c:account", limit: 1, windowMs: 60_000 }], "submit", "c-1", log);
    const waiting = request([{ key: "c:account", limit: 1, windowMs: 60_000 }], "submit", "c-2", log);
    await request([{ key: "d:account", limit: 1, windowMs: 60_000 }], "submit", "d-1", log);
    await waiting;
    expect(log).toEqual([
      ["c-1", 0],
      ["d-1", 0],
      ["c-2", 61_001],
    ]);
  });

  it("every window of a request must have room: the fullest one decides when it goes", async () => {
    const windows = [
      { key: "a:minute", limit: 1, windowMs: 60_000 },
      { key: "a:hour", limit: 1, windowMs: 3_600_000 },
    ];
    const log: Array<[string, number]> = [];
    await Promise.all(["first", "second"].map((label) => request(windows, "read", label, log)));
    expect(log).toEqual([
      ["first", 0],
      ["second", 3_601_001],
    ]);
  });

  it("without rate windows a request goes at once", async () => {
    const answered = await limiter.take([], undefined, "submit");
    await answered();
    expect(clock.now()).toBe(T0);
  });

  it("a request whose signal is already aborted is refused at once and takes no place in the window", async () => {
    const window = [{ key: "p:account", limit: 1, windowMs: 60_000 }];
    await expect(limiter.take(window, AbortSignal.abort(new Error("engine stopping")), "submit")).rejects.toThrow("engine stopping");
    const log: Array<[string, number]> = [];
    await request(window, "submit", "next", log);
    expect(log).toEqual([["next", 0]]);
  });

  it("when nobody waits any more, the limiter stops sleeping (no timer outlives the engine)", async () => {
    const window = [{ key: "p:account", limit: 1, windowMs: 60_000 }];
    clock = new SteppingClock(T0, false);
    limiter = new RateLimiter(store, clock);
    await request(window, "submit", "first", []);
    const controller = new AbortController();
    const waiting = limiter.take(window, controller.signal, "submit");
    await until(() => clock.sleeping === 1, "the limiter to sleep until the window opens");
    controller.abort(new Error("engine stopping"));
    expect(clock.sleeping).toBe(0);
    await expect(waiting).rejects.toThrow("engine stopping");
    expect(clock.now()).toBe(T0);
  });

  it("a request abandoned while the store grants it gives the grant back as answered at once", async () => {
    const window = [{ key: "p:account", limit: 1, windowMs: 60_000 }];
    const controller = new AbortController();
    const abandoned = limiter.take(window, controller.signal, "submit");
    controller.abort(new Error("engine stopping"));
    await expect(abandoned).rejects.toThrow("engine stopping");
    // Let the store's answer reach the limiter before the next request queues.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    const log: Array<[string, number]> = [];
    await request(window, "submit", "next", log);
    expect(log).toEqual([["next", 61_001]]);
  });

  it("a request leaves no listener on its signal, granted or aborted (hundreds of waits share the engine's)", async () => {
    const window = [{ key: "p:account", limit: 1, windowMs: 60_000 }];
    const controller = new AbortController();
    const answered = await limiter.take(window, controller.signal, "submit");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    await answered();
    const aborting = new AbortController();
    const waiting = limiter.take(window, aborting.signal, "submit");
    expect(getEventListeners(aborting.signal, "abort")).toHaveLength(1);
    aborting.abort(new Error("engine stopping"));
    await expect(waiting).rejects.toThrow("engine stopping");
    expect(getEventListeners(aborting.signal, "abort")).toHaveLength(0);
  });

  it("when the store fails, every waiting request hears its error", async () => {
    const window = [{ key: "p:account", limit: 1, windowMs: 60_000 }];
    const { store: closing, cleanup: remove } = await sqliteFactory.open();
    await closing.close();
    const failing = new RateLimiter(closing, clock);
    const outcomes = await Promise.allSettled([failing.take(window, undefined, "submit"), failing.take(window, undefined, "read")]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["rejected", "rejected"]);
    await remove().catch(() => {});
  });

  it(`a read that has waited exactly ${READ_STARVATION_MS / 1_000} s goes before a submit; one that has waited a millisecond less does not`, async () => {
    // The window opens windowMs + 1,000 + 1 ms after the first request's answer, when the read has waited that long.
    for (const [windowMs, expected] of [
      [READ_STARVATION_MS - 1_001, ["read", "submit"]],
      [READ_STARVATION_MS - 1_002, ["submit", "read"]],
    ] as const) {
      const window = [{ key: `p:${windowMs}`, limit: 1, windowMs }];
      await request(window, "submit", "first", []);
      const log: Array<[string, number]> = [];
      await Promise.all([request(window, "read", "read", log), request(window, "submit", "submit", log)]);
      expect(log.map(([label]) => label)).toEqual(expected);
    }
  });

  it("among waiting submits, and among waiting reads, the oldest goes first", async () => {
    // Short enough that no read waits long enough to go before the submits.
    const window = [{ key: "p:account", limit: 1, windowMs: 10_000 }];
    await request(window, "submit", "first", []);
    const log: Array<[string, number]> = [];
    const unlabelled = async (label: string) => {
      // A request that does not say what it is for is a read.
      const answered = await limiter.take(window);
      log.push([label, clock.now() - T0]);
      await answered();
    };
    await Promise.all([
      request(window, "read", "read-1", log),
      request(window, "submit", "submit-1", log),
      unlabelled("read-2"),
      request(window, "submit", "submit-2", log),
    ]);
    expect(log.map(([label]) => label)).toEqual(["submit-1", "submit-2", "read-1", "read-2"]);
  });
});

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

import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ScaledClock, systemClock } from "../../src/core/clock.js";

// The clocks themselves are under test here, so real time is replaced by vitest's fake timers.
beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

async function settled(promise: Promise<void>): Promise<"resolved" | "pending" | { rejected: unknown }> {
  let state: "resolved" | "pending" | { rejected: unknown } = "pending";
  promise.then(
    () => (state = "resolved"),
    (reason: unknown) => (state = { rejected: reason }),
  );
  await Promise.resolve();
  await Promise.resolve();
  return state;
}

describe("the system clock", () => {
  it("reads the real time", () => {
    expect(systemClock.now()).toBe(1_000_000);
    vi.advanceTimersByTime(250);
    expect(systemClock.now()).toBe(1_000_250);
  });

  it("sleeps the time asked, no less", async () => {
    const sleep = systemClock.sleep(100);
    vi.advanceTimersByTime(99);
    expect(await settled(sleep)).toBe("pending");
    vi.advanceTimersByTime(1);
    expect(await settled(sleep)).toBe("resolved");
  });

  it("a sleep whose signal is already aborted rejects at once with the signal's reason", async () => {
    const reason = new Error("engine stopping");
    await expect(systemClock.sleep(10_000, AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it("aborting a sleep rejects it with the signal's reason and leaves no timer or listener behind", async () => {
    const controller = new AbortController();
    const sleep = systemClock.sleep(10_000, controller.signal);
    const reason = new Error("engine stopping");
    controller.abort(reason);
    await expect(sleep).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("a sleep that ends normally stops listening to its signal (hundreds of waits share the engine's)", async () => {
    const controller = new AbortController();
    const sleeps = [systemClock.sleep(10, controller.signal), systemClock.sleep(20, controller.signal)];
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(2);
    vi.advanceTimersByTime(20);
    await Promise.all(sleeps);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("the scaled clock (the sandbox's fast virtual time)", () => {
  it("starts at the given time and runs scale times faster than real time", () => {
    const clock = new ScaledClock(60, 5_000);
    expect(clock.now()).toBe(5_000);
    vi.advanceTimersByTime(1_000);
    expect(clock.now()).toBe(65_000);
  });

  it("starts at the real time when no start is given", () => {
    const clock = new ScaledClock(10);
    expect(clock.now()).toBe(1_000_000);
    vi.advanceTimersByTime(3);
    expect(clock.now()).toBe(1_000_030);
  });

  it("reads whole milliseconds, rounded down, when it runs slower than real time", () => {
    const clock = new ScaledClock(0.5, 0);
    vi.advanceTimersByTime(3);
    expect(clock.now()).toBe(1);
  });

  it("advance jumps virtual time forward (a seven-day window crossed at once)", () => {
    const clock = new ScaledClock(100, 0);
    clock.advance(7 * 24 * 3_600_000);
    clock.advance(1);
    expect(clock.now()).toBe(7 * 24 * 3_600_000 + 1);
  });

  it("a sleep of virtual time takes that time divided by the scale", async () => {
    const clock = new ScaledClock(100, 0);
    const sleep = clock.sleep(60_000);
    vi.advanceTimersByTime(599);
    expect(await settled(sleep)).toBe("pending");
    vi.advanceTimersByTime(1);
    expect(await settled(sleep)).toBe("resolved");
  });

  it("a scaled sleep ends only once its clock's time has passed, even when its timer ends before the wall clock's millisecond ticks over", async () => {
    // At a scale of 1,000 a real millisecond is 1,000 of the clock's: a timer that fired while Date.now() still read
    // the millisecond before left a 2,000 ms sleep with 1,000 ms passed (the sandbox's clock test saw it in CI).
    const clock = new ScaledClock(1_000, 0);
    const before = clock.now();
    const sleep = clock.sleep(2_000);
    vi.setSystemTime(Date.now() - 1);
    vi.advanceTimersByTime(2);
    expect(clock.now() - before).toBe(1_000);
    expect(await settled(sleep)).toBe("pending");
    vi.advanceTimersByTime(1);
    expect(await settled(sleep)).toBe("resolved");
    expect(clock.now() - before).toBeGreaterThanOrEqual(2_000);
  });

  it("a scaled sleep can be aborted like a real one", async () => {
    const controller = new AbortController();
    const sleep = new ScaledClock(100, 0).sleep(60_000, controller.signal);
    controller.abort("stop");
    await expect(sleep).rejects.toBe("stop");
  });

  it("a scale that is not positive is refused, naming the value", () => {
    for (const scale of [0, -1, Number.NaN]) expect(() => new ScaledClock(scale)).toThrow(new RangeError(`time scale must be > 0, got ${scale}`));
    expect(new ScaledClock(Number.MIN_VALUE).scale).toBe(Number.MIN_VALUE);
  });
});

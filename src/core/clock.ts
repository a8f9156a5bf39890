/** Time is injected everywhere so that ten-minute and seven-day rules run in milliseconds in tests. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Resolves after `ms` of this clock's time, or rejects with the signal's
   * reason when aborted. With `unref`, the wait does not keep the process
   * alive (work left running after a close that gave up).
   */
  sleep(ms: number, signal?: AbortSignal, options?: SleepOptions): Promise<void>;
}

export interface SleepOptions {
  unref?: boolean;
}

/**
 * The reason a sleep's owner ends it early with (a nap woken, a wait no
 * longer needed), where nobody reads the reason. `abort()` without one builds
 * a DOMException, its stack trace included, on every call: the engine's loop
 * ends a nap a few times a job, and in a profiled 200-job batch that was
 * 36 ms of the 2.4 s the engine spent after its first submit.
 */
export const SLEEP_ENDED: Error = new Error("sleep ended early by its owner");

function realSleep(ms: number, signal?: AbortSignal, options?: SleepOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    if (options?.unref) timer.unref();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: realSleep,
};

/**
 * A clock that runs `scale` times faster than real time, starting from the real
 * time at creation (or `startAt`). The sandbox uses it so that a ten-minute URL
 * lifetime or a seven-day lookup window can be crossed in seconds.
 */
export class ScaledClock implements Clock {
  private readonly realStart: number;
  private readonly virtualStart: number;
  private offsetMs = 0;

  constructor(
    readonly scale: number,
    startAt: number = Date.now(),
  ) {
    if (!(scale > 0)) throw new RangeError(`time scale must be > 0, got ${scale}`);
    this.realStart = Date.now();
    this.virtualStart = startAt;
  }

  now(): number {
    return Math.floor(this.virtualStart + (Date.now() - this.realStart) * this.scale + this.offsetMs);
  }

  /** Jumps virtual time forward (tests use it to cross a seven-day window at once). */
  advance(ms: number): void {
    this.offsetMs += ms;
  }

  async sleep(ms: number, signal?: AbortSignal, options?: SleepOptions): Promise<void> {
    const until = this.now() + ms;
    await realSleep(ms / this.scale, signal, options);
    // Date.now() counts whole milliseconds, and a timer can end before the last one it waited for has ticked over: at a
    // scale of 1,000 that left a 2,000 ms sleep with 1,000 ms of this clock passed. It sleeps on until its time is reached.
    for (let left = until - this.now(); left > 0; left = until - this.now()) await realSleep(left / this.scale, signal, options);
  }
}

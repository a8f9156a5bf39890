import type { ScaledClock } from "../../core/clock.js";

/**
 * Callbacks due at a virtual time. A real timer waits (due − now) / scale,
 * but never more than MAX_REAL_WAIT_MS, so a `clock.advance()` jump is
 * noticed within that time; `runDue()` can also be called at any moment
 * (every B request does). `close()` stops everything.
 */
const MAX_REAL_WAIT_MS = 25;

interface Task {
  dueAt: number;
  run: () => void;
}

export class VirtualTimers {
  private tasks: Task[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly clock: ScaledClock) {}

  at(dueAt: number, run: () => void): void {
    if (this.closed) return;
    this.tasks.push({ dueAt, run });
    this.tasks.sort((first, second) => first.dueAt - second.dueAt);
    this.arm();
  }

  get pending(): number {
    return this.tasks.length;
  }

  runDue(): void {
    if (this.closed) return;
    const now = this.clock.now();
    while (this.tasks.length > 0 && this.tasks[0]!.dueAt <= now) this.tasks.shift()!.run();
    this.arm();
  }

  close(): void {
    this.closed = true;
    this.tasks = [];
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const next = this.tasks[0];
    if (this.closed || !next) return;
    const realWait = Math.max(0, (next.dueAt - this.clock.now()) / this.clock.scale);
    this.timer = setTimeout(() => this.runDue(), Math.min(realWait, MAX_REAL_WAIT_MS));
    this.timer.unref();
  }
}

/** What each emulator's `sandboxStats()` derives its counts with. */

/** A task's unfinished time: from `start` (included) to `end` (excluded), virtual ms. */
export interface BusySpan {
  start: number;
  end: number;
}

/**
 * The most spans open at one moment. Derived from the tasks' own times, so an
 * emulator need not count at each submit, and a `clock.advance()` or a reset
 * needs nothing more. A span that ends as it starts (render time 0) still
 * counts for its one millisecond, as the submit that created it was one task
 * in flight.
 */
export function peakConcurrency(spans: Iterable<BusySpan>): number {
  const changes: [at: number, delta: number][] = [];
  for (const span of spans) {
    changes.push([span.start, 1], [Math.max(span.end, span.start + 1), -1]);
  }
  // An end and a start at the same moment do not overlap (the slot is free again), so ends go first.
  changes.sort((first, second) => first[0] - second[0] || first[1] - second[1]);
  let open = 0;
  let peak = 0;
  for (const [, delta] of changes) {
    open += delta;
    peak = Math.max(peak, open);
  }
  return peak;
}

/** Counts of each value, for "tasks by state". */
export function countBy<T>(items: Iterable<T>, keyOf: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) {
    const key = keyOf(item);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

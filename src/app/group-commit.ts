/**
 * Requests that arrive while a write is under way, or in the same turn of
 * the event loop, are written together by the next one: a group commit. Fifty clients posting jobs at once then cost
 * a few transactions, not fifty (a transaction's commit was a fifth of the
 * API's CPU, measured by `bench/intake.ts`), and no request waits longer
 * than the write in flight plus its own. `flush` decides each item on its
 * own, in order, inside its one transaction, and answers one outcome per
 * item; it throws only when the transaction as a whole failed, and then
 * every item of the group gets that error.
 */
export class GroupCommit<Item, Outcome> {
  private readonly waiting: Array<{ item: Item; resolve: (outcome: Outcome) => void; reject: (error: unknown) => void }> = [];
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly flush: (items: Item[]) => Promise<Outcome[]>,
    private readonly options: {
      /** Writes under way at once: 1 where the store takes one writer (SQLite); a few where it takes more (a PostgreSQL pool). */
      concurrency: number;
      /** The most items one write takes (a bounded transaction). */
      maxGroup: number;
    },
  ) {}

  submit(item: Item): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /**
   * A write starts once the requests that arrived with this one have been
   * read: after the current turn of the event loop (setImmediate), not at
   * once. An embedded store (SQLite) answers within the turn, so a write
   * started at once would always hold one request, and every request would
   * pay a commit of its own.
   */
  private schedule(): void {
    if (this.scheduled || this.running >= this.options.concurrency) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running++;
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting.splice(0, this.options.maxGroup);
        try {
          const outcomes = await this.flush(group.map((entry) => entry.item));
          group.forEach((entry, index) => entry.resolve(outcomes[index]!));
        } catch (error) {
          for (const entry of group) entry.reject(error);
        }
      }
    } finally {
      this.running--;
      // Requests that arrived while this write ended find the next one scheduled.
      if (this.waiting.length > 0) this.schedule();
    }
  }
}

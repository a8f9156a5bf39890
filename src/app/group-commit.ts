/**
 * Requests that arrive while a write is under way are written together by
 * the next one: a group commit. Fifty clients posting jobs at once then cost
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
      if (this.running < this.options.concurrency) void this.drain();
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
    }
  }
}

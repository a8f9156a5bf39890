import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../src/app/group-commit.js";

/** A write that holds until released, recording the groups it was given. */
function heldWrites() {
  const groups: number[][] = [];
  const releases: Array<() => void> = [];
  const flush = async (items: number[]) => {
    groups.push(items);
    await new Promise<void>((resolve) => releases.push(resolve));
    return items.map((item) => item * 10);
  };
  return { groups, releases, flush };
}

/** One turn of the event loop, and the promises it settles. */
async function turn(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  for (let step = 0; step < 5; step++) await Promise.resolve();
}

describe("group commit (intake's writes)", () => {
  it("requests of one turn of the event loop are written together after it; those arriving during that write go together in the next, each answered with its own outcome", async () => {
    const writes = heldWrites();
    const commit = new GroupCommit(writes.flush, { concurrency: 1, maxGroup: 100 });
    const first = [1, 2].map((item) => commit.submit(item));
    expect(writes.groups).toEqual([]);
    await turn();
    const rest = [3, 4, 5].map((item) => commit.submit(item));
    await turn();
    expect(writes.groups).toEqual([[1, 2]]);
    writes.releases.shift()!();
    expect(await Promise.all(first)).toEqual([10, 20]);
    await turn();
    expect(writes.groups).toEqual([[1, 2], [3, 4, 5]]);
    writes.releases.shift()!();
    expect(await Promise.all(rest)).toEqual([30, 40, 50]);
  });

  it("a write that answers within the turn (an embedded store) still groups the requests of that turn", async () => {
    const groups: number[][] = [];
    const commit = new GroupCommit(async (items: number[]) => (groups.push(items), items), { concurrency: 1, maxGroup: 100 });
    const answers = await Promise.all([1, 2, 3].map((item) => commit.submit(item)));
    expect(answers).toEqual([1, 2, 3]);
    expect(groups).toEqual([[1, 2, 3]]);
  });

  it("a group is at most maxGroup items; with concurrency 2 a second write starts while the first is under way", async () => {
    const writes = heldWrites();
    const commit = new GroupCommit(writes.flush, { concurrency: 2, maxGroup: 2 });
    const answers = [1, 2, 3].map((item) => commit.submit(item));
    await turn();
    expect(writes.groups).toEqual([[1, 2]]);
    const later = [4, 5].map((item) => commit.submit(item));
    await turn();
    expect(writes.groups).toEqual([[1, 2], [3, 4]]);
    while (writes.releases.length > 0) {
      writes.releases.shift()!();
      await turn();
    }
    expect(await Promise.all([...answers, ...later])).toEqual([10, 20, 30, 40, 50]);
    expect(writes.groups).toEqual([[1, 2], [3, 4], [5]]);
  });

  it("a write that fails as a whole fails every request of its group, and the next group is written", async () => {
    let calls = 0;
    const commit = new GroupCommit(
      async (items: number[]) => {
        calls++;
        if (items.includes(2)) throw new Error("the store went away");
        return items;
      },
      { concurrency: 1, maxGroup: 2 },
    );
    const answers = [1, 2, 3, 4, 5].map((item) => commit.submit(item).then((value) => ({ value }), (error: Error) => ({ error: error.message })));
    expect(await Promise.all(answers)).toEqual([{ error: "the store went away" }, { error: "the store went away" }, { value: 3 }, { value: 4 }, { value: 5 }]);
    expect(calls).toBe(3);
  });
});

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

async function settle(): Promise<void> {
  for (let turn = 0; turn < 5; turn++) await Promise.resolve();
}

describe("group commit (intake's writes)", () => {
  it("the first request is written at once; those arriving while it is written go together in the next write, each answered with its own outcome", async () => {
    const writes = heldWrites();
    const commit = new GroupCommit(writes.flush, { concurrency: 1, maxGroup: 100 });
    const first = commit.submit(1);
    await settle();
    const rest = [2, 3, 4].map((item) => commit.submit(item));
    await settle();
    expect(writes.groups).toEqual([[1]]);
    writes.releases.shift()!();
    expect(await first).toBe(10);
    await settle();
    expect(writes.groups).toEqual([[1], [2, 3, 4]]);
    writes.releases.shift()!();
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
  });

  it("a group is at most maxGroup items; with concurrency 2 two writes run at once", async () => {
    const writes = heldWrites();
    const commit = new GroupCommit(writes.flush, { concurrency: 2, maxGroup: 2 });
    const answers = [1, 2, 3, 4, 5].map((item) => commit.submit(item));
    await settle();
    expect(writes.groups).toEqual([[1], [2]]);
    writes.releases.shift()!();
    writes.releases.shift()!();
    await settle();
    expect(writes.groups).toEqual([[1], [2], [3, 4], [5]]);
    while (writes.releases.length > 0) {
      writes.releases.shift()!();
      await settle();
    }
    expect(await Promise.all(answers)).toEqual([10, 20, 30, 40, 50]);
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
    expect(await Promise.all(answers)).toEqual([{ value: 1 }, { error: "the store went away" }, { error: "the store went away" }, { value: 4 }, { value: 5 }]);
    expect(calls).toBe(3);
  });
});

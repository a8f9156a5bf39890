import { afterEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/core/job.js";
import { observingJobWrites } from "../../src/engine/job-writes.js";
import type { Store } from "../../src/store/store.js";
import { newDJob, storeFactories } from "../helpers/stores.js";

// The store an engine's steps write through (issue 10): the same store, and each job updateJob or transition wrote
// handed to the engine as written, so the loop knows its jobs' due times without reading them back. Real stores.

const T0 = 1_000_000;

describe.each(storeFactories)("observingJobWrites ($name)", (factory) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  async function observed(): Promise<{ store: Store; seen: Job[]; observing: Store }> {
    const opened = await factory.open();
    cleanup = opened.cleanup;
    const seen: Job[] = [];
    return { store: opened.store, seen, observing: observingJobWrites(opened.store, (job) => seen.push(job)) };
  }

  it("hands on each job updateJob and transition wrote, as written, and returns it unchanged", async () => {
    const { store, seen, observing } = await observed();
    const job = (await store.insertJobs([newDJob("watched")], T0))[0]!.job;
    const updated = await observing.updateJob(job.id, { state: "queued" }, { nextAttemptAt: T0 + 5_000, reason: "later" }, T0 + 1);
    expect(updated).toMatchObject({ id: job.id, nextAttemptAt: T0 + 5_000 });
    const moved = await observing.transition(job.id, { state: "queued" }, "cancelled", { reason: "not wanted" }, "not wanted", T0 + 2);
    expect(moved).toMatchObject({ state: "cancelled" });
    expect(seen).toEqual([updated, moved]);
  });

  it("hands on nothing for a write whose expectation failed (null), nor for reads and other writes", async () => {
    const { store, seen, observing } = await observed();
    const job = (await store.insertJobs([newDJob("untouched")], T0))[0]!.job;
    expect(await observing.updateJob(job.id, { state: "running" }, { nextAttemptAt: T0 }, T0 + 1)).toBeNull();
    expect(await observing.transition(job.id, { state: "running" }, "capturing", {}, "no", T0 + 1)).toBeNull();
    expect(await observing.getJob(job.id)).toMatchObject({ id: job.id, state: "queued" });
    expect(await observing.events(job.id)).toHaveLength(1);
    await observing.insertJobs([newDJob("another")], T0 + 2);
    expect(seen).toEqual([]);
  });

  it("reads what is not a method through (the store's count of slots released)", async () => {
    const { store, observing } = await observed();
    expect(observing.slotReleases).toBe(store.slotReleases);
    const job = (await store.insertJobs([newDJob("held")], T0))[0]!.job;
    await store.releaseSlots(job.id, T0 + 1);
    expect(observing.slotReleases).toBe(store.slotReleases);
    expect(observing.slotReleases).toBeGreaterThan(0);
  });
});

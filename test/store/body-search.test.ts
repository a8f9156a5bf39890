import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { newDJob, storeFactories } from "../helpers/stores.js";

/**
 * The dashboard's search by prompt text, in the store (issue 37, part 4): a
 * bounded scan of the newest jobs' requests, one tenant's only when given,
 * newest first and a page at a time; the text is matched literally.
 */

const ids = (jobs: ReadonlyArray<{ id: string }>) => jobs.map((job) => job.id);

for (const { name, open } of storeFactories) {
  describe(`searchRecentBodies (${name})`, () => {
    let opened: { store: Store; cleanup(): Promise<void> };
    beforeEach(async () => {
      opened = await open();
    });
    afterEach(async () => opened.cleanup());

    it("finds the text in the newest jobs' requests, ASCII letters of either case, newest first, a page at a time after a cursor", async () => {
      const { store } = opened;
      for (const [index, prompt] of ["A Lighthouse at dusk", "a harbour", "LIGHTHOUSE keeper", "lighthouses"].entries()) {
        await store.insertJobs([newDJob(`j${index}`, { body: { prompt } })], 1_000 + index);
      }
      const first = await store.searchRecentBodies({ text: "lightHouse", window: 100, limit: 2 });
      expect(ids(first)).toEqual(["job_j3", "job_j2"]);
      const next = await store.searchRecentBodies({ text: "lightHouse", window: 100, limit: 2, olderThan: { createdAt: first[1]!.createdAt, id: first[1]!.id } });
      expect(ids(next)).toEqual(["job_j0"]);
    });

    it("reads only the newest `window` jobs: an older match is not found (the bound that keeps a search flat in the store's size)", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("old", { body: { prompt: "a red kite" } })], 1_000);
      await store.insertJobs(Array.from({ length: 5 }, (_, index) => newDJob(`new${index}`, { body: { prompt: "a boat" } })), 2_000);
      expect(await store.searchRecentBodies({ text: "kite", window: 5, limit: 10 })).toEqual([]);
      expect(ids(await store.searchRecentBodies({ text: "kite", window: 6, limit: 10 }))).toEqual(["job_old"]);
    });

    it("a tenant's search reads that tenant's jobs only, and its window counts its own jobs", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("mine", { tokenId: "tok_a", body: { prompt: "a kite" } })], 1_000);
      await store.insertJobs(Array.from({ length: 3 }, (_, index) => newDJob(`theirs${index}`, { tokenId: "tok_b", body: { prompt: "a kite" } })), 2_000);
      expect(ids(await store.searchRecentBodies({ text: "kite", tenant: "tok_a", window: 1, limit: 10 }))).toEqual(["job_mine"]);
      expect(await store.searchRecentBodies({ text: "kite", tenant: "tok_c", window: 10, limit: 10 })).toEqual([]);
    });

    it("the text is literal: % and _ match only themselves, and quotes and backslashes match as written in the prompt", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("pct", { body: { prompt: "100% cotton_shirt" } }), newDJob("plain", { body: { prompt: "100 cottonXshirt" } }), newDJob("quote", { body: { prompt: 'say "hi" \\ bye' } })], 1_000);
      expect(ids(await store.searchRecentBodies({ text: "0% cotton_", window: 10, limit: 10 }))).toEqual(["job_pct"]);
      expect(ids(await store.searchRecentBodies({ text: '"hi" \\ b', window: 10, limit: 10 }))).toEqual(["job_quote"]);
    });
  });
}

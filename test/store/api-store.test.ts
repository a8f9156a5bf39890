import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { freshStoreEachTest, newDJob, storeFactories } from "../helpers/stores.js";

const T0 = 1_800_000_000_000;

for (const factory of storeFactories) {
  describe(`what the API reads and writes in the store (${factory.name})`, () => {
    let store: Store;
    freshStoreEachTest(factory, (opened) => (store = opened));

    it("tokens: stored by the secret's sha256 with their rights and budget, found by it, revoked by name or id, names unique; hasActiveTokens ignores revoked ones", async () => {
      expect(await store.hasActiveTokens()).toBe(false);
      const token = { id: "tok_a", name: "alice", secretSha256: "a".repeat(64), admin: false, readOnly: true, budgetId: "token:tok_a", createdAt: T0, revokedAt: null, weight: 1 };
      expect(await store.createToken(token)).toEqual(token);
      expect(await store.createToken({ ...token, id: "tok_b", secretSha256: "b".repeat(64) })).toBeNull();
      expect(await store.tokenBySecretSha256("a".repeat(64))).toEqual(token);
      expect(await store.tokenBySecretSha256("c".repeat(64))).toBeNull();
      expect(await store.hasActiveTokens()).toBe(true);
      expect((await store.revokeToken("alice", T0 + 5))!.revokedAt).toBe(T0 + 5);
      // Revoked again (by id): it keeps the first time.
      expect((await store.revokeToken("tok_a", T0 + 9))!.revokedAt).toBe(T0 + 5);
      expect(await store.revokeToken("nobody", T0)).toBeNull();
      expect(await store.hasActiveTokens()).toBe(false);
      expect(await store.tokens()).toHaveLength(1);
    });

    it("listJobs newest first by a cursor (older than the last one seen), one tenant's, one ref, a time window", async () => {
      const jobs = [];
      for (let index = 0; index < 5; index++) jobs.push(newDJob(`j${index}`, { tokenId: index % 2 === 0 ? "tok_a" : "tok_b", notifyUrl: index === 0 ? "https://hooks.example/done" : null }));
      for (const [index, job] of jobs.entries()) await store.insertJobs([job], T0 + index * 1_000);
      // Two in the same millisecond: the id breaks the tie, so the cursor still moves on.
      await store.insertJobs([newDJob("j5", { id: "job_j5a" }), newDJob("j6", { id: "job_j5b" })], T0 + 4_000);
      const all = await store.listJobs({ newestFirst: true });
      expect(all.map((job) => job.ref)).toEqual(["j6", "j5", "j4", "j3", "j2", "j1", "j0"]);
      const after = await store.listJobs({ newestFirst: true, olderThan: { createdAt: all[1]!.createdAt, id: all[1]!.id }, limit: 2 });
      expect(after.map((job) => job.ref)).toEqual(["j4", "j3"]);
      expect((await store.listJobs({ newestFirst: true, tenant: "tok_a" })).map((job) => job.ref)).toEqual(["j4", "j2", "j0"]);
      expect((await store.listJobs({ ref: "j3" })).map((job) => job.tokenId)).toEqual(["tok_b"]);
      expect((await store.listJobs({ createdAfter: T0 + 1_000, createdBefore: T0 + 3_000 })).map((job) => job.ref)).toEqual(["j1", "j2"]);
      expect((await store.getJob("job_j0"))!.notifyUrl).toBe("https://hooks.example/done");
    });

    it("insertJobs: the same refs inserted by several callers at once (two API clients) are created once; every other caller gets the stored job, not an error", async () => {
      const tries = Array.from({ length: 6 }, (_, index) => store.insertJobs([newDJob("same", { id: `job_same_${index}` }), newDJob(`own-${index}`), newDJob("also-same", { id: `job_also_${index}` })], T0 + index));
      const results = await Promise.all(tries);
      for (const ref of ["same", "also-same"]) {
        const answers = results.map((result) => result.find((each) => each.job.ref === ref)!);
        expect(answers.filter((answer) => answer.created)).toHaveLength(1);
        expect(new Set(answers.map((answer) => answer.job.id)).size).toBe(1);
      }
      expect(results.every((result) => result.find((each) => each.job.ref.startsWith("own-"))!.created)).toBe(true);
      expect(await store.listJobs({})).toHaveLength(8);
      const [same] = await store.jobsByRefs("local", ["same"]);
      expect(await store.events(same!.id)).toHaveLength(1);
    });

    it("listJobs by refPrefix: every ref starting with it and no other, character for character (case kept; % and _ are plain characters; accents and characters beyond U+FFFF too), with the other filters and the cursor", async () => {
      const refs = ["batch-7", "batch-7-001", "batch-7-002", "batch-70", "batch-8-001", "Batch-7-x", "batch_7-x", "batch-6z", "50%-off", "500", "a_b", "axb", "café-1", "cafe-1", "cafés", "x😀1", "x😀", "x\uffff", "x\u{10ffff}\u{10ffff}", "x\u{10ffff}", "y"];
      await store.insertJobs(
        refs.map((ref, index) => newDJob(ref, { id: `job_${index}`, tokenId: ref.endsWith("-002") ? "tok_b" : "tok_a" })),
        T0,
      );
      const found = async (refPrefix: string, more: Partial<Parameters<Store["listJobs"]>[0]> = {}) => (await store.listJobs({ refPrefix, ...more })).map((job) => job.ref).sort();
      expect(await found("batch-7")).toEqual(["batch-7", "batch-7-001", "batch-7-002", "batch-70"]);
      expect(await found("batch-7-")).toEqual(["batch-7-001", "batch-7-002"]);
      expect(await found("batch-7-001")).toEqual(["batch-7-001"]);
      expect(await found("batch-7-0010")).toEqual([]);
      expect(await found("50%")).toEqual(["50%-off"]);
      expect(await found("a_")).toEqual(["a_b"]);
      expect(await found("café")).toEqual(["café-1", "cafés"]);
      expect(await found("x😀")).toEqual(["x😀", "x😀1"].sort());
      expect(await found("x")).toEqual(["x\u{10ffff}", "x\u{10ffff}\u{10ffff}", "x\uffff", "x😀", "x😀1"].sort());
      expect(await found("x\u{10ffff}")).toEqual(["x\u{10ffff}", "x\u{10ffff}\u{10ffff}"].sort());
      expect(await found("batch-7", { tenant: "tok_a" })).toEqual(["batch-7", "batch-7-001", "batch-70"]);
      const firstPage = await store.listJobs({ refPrefix: "batch-", newestFirst: true, limit: 3 });
      const rest = await store.listJobs({ refPrefix: "batch-", newestFirst: true, olderThan: { createdAt: firstPage.at(-1)!.createdAt, id: firstPage.at(-1)!.id } });
      expect([...firstPage, ...rest].map((job) => job.ref).sort()).toEqual(["batch-6z", "batch-7", "batch-7-001", "batch-7-002", "batch-70", "batch-8-001"]);
    });

    it("outputsOfJobs reads the outputs of a page of jobs at once, by job, in index order; a job with none is absent", async () => {
      await store.insertJobs([newDJob("o1"), newDJob("o2"), newDJob("o3")], T0);
      const output = (index: number) => ({ index, path: `/tmp/o-${index}.png`, url: "https://d.example/r", contentType: "image/png", bytes: 10 + index, sha256: `${index}`.repeat(64), metadata: {}, media: { width: 64, height: 64 } });
      for (const id of ["job_o1", "job_o3"]) {
        await store.claimForSubmit(id, "mg:test:1:a", [{ key: "d:account", capacity: 24 }], T0 + 1, 60_000);
        await store.transition(id, { state: "submitting" }, "running", { providerJobId: `p-${id}` }, "accepted", T0 + 2);
        await store.transition(id, { state: "running" }, "capturing", {}, "done", T0 + 3);
        await store.transition(id, { state: "capturing" }, "succeeded", {}, "saved", T0 + 4, undefined, { outputs: id === "job_o1" ? [output(1), output(0)] : [output(0)] });
      }
      const byJob = await store.outputsOfJobs(["job_o1", "job_o2", "job_o3", "job_o1"]);
      expect([...byJob.keys()].sort()).toEqual(["job_o1", "job_o3"]);
      expect(byJob.get("job_o1")!.map((each) => each.index)).toEqual([0, 1]);
      expect(byJob.get("job_o3")).toEqual(await store.outputs("job_o3"));
      expect((await store.outputsOfJobs([])).size).toBe(0);
    });

    it("batchSummary counts a batch's jobs by state with their estimates and known charges; spendSummary puts the ledger beside the estimates by provider, model and token", async () => {
      await store.insertJobs(
        [
          newDJob("b1", { batchId: "batch_x", tokenId: "tok_a" }),
          newDJob("b2", { batchId: "batch_x", tokenId: "tok_a", estimateMicroUsd: null }),
          newDJob("b3", { batchId: "batch_x", tokenId: "tok_b", estimateMicroUsd: 70_000, model: "gen-2-max" }),
          newDJob("other", { batchId: "batch_y" }),
        ],
        T0,
      );
      await store.transition("job_b1", { state: "queued" }, "cancelled", {}, "cancelled", T0 + 1);
      expect(await store.batchSummary("batch_x")).toEqual({ jobs: 3, byState: { queued: 2, cancelled: 1 }, estimateMicroUsd: 100_000, unpriced: 1, chargedMicroUsd: 0 });
      expect(await store.batchSummary("batch_x", "tok_b")).toMatchObject({ jobs: 1, estimateMicroUsd: 70_000 });
      expect((await store.batchSummary("nothing")).jobs).toBe(0);
      await store.claimForSubmit("job_b3", "mg:test:1:a", [{ key: "d:account", capacity: 24 }], T0 + 2, 60_000);
      await store.transition("job_b3", { state: "submitting" }, "running", { providerJobId: "p3" }, "accepted", T0 + 3);
      await store.transition("job_b3", { state: "running" }, "capturing", {}, "done", T0 + 4);
      await store.transition("job_b3", { state: "capturing" }, "succeeded", { chargeMicroUsd: 70_000, chargeState: "computed" }, "saved", T0 + 5, undefined, { ledger: { microUsd: 70_000, source: "test" } });
      const lines = await store.spendSummary(T0, T0 + 60_000);
      expect(lines).toEqual([
        { provider: "d", model: "gen-2-max", tokenId: "tok_b", settledMicroUsd: 70_000, estimatedMicroUsd: 70_000, jobs: 1, unpricedJobs: 0 },
        { provider: "d", model: "gen-2-pro", tokenId: null, settledMicroUsd: 0, estimatedMicroUsd: 30_000, jobs: 1, unpricedJobs: 0 },
        { provider: "d", model: "gen-2-pro", tokenId: "tok_a", settledMicroUsd: 0, estimatedMicroUsd: 30_000, jobs: 2, unpricedJobs: 1 },
      ]);
      expect(await store.spendSummary(T0, T0 + 60_000, "tok_b")).toHaveLength(1);
      expect(await store.spendSummary(T0 + 10_000, T0 + 60_000)).toEqual([]);
    });
  });
}

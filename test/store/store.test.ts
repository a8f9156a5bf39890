import { describe, expect, it } from "vitest";
import { RATE_IN_FLIGHT_RECHECK_MS, rateUnansweredExpiryMs, type RateTake, type Store, type NewJob } from "../../src/store/store.js";
import { MIGRATIONS } from "../../src/store/migrations/index.js";
import { freshStoreEachTest, newDJob, storeFactories } from "../helpers/stores.js";

function newJob(ref: string, overrides: Partial<NewJob> = {}): NewJob {
  return newDJob(ref, { body: { prompt: "p", width: 1024, height: 768 }, ...overrides });
}

for (const factory of storeFactories) {
  describe(`store (${factory.name})`, () => {
    let store: Store;
    freshStoreEachTest(factory, (opened) => (store = opened));

    it("a ref is unique: inserting it again returns the stored job instead of a second one", async () => {
      const [first] = await store.insertJobs([newJob("a")], 1_000);
      const [again] = await store.insertJobs([newJob("a", { id: "job_other" })], 2_000);
      expect(first!.created).toBe(true);
      expect(again!.created).toBe(false);
      expect(again!.job.id).toBe("job_a");
      expect(await store.listJobs()).toHaveLength(1);
    });

    it("every transition is appended to the job's event log with time and reason", async () => {
      await store.insertJobs([newJob("a")], 1_000);
      const claim = await store.claimForSubmit("job_a", "owner-1", [{ key: "d:account", capacity: 24 }], 2_000, 30_000);
      expect(claim.kind).toBe("claimed");
      await store.transition("job_a", { state: "submitting", leaseOwner: "owner-1" }, "running", { providerJobId: "p1" }, "accepted", 3_000);
      const events = await store.events("job_a");
      expect(events.map((event) => [event.fromState, event.toState, event.at])).toEqual([
        [null, "queued", 1_000],
        ["queued", "submitting", 2_000],
        ["submitting", "running", 3_000],
      ]);
      expect(events[2]!.reason).toBe("accepted");
    });

    it("a transition applies only when the job is in the expected state and lease (compare-and-set)", async () => {
      await store.insertJobs([newJob("a")], 1_000);
      await store.claimForSubmit("job_a", "owner-1", [], 2_000, 30_000);
      expect(await store.transition("job_a", { state: "submitting", leaseOwner: "owner-2" }, "running", {}, "x", 3_000)).toBeNull();
      expect(await store.transition("job_a", { state: "queued" }, "running", {}, "x", 3_000)).toBeNull();
      expect((await store.transition("job_a", { state: "submitting", leaseOwner: "owner-1" }, "running", {}, "x", 3_000))?.state).toBe("running");
    });

    it("a submit is noted as leaving only for the owner that holds the job in submitting (the claim read what it decides on, and the claimed job comes back whole)", async () => {
      await store.insertJobs([newJob("a", { estimateMicroUsd: 40_000 }), newJob("b")], 1_000);
      const claim = await store.claimForSubmit("job_a", "owner-1", [], 2_000, 30_000);
      expect(claim).toMatchObject({ kind: "claimed", job: { id: "job_a", state: "submitting", attempts: 1, estimateMicroUsd: 40_000, leaseOwner: "owner-1", submitSentAt: null } });
      expect(claim.kind === "claimed" && claim.job.body).toEqual(newJob("a").body);
      expect(await store.markSubmitSent("job_a", "owner-2", 2_500)).toBe(false);
      expect(await store.markSubmitSent("job_b", "owner-1", 2_500)).toBe(false);
      expect((await store.getJob("job_a"))!.submitSentAt).toBeNull();
      expect(await store.markSubmitSent("job_a", "owner-1", 2_600)).toBe(true);
      expect(await store.getJob("job_a")).toMatchObject({ state: "submitting", submitSentAt: 2_600, updatedAt: 2_600 });
      await store.transition("job_a", { state: "submitting", leaseOwner: "owner-1" }, "running", {}, "accepted", 3_000);
      expect(await store.markSubmitSent("job_a", "owner-1", 3_500)).toBe(false);
      expect((await store.getJob("job_a"))!.submitSentAt).toBe(2_600);
      // A job sent back to the queue and claimed again counts its second attempt.
      await store.claimForSubmit("job_b", "owner-1", [], 4_000, 30_000);
      await store.transition("job_b", { state: "submitting", leaseOwner: "owner-1" }, "queued", { leaseOwner: null, leaseExpiresAt: null }, "not sent", 4_100);
      expect(await store.claimForSubmit("job_b", "owner-1", [], 4_200, 30_000)).toMatchObject({ kind: "claimed", job: { attempts: 2 } });
    });

    it("slots: a pool's published capacity can change (C's tier): a claim records the new one, and the learned capacity never exceeds it", async () => {
      await store.insertJobs(["a", "b", "c", "d", "e", "f"].map((ref) => newJob(ref)), 1_000);
      const essential = [{ key: "c:account", capacity: 15 }];
      for (const ref of ["a", "b", "c", "d"]) expect((await store.claimForSubmit(`job_${ref}`, "o", essential, 2_000, 30_000)).kind).toBe("claimed");
      // Down to the free tier's 3 with 4 held: learned capacity falls with it, and no slot is given.
      expect(await store.claimForSubmit("job_e", "o", [{ key: "c:account", capacity: 3 }], 3_000, 30_000)).toEqual({ kind: "no_slot", poolKey: "c:account", retryAt: null });
      expect((await store.poolStatus()).find((pool) => pool.key === "c:account")).toMatchObject({ configuredCapacity: 3, learnedCapacity: 3, held: 4 });
      // Back up to 20: the published capacity is recorded; the learned one is not raised by the claim (recovery raises it).
      expect(await store.claimForSubmit("job_e", "o", [{ key: "c:account", capacity: 20 }], 4_000, 30_000)).toEqual({ kind: "no_slot", poolKey: "c:account", retryAt: null });
      expect((await store.poolStatus()).find((pool) => pool.key === "c:account")).toMatchObject({ configuredCapacity: 20, learnedCapacity: 3, held: 4 });
    });

    it("slots: a job takes all its pools or none, and a terminal transition frees them", async () => {
      await store.insertJobs([newJob("a"), newJob("b"), newJob("c")], 1_000);
      const pools = [{ key: "d:account", capacity: 2 }, { key: "d:gen-ctx-max", capacity: 1 }];
      // The claim says which pools it took the last slot of: the engine makes no claim that could only fail.
      expect(await store.claimForSubmit("job_a", "o", pools, 2_000, 30_000)).toMatchObject({ kind: "claimed", filled: ["d:gen-ctx-max"] });
      const blocked = await store.claimForSubmit("job_b", "o", pools, 2_000, 30_000);
      expect(blocked).toMatchObject({ kind: "no_slot", poolKey: "d:gen-ctx-max" });
      // job_b took nothing from d:account although that pool had room
      const status = await store.poolStatus();
      expect(status.find((pool) => pool.key === "d:account")!.held).toBe(1);
      await store.transition("job_a", { state: "submitting" }, "failed", { error: { code: "x", message: "x" } }, "x", 3_000);
      expect((await store.poolStatus()).every((pool) => pool.held === 0)).toBe(true);
      expect(await store.claimForSubmit("job_b", "o", pools, 4_000, 30_000)).toMatchObject({ kind: "claimed", filled: ["d:gen-ctx-max"] });
      expect(await store.claimForSubmit("job_c", "o", [{ key: "d:account", capacity: 2 }], 4_000, 30_000)).toMatchObject({ kind: "claimed", filled: ["d:account"] });
    });

    it("slots: after a pushback the pool hands out no slot until blocked_until and believes only what is held", async () => {
      await store.insertJobs([newJob("a"), newJob("b"), newJob("c")], 1_000);
      const pools = [{ key: "d:account", capacity: 24 }];
      await store.claimForSubmit("job_a", "o", pools, 1_000, 30_000);
      await store.slotPushback(["d:account"], 10_000, 2_000);
      expect(await store.claimForSubmit("job_b", "o", pools, 5_000, 30_000)).toMatchObject({ kind: "no_slot", retryAt: 10_000 });
      const [pool] = await store.poolStatus();
      expect(pool!.learnedCapacity).toBe(1);
      expect(await store.claimForSubmit("job_b", "o", pools, 11_000, 30_000)).toMatchObject({ kind: "no_slot", retryAt: null });
      await store.slotRecover("d:account", 12_000);
      expect((await store.claimForSubmit("job_b", "o", pools, 12_000, 30_000)).kind).toBe("claimed");
    });

    it("rate windows: no more than the limit within any window, and the wait says when there is room", async () => {
      const window = [{ key: "e:org", limit: 4, windowMs: 60_000 }];
      const sendAndAnswer = async (at: number): Promise<RateTake> => {
        const take = await store.takeRateToken(window, at);
        if (take.granted) await store.answerRateToken(take.token, at);
        return take;
      };
      for (const at of [0, 1_000, 2_000, 3_000]) expect((await sendAndAnswer(at)).granted).toBe(true);
      expect(await sendAndAnswer(30_000)).toEqual({ granted: false, waitMs: 30_001 });
      expect((await sendAndAnswer(60_001)).granted).toBe(true);
      expect(await sendAndAnswer(60_500)).toEqual({ granted: false, waitMs: 501 });
    });

    it("rate windows: a request counts until a full window after its answer, since the provider counted it somewhere in between", async () => {
      const window = [{ key: "a:standard", limit: 2, windowMs: 60_000 }];
      const first = await store.takeRateToken(window, 0);
      const second = await store.takeRateToken(window, 0);
      if (!first.granted || !second.granted) throw new Error("both fit in an empty window");
      // Both still in flight a window later: they still count, and when they leave is unknown.
      expect(await store.takeRateToken(window, 70_000)).toEqual({ granted: false, waitMs: RATE_IN_FLIGHT_RECHECK_MS });
      // Answered at 9 s (a slow provider): they leave the window at 69 s, not at 60 s.
      await store.answerRateToken(first.token, 9_000);
      await store.answerRateToken(second.token, 9_000);
      expect(await store.takeRateToken(window, 65_000)).toEqual({ granted: false, waitMs: 4_001 });
      expect((await store.takeRateToken(window, 69_001)).granted).toBe(true);
    });

    it("rate windows: a request never answered (its engine died) stops counting a window after the latest it could have arrived (2.5 min for a 1-minute window, not 10)", async () => {
      const window = [{ key: "e:account", limit: 1, windowMs: 60_000 }];
      expect(rateUnansweredExpiryMs(60_000)).toBe(150_000);
      expect((await store.takeRateToken(window, 0)).granted).toBe(true);
      expect((await store.takeRateToken(window, 149_999)).granted).toBe(false);
      expect((await store.takeRateToken(window, 150_000)).granted).toBe(true);
    });

    it("a lease of a dead owner is adopted at once; a live owner's valid lease is not", async () => {
      await store.insertJobs([newJob("a"), newJob("b")], 1_000);
      await store.claimForSubmit("job_a", "dead", [], 1_000, 60_000);
      await store.claimForSubmit("job_b", "alive", [], 1_000, 60_000);
      const adopted = await store.adoptOrphans("me", 2_000, 30_000, (owner) => owner === "dead");
      expect(adopted.map((job) => job.id)).toEqual(["job_a"]);
      expect(adopted[0]!.leaseOwner).toBe("me");
      const later = await store.adoptOrphans("me", 70_000, 30_000, () => false);
      expect(later.map((job) => job.id)).toEqual(["job_b"]);
    });

    it("the ledger holds at most one charge per job", async () => {
      await store.insertJobs([newJob("a")], 1_000);
      await store.claimForSubmit("job_a", "o", [], 1_000, 30_000);
      await store.transition("job_a", { state: "submitting" }, "running", {}, "x", 2_000);
      await store.transition("job_a", { state: "running" }, "capturing", {}, "x", 3_000, undefined, { ledger: { microUsd: 30_000, source: "t" } });
      await store.transition("job_a", { state: "capturing" }, "succeeded", {}, "x", 4_000, undefined, { ledger: { microUsd: 30_000, source: "t" } });
      expect(await store.ledgerTotal()).toBe(30_000);
    });

    it("refused webhook deliveries are counters per (provider, reason, bucket): counts add up, first and last times widen, no delivery row is written", async () => {
      const hour = 3_600_000;
      await store.countWebhookRejections([
        { provider: "b", reason: "bad_signature", bucketStart: hour, refused: 5, throttled: 2, firstAt: hour + 100, lastAt: hour + 500 },
        { provider: "unknown", reason: "unknown_route", bucketStart: hour, refused: 1, throttled: 0, firstAt: hour + 200, lastAt: hour + 200 },
      ]);
      await store.countWebhookRejections([
        { provider: "b", reason: "bad_signature", bucketStart: hour, refused: 3, throttled: 3, firstAt: hour + 50, lastAt: hour + 900 },
        { provider: "b", reason: "bad_signature", bucketStart: 2 * hour, refused: 1, throttled: 0, firstAt: 2 * hour + 1, lastAt: 2 * hour + 1 },
      ]);
      const later = { provider: "b", reason: "bad_signature", bucketStart: 2 * hour, refused: 1, throttled: 0, firstAt: 2 * hour + 1, lastAt: 2 * hour + 1 };
      expect(await store.webhookRejections()).toEqual([
        { provider: "b", reason: "bad_signature", bucketStart: hour, refused: 8, throttled: 5, firstAt: hour + 50, lastAt: hour + 900 },
        { provider: "unknown", reason: "unknown_route", bucketStart: hour, refused: 1, throttled: 0, firstAt: hour + 200, lastAt: hour + 200 },
        later,
      ]);
      expect(await store.webhookRejections({ provider: "b", from: 2 * hour })).toEqual([later]);
      expect(await store.webhookRejections({ to: hour })).toHaveLength(2);
      expect(await store.deliveries()).toEqual([]);
    });

    it("halts stop a provider's queued jobs from being offered until the halt is cleared", async () => {
      await store.insertJobs([newJob("a"), newJob("b", { provider: "e", model: "v3" })], 1_000);
      // The engine passes what halts() says to dueQueued, so the rule is checked through both.
      const offered = async () => (await store.dueQueued(2_000, 10, (await store.halts()).map((halt) => halt.provider))).map((job) => job.id);
      expect(await offered()).toEqual(["job_a", "job_b"]);
      await store.haltProvider({ provider: "d", code: "insufficient_credits", message: "m", jobId: "job_a", at: 1_000 });
      // The first halt is the one kept: a second report does not replace its cause.
      await store.haltProvider({ provider: "d", code: "other", message: "later", jobId: null, at: 1_500 });
      expect(await store.halts()).toEqual([{ provider: "d", code: "insufficient_credits", message: "m", jobId: "job_a", at: 1_000 }]);
      expect(await offered()).toEqual(["job_b"]);
      await store.clearHalt("d");
      expect(await store.halts()).toEqual([]);
      expect(await offered()).toEqual(["job_a", "job_b"]);
    });
  });
}

const databaseUrl = process.env.DATABASE_URL;
describe.runIf(databaseUrl)("store (postgres, several processes)", () => {
  it("a claim whose job is being claimed by another engine skips the jobs other engines hold locked and claims the next free one instead, without waiting for them", async () => {
    const { openPostgresStore } = await import("../../src/store/postgres.js");
    const pg = (await import("pg")).default;
    const schema = `mg_test_skip_${Date.now().toString(36)}`;
    const store = await openPostgresStore(databaseUrl!, { schema, maxConnections: 2 });
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await store.insertJobs(["a", "b", "c"].map((ref) => newJob(ref, { batchId: "b1" })), 500);
      // Two other engines are mid-claim on the queue's first two jobs.
      await client.query("BEGIN");
      await client.query(`SELECT id FROM ${schema}.jobs WHERE id IN ('job_a', 'job_b') FOR UPDATE`);
      const claim = await store.claimForSubmit("job_a", "me", [], 1_000, 30_000, { provider: "d", scope: { batchId: "b1" }, poolsOf: () => [] });
      expect(claim).toMatchObject({ kind: "claimed", instead: true, job: { id: "job_c", leaseOwner: "me" } });
      await client.query("ROLLBACK");
    } finally {
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
      await store.close();
    }
  });

  it("stores opening one new schema at once all migrate it, each migration applied once", async () => {
    const { openPostgresStore } = await import("../../src/store/postgres.js");
    const pg = (await import("pg")).default;
    const schema = `mg_test_race_${Date.now().toString(36)}`;
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore(databaseUrl!, { schema, maxConnections: 2 })));
    try {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      const { rows } = await client.query(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`);
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
      expect(rows.map((row: { version: number }) => Number(row.version))).toEqual(MIGRATIONS.map((migration) => migration.version));
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { NotificationAttempt, Store } from "../../src/store/store.js";
import { newDJob, storeFactories } from "../helpers/stores.js";

/**
 * Issue 12, in the store: a notification a job owes is written by the change
 * that owes it, in the same transaction (on PostgreSQL, in the transition's
 * one statement), so a crash right after the change loses nothing; each
 * attempt is claimed by one engine at a time and recorded once, with its
 * event in the job's log.
 */

const POOL = [{ key: "d:account", capacity: 4 }];
const HOOK = "https://hooks.example/mediagate?token=t0ken";
const LEASE_MS = 60_000;

interface Opened {
  store: Store;
  statements: string[];
  cleanup(): Promise<void>;
}

function attemptRecord(id: string, attempt: number, at: number, outcome: NotificationAttempt["outcome"]): NotificationAttempt {
  return { id, attempt, at, status: outcome.kind === "delivered" ? 200 : 500, error: outcome.kind === "delivered" ? null : "http_500", outcome, event: { reason: `attempt ${attempt}: ${outcome.kind}`, detail: { notification: id, attempt } } };
}

for (const { name, open } of storeFactories) {
  describe(`notifications owed and claimed (${name})`, () => {
    let opened: Opened;
    beforeEach(async () => {
      const statements: string[] = [];
      opened = { ...(await open({ onQuery: (text) => statements.push(text) })), statements };
    });
    afterEach(async () => opened.cleanup());

    it("a job's end owes one notification to its notify_url, written with the change itself (PostgreSQL: in the transition's one statement), due at once and not yet tried", async () => {
      const { store, statements } = opened;
      await store.insertJobs([newDJob("a", { notifyUrl: HOOK })], 1_000);
      statements.length = 0;
      const cancelled = await store.transition("job_a", { state: "queued" }, "cancelled", {}, "cancelled by the user", 2_000);
      expect(cancelled?.state).toBe("cancelled");
      if (name === "postgres") {
        // One round trip: the job's change, its event and the notification it owes, all or none.
        expect(statements).toHaveLength(1);
        expect(statements[0]).toMatch(/insert into notifications/);
      }
      const [owed, ...others] = await store.notifications("job_a");
      expect(others).toEqual([]);
      expect(owed).toMatchObject({ jobId: "job_a", type: "job.cancelled", url: HOOK, body: null, attempts: 0, createdAt: 2_000, nextAttemptAt: 2_000, deliveredAt: null, givenUpAt: null });
      expect(owed!.id).toMatch(/^msg_[0-9a-z]{26}$/);
    });

    it("no URL, no notification: a job without notify_url owes none unless MEDIAGATE_NOTIFY_URL is set, which serves only the jobs without their own", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("plain"), newDJob("own", { notifyUrl: HOOK }), newDJob("later")], 1_000);
      await store.transition("job_plain", { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      expect(await store.notifications("job_plain")).toEqual([]);
      store.setNotificationPolicy({ defaultUrl: "https://default.example/hook", events: "terminal" });
      await store.transition("job_own", { state: "queued" }, "cancelled", {}, "cancelled", 3_000);
      await store.transition("job_later", { state: "queued" }, "failed", { error: { code: "x", message: "y" } }, "failed", 3_000);
      expect((await store.notifications("job_own")).map((owed) => owed.url)).toEqual([HOOK]);
      expect((await store.notifications("job_later")).map((owed) => [owed.type, owed.url])).toEqual([["job.failed", "https://default.example/hook"]]);
    });

    it("only a job's end owes one by default: its moves before, a move its expectation refused, and a move that keeps its state owe none", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("a", { notifyUrl: HOOK })], 1_000);
      await store.claimForSubmit("job_a", "me", POOL, 1_000, 30_000);
      await store.transition("job_a", { state: "submitting" }, "running", { providerJobId: "p" }, "accepted", 2_000);
      expect(await store.transition("job_a", { state: "capturing" }, "succeeded", {}, "not capturing yet", 2_500)).toBeNull();
      await store.transition("job_a", { state: "running" }, "capturing", {}, "done", 3_000);
      expect(await store.notifications("job_a")).toEqual([]);
      await store.transition("job_a", { state: "capturing" }, "succeeded", {}, "saved", 4_000);
      await store.transition("job_a", { state: "succeeded" }, "succeeded", {}, "again", 5_000);
      expect((await store.notifications("job_a")).map((owed) => [owed.type, owed.createdAt])).toEqual([["job.succeeded", 4_000]]);
    });

    it("a job under a budget (whose end takes a transaction on PostgreSQL) owes its end's notification the same way", async () => {
      const { store } = opened;
      await store.setBudget("b1", 1_000_000, 1_000);
      await store.insertJobs([newDJob("a", { notifyUrl: HOOK, budgetId: "b1" })], 1_000);
      expect((await store.claimForSubmit("job_a", "me", POOL, 1_000, 30_000)).kind).toBe("claimed");
      await store.transition("job_a", { state: "submitting" }, "failed", { error: { code: "rejected", message: "no" } }, "refused", 2_000);
      expect((await store.notifications("job_a")).map((owed) => [owed.type, owed.createdAt])).toEqual([["job.failed", 2_000]]);
      expect((await store.budget("b1"))!.committedMicroUsd).toBe(0);
    });

    it("MEDIAGATE_NOTIFY_EVENTS=all: every change of state after queueing owes one (the claim's too), in order, each with its own webhook-id", async () => {
      const { store } = opened;
      store.setNotificationPolicy({ defaultUrl: null, events: "all" });
      await store.insertJobs([newDJob("a", { notifyUrl: HOOK })], 1_000);
      await store.claimForSubmit("job_a", "me", POOL, 1_100, 30_000);
      await store.transition("job_a", { state: "submitting" }, "running", { providerJobId: "p" }, "accepted", 2_000);
      await store.transition("job_a", { state: "running" }, "running", {}, "still running", 2_500);
      await store.transition("job_a", { state: "running" }, "capturing", {}, "done", 3_000);
      await store.transition("job_a", { state: "capturing" }, "succeeded", {}, "saved", 4_000);
      const owed = await store.notifications("job_a");
      expect(owed.map((notification) => [notification.type, notification.createdAt])).toEqual([
        ["job.submitting", 1_100],
        ["job.running", 2_000],
        ["job.capturing", 3_000],
        ["job.succeeded", 4_000],
      ]);
      expect(new Set(owed.map((notification) => notification.id)).size).toBe(4);
    });

    it("a claim takes each due notification for one attempt: two claims at once never share one, the attempt is counted, and it is due again only when the claim lapses", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("a", { notifyUrl: HOOK }), newDJob("b", { notifyUrl: HOOK }), newDJob("c", { notifyUrl: HOOK })], 1_000);
      for (const id of ["job_a", "job_b", "job_c"]) await store.transition(id, { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      expect(await store.claimDueNotifications(1_999, 10, LEASE_MS)).toEqual([]);
      const [first, second] = await Promise.all([store.claimDueNotifications(2_000, 2, LEASE_MS), store.claimDueNotifications(2_000, 2, LEASE_MS)]);
      const claimed = [...first!, ...second!];
      expect(claimed).toHaveLength(3);
      expect(new Set(claimed.map((notification) => notification.id)).size).toBe(3);
      for (const notification of claimed) expect(notification).toMatchObject({ attempts: 1, nextAttemptAt: 2_000 + LEASE_MS });
      expect(await store.claimDueNotifications(2_000 + LEASE_MS - 1, 10, LEASE_MS)).toEqual([]);
      // The engine that claimed them died mid-attempt: another takes them once the claim lapsed, as attempt 2.
      const again = await store.claimDueNotifications(2_000 + LEASE_MS, 10, LEASE_MS);
      expect(again.map((notification) => notification.attempts)).toEqual([2, 2, 2]);
    });

    it("an attempt is recorded once, with its event in the job's log, only while the notification is still at that attempt and owed; delivered or given up, it is never claimed again", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("a", { notifyUrl: HOOK }), newDJob("b", { notifyUrl: HOOK })], 1_000);
      await store.transition("job_a", { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      await store.transition("job_b", { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      const [a, b] = await store.claimDueNotifications(2_000, 10, LEASE_MS);
      const [owedA] = await store.notifications("job_a");
      const first = a!.id === owedA!.id ? a! : b!;
      const other = first === a ? b! : a!;
      expect(await store.recordNotificationAttempt(attemptRecord(first.id, 1, 2_100, { kind: "retry", nextAttemptAt: 30_000 }))).toBe(true);
      expect(await store.notifications("job_a")).toMatchObject([{ attempts: 1, nextAttemptAt: 30_000, lastAttemptAt: 2_100, lastStatus: 500, lastError: "http_500", deliveredAt: null }]);
      const events = await store.events("job_a");
      expect(events.at(-1)).toMatchObject({ fromState: "cancelled", toState: "cancelled", at: 2_100, reason: "attempt 1: retry", detail: { notification: first.id, attempt: 1 } });
      // The retry is this store's next due work (for an engine that delivers), the other's lapsing claim after it.
      expect((await store.nextDueAt("me", [], 2_100, null, true, true)).at).toBe(30_000);
      expect((await store.nextDueAt("me", [], 2_100, null, true, false)).at).toBeNull();

      // A late record of attempt 1, after another engine claimed attempt 2, is refused and writes nothing.
      const [retried] = await store.claimDueNotifications(30_000, 1, LEASE_MS);
      expect(retried).toMatchObject({ id: first.id, attempts: 2 });
      expect(await store.recordNotificationAttempt(attemptRecord(first.id, 1, 30_100, { kind: "delivered" }))).toBe(false);
      expect(await store.recordNotificationAttempt(attemptRecord(first.id, 2, 30_200, { kind: "delivered" }))).toBe(true);
      expect(await store.recordNotificationAttempt(attemptRecord(first.id, 2, 30_300, { kind: "delivered" }))).toBe(false);
      expect(await store.recordNotificationAttempt(attemptRecord(other.id, 1, 30_400, { kind: "given_up" }))).toBe(true);
      expect((await store.events("job_a")).filter((event) => event.reason.startsWith("attempt")).map((event) => event.reason)).toEqual(["attempt 1: retry", "attempt 2: delivered"]);
      expect(await store.notifications("job_a")).toMatchObject([{ attempts: 2, deliveredAt: 30_200, lastStatus: 200, lastError: null }]);
      expect(await store.notifications("job_b")).toMatchObject([{ attempts: 1, givenUpAt: 30_400 }]);
      expect(await store.claimDueNotifications(10_000_000, 10, LEASE_MS)).toEqual([]);
      expect((await store.nextDueAt("me", [], 30_400, null, true, true)).at).toBeNull();
    });

    it("the body made at the first attempt is kept: a later one does not replace it", async () => {
      const { store } = opened;
      await store.insertJobs([newDJob("a", { notifyUrl: HOOK })], 1_000);
      await store.transition("job_a", { state: "queued" }, "cancelled", {}, "cancelled", 2_000);
      const [owed] = await store.notifications("job_a");
      expect(await store.keepNotificationBody(owed!.id, '{"first":true}')).toBe('{"first":true}');
      expect(await store.keepNotificationBody(owed!.id, '{"second":true}')).toBe('{"first":true}');
      expect((await store.notifications("job_a"))[0]!.body).toBe('{"first":true}');
    });
  });
}

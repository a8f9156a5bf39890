import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCAL_CALLER, callerOf, type Caller } from "../../src/app/caller.js";
import { NotFoundError } from "../../src/app/errors.js";
import { batchOf, jobOutput, listJobs, spendOf, spendOfDays, spendPeriod, spendView, visibleJob } from "../../src/app/queries.js";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import { InputError } from "../../src/core/errors.js";
import type { ApiToken } from "../../src/store/tokens.js";
import { newDJob, tempDir } from "../helpers/stores.js";

/**
 * The application's reads, called as a face calls them: a runtime on a real
 * SQLite store, two tenants' jobs in it, each read asked as a tenant and as
 * an admin.
 */

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 20, 12);

function token(id: string, name: string, admin = false): ApiToken {
  return { id, name, secretSha256: `sha-${id}`, admin, readOnly: false, budgetId: null, createdAt: T0, revokedAt: null, weight: 1 };
}

const alice = callerOf(token("tok_alice", "alice"));
const bob = callerOf(token("tok_bob", "bob"));
const folder = tempDir();
let runtime: Runtime;

beforeAll(async () => {
  runtime = createRuntime({ env: { MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`, MEDIAGATE_OUTPUT_DIR: join(folder.path, "out") } });
  const store = await runtime.store();
  await store.createToken(token("tok_alice", "alice"));
  // Five of Alice's jobs a millisecond apart (newest last), one of Bob's, one of a token since removed from the store's list.
  for (let index = 0; index < 5; index++) await store.insertJobs([newDJob(`a${index}`, { tokenId: "tok_alice", batchId: "batch_a" })], T0 + index);
  await store.insertJobs([newDJob("b0", { tokenId: "tok_bob", batchId: "batch_a", model: "gen-2-max", estimateMicroUsd: 70_000 })], T0 + 10);
  await store.insertJobs([newDJob("ghost", { tokenId: "tok_ghost" })], T0 + 11);
  await store.insertJobs([newDJob("local", { estimateMicroUsd: null })], T0 + 12);
  await store.transition("job_a0", { state: "queued" }, "submitting", {}, "claimed", T0 + 20);
  await store.transition("job_a0", { state: "submitting" }, "running", { providerJobId: "p0" }, "accepted", T0 + 21);
  await store.transition("job_a0", { state: "running" }, "capturing", {}, "done", T0 + 22);
  const output = { index: 0, path: "/srv/out/a0.png", url: "https://d.example/r/a0.png", contentType: "image/png", bytes: 4, sha256: "ab".repeat(32), metadata: {}, media: {} };
  await store.transition("job_a0", { state: "capturing" }, "succeeded", { chargeMicroUsd: 30_000, chargeState: "computed" }, "saved", T0 + 23, undefined, { outputs: [output], ledger: { microUsd: 30_000, source: "test" } });
});

afterAll(async () => {
  await runtime.close();
  folder.remove();
});

describe("listJobs: a page newest first, the caller's own unless admin", () => {
  it("a tenant's page holds only its jobs, newest first; the next page starts after the last one shown and the last page says there is none", async () => {
    const first = await listJobs(runtime, alice, {}, 2);
    expect(first.jobs.map((job) => job.ref)).toEqual(["a4", "a3"]);
    expect(first.next).toMatchObject({ createdAt: T0 + 3, id: "job_a3" });
    const second = await listJobs(runtime, alice, { olderThan: first.next! }, 3);
    expect(second.jobs.map((job) => job.ref)).toEqual(["a2", "a1", "a0"]);
    // Exactly `limit` left: no next page.
    expect(second.next).toBeNull();
    expect((await listJobs(runtime, bob, {}, 10)).jobs.map((job) => job.ref)).toEqual(["b0"]);
  });

  it("an admin's page holds every tenant's jobs", async () => {
    const page = await listJobs(runtime, LOCAL_CALLER, {}, 100);
    expect(page.jobs.map((job) => job.ref)).toEqual(["local", "ghost", "b0", "a4", "a3", "a2", "a1", "a0"]);
    expect(page.next).toBeNull();
  });
});

describe("visibleJob, jobOutput, batchOf: another tenant's thing is not found, never forbidden", () => {
  it("the owner and an admin read a job; another tenant is told there is no such job", async () => {
    expect((await visibleJob(runtime, alice, "job_a1")).ref).toBe("a1");
    expect((await visibleJob(runtime, LOCAL_CALLER, "job_a1")).ref).toBe("a1");
    await expect(visibleJob(runtime, bob, "job_a1")).rejects.toThrow(new NotFoundError("no job job_a1"));
    await expect(visibleJob(runtime, alice, "job_nope")).rejects.toThrow(new NotFoundError("no job job_nope"));
  });

  it("an output is found by its index as text; another index is not found, naming the job and the index", async () => {
    expect((await jobOutput(runtime, { id: "job_a0" }, "0")).sha256).toBe("ab".repeat(32));
    await expect(jobOutput(runtime, { id: "job_a0" }, "1")).rejects.toThrow(new NotFoundError("job job_a0 has no output 1"));
    await expect(jobOutput(runtime, { id: "job_a1" }, "0")).rejects.toThrow(NotFoundError);
  });

  it("a batch counts the caller's jobs in it only; a batch with none of them is not found", async () => {
    expect(await batchOf(runtime, alice, "batch_a")).toMatchObject({ jobs: 5, estimateMicroUsd: 150_000, chargedMicroUsd: 30_000 });
    expect(await batchOf(runtime, bob, "batch_a")).toMatchObject({ jobs: 1, estimateMicroUsd: 70_000 });
    expect(await batchOf(runtime, LOCAL_CALLER, "batch_a")).toMatchObject({ jobs: 6 });
    const carol: Caller = { ...bob, tenant: "tok_carol", name: "carol" };
    await expect(batchOf(runtime, carol, "batch_a")).rejects.toThrow(new NotFoundError("no batch batch_a"));
    await expect(batchOf(runtime, LOCAL_CALLER, "batch_none")).rejects.toThrow(new NotFoundError("no batch batch_none"));
  });
});

describe("spendOf and spendView: the period's lines by provider, model and token, named", () => {
  it("an admin sees every token's lines, each named: by the token's name, by its id when the token is not in the store, none for the local operator's", async () => {
    const lines = await spendOf(runtime, LOCAL_CALLER, T0, T0 + DAY);
    const byToken = new Map(lines.map((line) => [line.tokenId, line]));
    expect(byToken.get("tok_alice")).toMatchObject({ tokenName: "alice", model: "gen-2-pro", jobs: 5, settledMicroUsd: 30_000, estimatedMicroUsd: 150_000 });
    expect(byToken.get("tok_bob")).toMatchObject({ tokenName: "tok_bob", model: "gen-2-max" });
    expect(byToken.get("tok_ghost")).toMatchObject({ tokenName: "tok_ghost" });
    expect(byToken.get(null)).toMatchObject({ tokenName: null, unpricedJobs: 1 });
    expect(lines).toHaveLength(4);
  });

  it("a tenant sees its own lines only", async () => {
    const lines = await spendOf(runtime, bob, T0, T0 + DAY);
    expect(lines.map((line) => line.tokenId)).toEqual(["tok_bob"]);
  });

  it("the view sums the lines and names each line's fields as the API answers them", () => {
    const view = spendView(
      [
        { provider: "d", model: "gen-2-pro", tokenId: "tok_a", tokenName: "a", settledMicroUsd: 10, estimatedMicroUsd: 30, jobs: 2, unpricedJobs: 1 },
        { provider: "f", model: "img-v2", tokenId: null, tokenName: null, settledMicroUsd: 5, estimatedMicroUsd: 7, jobs: 3, unpricedJobs: 2 },
      ],
      T0,
      T0 + DAY,
    );
    expect(view).toEqual({
      from: "2026-11-20T12:00:00.000Z",
      to: "2026-11-21T12:00:00.000Z",
      settled_micro_usd: 15,
      estimated_micro_usd: 37,
      unpriced_jobs: 3,
      lines: [
        { provider: "d", model: "gen-2-pro", token: "a", settled_micro_usd: 10, estimated_micro_usd: 30, jobs: 2, unpriced_jobs: 1 },
        { provider: "f", model: "img-v2", token: null, settled_micro_usd: 5, estimated_micro_usd: 7, jobs: 3, unpriced_jobs: 2 },
      ],
    });
    expect(spendView([], T0, T0 + 1)).toMatchObject({ settled_micro_usd: 0, estimated_micro_usd: 0, unpriced_jobs: 0, lines: [] });
  });

  it("daily spend covers the last N UTC days, today included, oldest first, the caller's own", async () => {
    const now = T0 + 5 * DAY + 3_600_000;
    const view = await spendOfDays(runtime, LOCAL_CALLER, now, 7);
    const today = Date.UTC(2026, 10, 25);
    expect(view.days).toEqual([6, 5, 4, 3, 2, 1, 0].map((back) => today - back * DAY));
    expect(view.lines.length).toBeGreaterThan(0);
    expect(view.lines.every((line) => line.day === Date.UTC(2026, 10, 20))).toBe(true);
    expect((await spendOfDays(runtime, bob, now, 7)).lines.every((line) => line.provider === "d")).toBe(true);
    // Five days back is the first day shown: the jobs of the 20th are outside a 5-day view.
    expect((await spendOfDays(runtime, LOCAL_CALLER, now, 5)).lines).toEqual([]);
    expect((await spendOfDays(runtime, LOCAL_CALLER, now, 6)).lines.length).toBeGreaterThan(0);
    // Today is included: asked on the jobs' own day, one day holds them.
    expect((await spendOfDays(runtime, LOCAL_CALLER, T0 + 3_600_000, 1)).lines.length).toBeGreaterThan(0);
  });
});

describe("spendPeriod: the same period for the API, the CLI and the dashboard", () => {
  const now = Date.UTC(2026, 10, 29, 15, 30);

  it("by default the 30 days before now", () => {
    expect(spendPeriod(undefined, undefined, now)).toEqual({ from: now - 30 * DAY, to: now });
  });

  it("a day is inclusive at both ends: from=D&to=D is that whole day", () => {
    expect(spendPeriod("2026-11-27", "2026-11-27", now)).toEqual({ from: Date.UTC(2026, 10, 27), to: Date.UTC(2026, 10, 28) });
    expect(spendPeriod(undefined, "2026-11-27", now)).toEqual({ from: Date.UTC(2026, 10, 28) - 30 * DAY, to: Date.UTC(2026, 10, 28) });
  });

  it("a time is taken as given, as ISO 8601 or milliseconds since the epoch", () => {
    expect(spendPeriod("2026-11-27T10:00:00Z", "1796000000000", now)).toEqual({ from: Date.UTC(2026, 10, 27, 10), to: 1_796_000_000_000 });
    expect(spendPeriod("0", "1", now)).toEqual({ from: 0, to: 1 });
    // A time with an offset ends in digits and is still a time, not a count of milliseconds.
    expect(spendPeriod("2026-11-27T10:00:00.000+00:00", undefined, now).from).toBe(Date.UTC(2026, 10, 27, 10));
    // Text before a day makes it no day.
    expect(() => spendPeriod("x2026-11-27", undefined, now)).toThrow('"x2026-11-27" is not a time');
  });

  it("a day not on the calendar, or text that is no time, is refused naming its end and what is allowed", () => {
    const refusal = (from: string | undefined, to: string | undefined) => {
      try {
        spendPeriod(from, to, now);
      } catch (error) {
        return error as InputError;
      }
      throw new Error("not refused");
    };
    const allowed = "a day (YYYY-MM-DD, UTC, inclusive), an ISO 8601 time (2026-11-27T10:00:00Z) or milliseconds since the epoch";
    expect(refusal("2026-02-30", undefined)).toMatchObject({ field: "from", allowed });
    expect(refusal("2026-02-30", undefined).message).toContain('"2026-02-30" is not a day of the calendar');
    expect(refusal(undefined, "2026-13-01")).toMatchObject({ field: "to" });
    expect(refusal(undefined, "soon")).toMatchObject({ field: "to", allowed });
    expect(refusal(undefined, "soon").message).toContain('"soon" is not a time');
    expect(refusal(`${"x".repeat(100)}`, undefined).message).toContain(`"${"x".repeat(40)}" is not a time`);
    expect(refusal(`${"x".repeat(100)}`, undefined).message).not.toContain("x".repeat(41));
    // Too large to be a whole millisecond count.
    expect(refusal("99999999999999999999", undefined)).toMatchObject({ field: "from" });
  });

  it("a period that ends before it starts, or is empty, is refused naming from; one longer than 366 days naming to", () => {
    expect(() => spendPeriod("2026-11-28", "2026-11-27", now)).toThrow(expect.objectContaining({ field: "from", allowed: "from earlier than to" }));
    expect(() => spendPeriod("2026-11-28", "2026-11-27", now)).toThrow("from: must be before to (a day given as to is included: from=2026-11-28&to=2026-11-28 is that day)");
    expect(() => spendPeriod("100", "100", now)).toThrow(expect.objectContaining({ field: "from" }));
    expect(spendPeriod("100", "101", now)).toEqual({ from: 100, to: 101 });
    expect(spendPeriod("0", String(366 * DAY), now)).toEqual({ from: 0, to: 366 * DAY });
    expect(() => spendPeriod("0", String(366 * DAY + 1), now)).toThrow(expect.objectContaining({ field: "to", allowed: "a period of at most 366 days" }));
    expect(() => spendPeriod("0", String(366 * DAY + 1), now)).toThrow("to: is more than 366 days after from");
  });
});

import { randomBytes } from "node:crypto";
import http, { type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { type Clock, ScaledClock } from "../../src/core/clock.js";
import type { Job, JobEvent } from "../../src/core/job.js";
import { Engine } from "../../src/engine/engine.js";
import { createLogger, type EngineLogger } from "../../src/engine/logger.js";
import { NOTIFY_LEASE_MS, NOTIFY_RETRY_HORIZON_MS, type NotifierOptions } from "../../src/engine/notify.js";
import { createDEmulator } from "../../src/sandbox/d/index.js";
import { notificationJobOf } from "../../src/app/notifications.js";
import { openStore } from "../../src/store/open.js";
import type { Store } from "../../src/store/store.js";
import { startEngineProcess } from "../helpers/engine-process.js";
import { newDJob, sqliteFactory, storeFactories } from "../helpers/stores.js";
import { until, untilJob } from "../helpers/until.js";
import { startWorld, worldEngine } from "../helpers/world.js";

/**
 * Issue 12: a job's end is POSTed to its notify_url (or MEDIAGATE_NOTIFY_URL),
 * signed with Standard Webhooks, retried with backoff for at least 24 hours,
 * every attempt in the job's events. A receiver on loopback (node:http)
 * verifies each delivery with the `standardwebhooks` package, as a real
 * receiver would; being on loopback, the engines under test allow private
 * URLs, but for the one test that shows the refusal.
 */

const SECRET = `whsec_${randomBytes(32).toString("base64")}`;

interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  /** The payload as `Webhook#verify` returned it; null when verification failed (`refusal` says why). */
  payload: { type: string; timestamp: string; data: Record<string, unknown> } | null;
  refusal: string | null;
  /** When it arrived, on the receiver's clock. */
  at: number;
}

/**
 * A receiver: answers each delivery with the next of `answers` (then 200),
 * or holds it unanswered when that is "hold". `now` is the receiver's
 * clock: the package's `verify` checks the timestamp against the system
 * clock, so under virtual time the receiver's clock is the engine's.
 */
async function startReceiver(options: { answers?: Array<number | "hold">; now?: () => number } = {}) {
  const deliveries: Delivery[] = [];
  const answers = [...(options.answers ?? [])];
  let connections = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const at = options.now?.() ?? Date.now();
      let payload: Delivery["payload"] = null;
      let refusal: string | null = null;
      const systemNow = Date.now;
      Date.now = () => at;
      try {
        payload = new Webhook(SECRET).verify(body, request.headers as Record<string, string>) as Delivery["payload"];
      } catch (error) {
        refusal = (error as Error).message;
      } finally {
        Date.now = systemNow;
      }
      deliveries.push({ headers: request.headers, body, payload, refusal, at });
      const answer = answers.shift() ?? 200;
      if (answer === "hold") return;
      response.statusCode = refusal ? 400 : answer;
      response.end();
    });
  });
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    // A token in the query, as receivers often have: it must not reach the job's log.
    url: `http://127.0.0.1:${port}/hooks/mediagate?token=rcv-t0ken`,
    deliveries,
    connections: () => connections,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function notifier(overrides: Partial<NotifierOptions> = {}): NotifierOptions {
  return { secret: SECRET, describe: notificationJobOf({ publicUrl: null }), ...overrides };
}

/** An engine that only delivers notifications (no provider), on `clock`, looking at the store often. */
function deliveringEngine(store: Store, clock: Clock, options: { allowPrivateUrls?: boolean; notifications?: NotifierOptions; log?: EngineLogger } = {}): Engine {
  const engine = new Engine({
    store,
    providers: new Map(),
    secrets: () => [SECRET],
    clock,
    idleTickMs: 10,
    allowPrivateUrls: options.allowPrivateUrls ?? true,
    notifications: options.notifications ?? notifier(),
    ...(options.log ? { log: options.log } : {}),
  });
  cleanups.push(() => engine.stop());
  return engine;
}

/** A job that ended (cancelled before submit), owing a notification to `notifyUrl`. */
async function endedJob(store: Store, ref: string, at: number, notifyUrl: string | null) {
  await store.insertJobs([newDJob(ref, { notifyUrl })], at);
  return (await store.transition(`job_${ref}`, { state: "queued" }, "cancelled", { reason: "cancelled by the user" }, "cancelled by the user", at))!;
}

/** What an attempt's event says of it. */
interface AttemptDetail {
  notification: string;
  attempt: number;
  status: number | null;
  outcome: "delivered" | "retry" | "given_up";
  url: string;
}

/** The job's events that record a notification attempt. */
async function attemptEvents(store: Store, jobId: string): Promise<Array<JobEvent & { detail: AttemptDetail }>> {
  const events = await store.events(jobId);
  return events.filter((event) => (event.detail as Partial<AttemptDetail> | null)?.notification !== undefined).map((event) => ({ ...event, detail: event.detail as AttemptDetail }));
}

/** Jumps the clock to the notification's next attempt, and waits until that attempt is recorded. */
async function nextAttempt(store: Store, jobId: string, clock: ScaledClock, recorded: number): Promise<void> {
  const [owed] = await store.notifications(jobId);
  clock.advance(Math.max(0, owed!.nextAttemptAt - clock.now()));
  await until(async () => (await attemptEvents(store, jobId)).length >= recorded, `attempt ${recorded} to be recorded`);
}

describe("notifications out, from a sandbox job's end (SQLite)", () => {
  it("a D job that succeeds is POSTed once to its notify_url, signed (verified with standardwebhooks), the job as the API answers it without local paths, the delivery in its events", async () => {
    const world = await startWorld([createDEmulator({ renderTimeMs: 200 })]);
    cleanups.push(() => world.close());
    const { store, cleanup } = await sqliteFactory.open();
    cleanups.push(cleanup);
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const { engine, enqueue } = worldEngine(world, store, { notifications: notifier(), allowPrivateUrls: true });
    cleanups.push(() => engine.stop());
    const job = await enqueue({ provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse, notified", width: 256, height: 256, seed: 7 } }, "notified-1", { notifyUrl: receiver.url });
    engine.start();
    const done = await untilJob(engine, store, job.id, (current) => current.state === "succeeded");
    await until(async () => (await store.notifications(job.id))[0]?.deliveredAt != null, "the notification to be delivered");
    await engine.stop();

    expect(receiver.deliveries).toHaveLength(1);
    const [delivery] = receiver.deliveries;
    expect(delivery!.refusal).toBeNull();
    const [owed] = await store.notifications(job.id);
    expect(owed).toMatchObject({ type: "job.succeeded", attempts: 1, lastStatus: 200, givenUpAt: null, createdAt: done.finishedAt });
    expect(delivery!.headers).toMatchObject({ "webhook-id": owed!.id, "content-type": "application/json" });
    expect(delivery!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(Math.abs(Number(delivery!.headers["webhook-timestamp"]) * 1000 - delivery!.at)).toBeLessThan(5_000);
    expect(delivery!.body).toBe(owed!.body);

    const payload = delivery!.payload!;
    expect(payload).toMatchObject({ type: "job.succeeded", timestamp: new Date(done.finishedAt!).toISOString() });
    expect(payload.data).toMatchObject({ id: job.id, ref: "notified-1", state: "succeeded", provider: "d", notify_url: receiver.url.replace(/\/hooks.*$/, "/[redacted]"), error: null });
    const outputs = payload.data.outputs as Array<Record<string, unknown>>;
    const saved = await store.outputs(job.id);
    expect(outputs).toHaveLength(saved.length);
    expect(outputs[0]).toMatchObject({ href: `/v1/jobs/${job.id}/outputs/0`, sha256: saved[0]!.sha256, bytes: saved[0]!.bytes, content_type: "image/png" });
    // The server's disk layout stays on the server.
    expect(outputs[0]).not.toHaveProperty("path");
    expect(delivery!.body).not.toContain(saved[0]!.path);

    const [recorded, ...more] = await attemptEvents(store, job.id);
    expect(more).toEqual([]);
    expect(recorded!.reason).toMatch(/^notification job\.succeeded \(msg_\w+\) delivered to http:\/\/127\.0\.0\.1:\d+\/\[redacted\] \(attempt 1: HTTP 200 in \d+ ms\)$/);
    expect(recorded!.detail).toMatchObject({ notification: owed!.id, attempt: 1, status: 200, outcome: "delivered" });
    // The receiver's token (in the query) and the signing secret are in no event.
    const log = JSON.stringify(await store.events(job.id));
    expect(log).not.toContain("rcv-t0ken");
    expect(log).not.toContain(SECRET.slice(6));
  });

  it("a crash (kill -9) in the middle of a delivery loses nothing: the next engine on the store sends the same notification, same webhook-id and bytes, once the dead one's claim lapses", async () => {
    const receiver = await startReceiver({ answers: ["hold", 200], now: () => world.sandbox.clock.now() });
    cleanups.push(() => receiver.close());
    // The dead engine learns where to notify from MEDIAGATE_NOTIFY_URL, as a deployment would.
    const world = await startWorld([createDEmulator({ renderTimeMs: 200 })], {
      env: { MEDIAGATE_NOTIFY_URL: receiver.url, MEDIAGATE_NOTIFY_SECRET: SECRET, MEDIAGATE_ALLOW_PRIVATE_URLS: "1" },
    });
    cleanups.push(() => world.close());
    const store = await openStore(world.env.MEDIAGATE_STORE!);
    cleanups.push(() => store.close());
    const next = worldEngine(world, store, { virtualTime: true, notifications: notifier(), allowPrivateUrls: true, idleTickMs: 10 });
    cleanups.push(() => next.engine.stop());
    const job = await next.enqueue({ provider: "d", model: "gen-2-pro", input: { prompt: "a crash mid-delivery", width: 256, height: 256 } }, "crash-1");
    const doomed = await startEngineProcess(world, { maxMs: 60_000 });
    cleanups.push(async () => void (await doomed.kill()));

    await until(() => receiver.deliveries.length === 1, "the first attempt to reach the receiver (held unanswered)", 20_000);
    expect(await doomed.kill()).toBe("SIGKILL");
    const [claimed] = await store.notifications(job.id);
    expect(claimed).toMatchObject({ type: "job.succeeded", url: receiver.url, attempts: 1, deliveredAt: null, givenUpAt: null });
    expect((await store.getJob(job.id))!.state).toBe("succeeded");

    next.engine.start();
    // Not before the dead engine's claim lapses: the attempt it was making might still be answered.
    const iterations = next.engine.iterations;
    await until(() => next.engine.iterations > iterations + 20, "the next engine to look at the store a few times");
    expect(receiver.deliveries).toHaveLength(1);
    world.sandbox.clock.advance(NOTIFY_LEASE_MS);
    await until(async () => (await store.notifications(job.id))[0]?.deliveredAt != null, "the next engine to deliver it");

    expect(receiver.deliveries).toHaveLength(2);
    const [lost, delivered] = receiver.deliveries;
    expect(delivered!.refusal).toBeNull();
    expect(delivered!.headers["webhook-id"]).toBe(claimed!.id);
    expect(lost!.headers["webhook-id"]).toBe(claimed!.id);
    expect(delivered!.body).toBe(lost!.body);
    expect(delivered!.payload).toMatchObject({ type: "job.succeeded", data: { id: job.id, state: "succeeded" } });
    expect(await store.notifications(job.id)).toMatchObject([{ attempts: 2, lastStatus: 200 }]);
    // The dead engine's attempt left no record; the one that delivered says it was the second.
    expect((await attemptEvents(store, job.id)).map((event) => [event.detail.attempt, event.detail.outcome])).toEqual([[2, "delivered"]]);
  });
});

for (const factory of storeFactories) {
  describe(`notifications out: retries, refusals and claims (${factory.name})`, () => {
    async function setUp(answers: Array<number | "hold"> = []) {
      const { store, cleanup } = await factory.open();
      cleanups.push(cleanup);
      const clock = new ScaledClock(1);
      const receiver = await startReceiver({ answers, now: () => clock.now() });
      cleanups.push(() => receiver.close());
      return { store, clock, receiver };
    }

    it("a receiver answering 500 twice then 200 gets three attempts under one webhook-id, the same signed bytes each time, backing off, each attempt in the job's events", async () => {
      const { store, clock, receiver } = await setUp([500, 500, 200]);
      const job = await endedJob(store, "retried", clock.now(), receiver.url);
      deliveringEngine(store, clock).start();
      await until(async () => (await attemptEvents(store, job.id)).length === 1, "the first attempt");
      await nextAttempt(store, job.id, clock, 2);
      await nextAttempt(store, job.id, clock, 3);

      expect(receiver.deliveries).toHaveLength(3);
      const [owed] = await store.notifications(job.id);
      expect(owed).toMatchObject({ type: "job.cancelled", attempts: 3, lastStatus: 200, givenUpAt: null });
      expect(owed!.deliveredAt).not.toBeNull();
      for (const delivery of receiver.deliveries) {
        expect(delivery.refusal).toBeNull();
        expect(delivery.headers["webhook-id"]).toBe(owed!.id);
        expect(delivery.body).toBe(receiver.deliveries[0]!.body);
      }
      expect(receiver.deliveries[0]!.payload).toMatchObject({ type: "job.cancelled", data: { id: job.id, state: "cancelled" } });
      // Signed afresh at each attempt, with that attempt's time.
      const stamps = receiver.deliveries.map((delivery) => Number(delivery.headers["webhook-timestamp"]));
      expect(stamps[1]! - stamps[0]!).toBeGreaterThanOrEqual(15);
      expect(stamps[2]! - stamps[1]!).toBeGreaterThanOrEqual(30);
      const gaps = [receiver.deliveries[1]!.at - receiver.deliveries[0]!.at, receiver.deliveries[2]!.at - receiver.deliveries[1]!.at];
      expect(gaps[0]).toBeGreaterThanOrEqual(15_000);
      expect(gaps[0]).toBeLessThan(35_000);
      expect(gaps[1]).toBeGreaterThanOrEqual(30_000);
      expect(gaps[1]).toBeLessThan(65_000);

      const events = await attemptEvents(store, job.id);
      expect(events.map((event) => [event.detail.attempt, event.detail.status, event.detail.outcome])).toEqual([
        [1, 500, "retry"],
        [2, 500, "retry"],
        [3, 200, "delivered"],
      ]);
      expect(events[0]!.reason).toMatch(/^notification job\.cancelled \(msg_\w+\) attempt 1 to http:\/\/127\.0\.0\.1:\d+\/\[redacted\] failed \(HTTP 500, \d+ ms\); next attempt in \d+ s$/);
      expect(events.every((event) => event.fromState === "cancelled" && event.toState === "cancelled")).toBe(true);
    });

    it("a receiver that answers 410 Gone is not tried again", async () => {
      const { store, clock, receiver } = await setUp([410]);
      const job = await endedJob(store, "gone", clock.now(), receiver.url);
      const engine = deliveringEngine(store, clock);
      engine.start();
      await until(async () => (await store.notifications(job.id))[0]?.givenUpAt != null, "the notification to be given up");
      clock.advance(2 * 3_600_000);
      const iterations = engine.iterations;
      await until(() => engine.iterations > iterations + 20, "the engine to look at the store a few times more");
      expect(receiver.deliveries).toHaveLength(1);
      expect(await store.notifications(job.id)).toMatchObject([{ attempts: 1, lastStatus: 410, lastError: "http_410", deliveredAt: null }]);
      const [event] = await attemptEvents(store, job.id);
      expect(event!.reason).toMatch(/not retried: http:\/\/127\.0\.0\.1:\d+\/\[redacted\] answered 410 Gone \(attempt 1\)$/);
    });

    it("a receiver that keeps failing is retried for at least 24 hours, at most an hour apart, then given up; every attempt recorded", async () => {
      const { store, clock, receiver } = await setUp(Array.from({ length: 200 }, () => 503));
      const endedAt = clock.now();
      const job = await endedJob(store, "failing", endedAt, receiver.url);
      deliveringEngine(store, clock).start();
      await until(async () => (await attemptEvents(store, job.id)).length === 1, "the first attempt");
      for (let attempt = 2; (await store.notifications(job.id))[0]!.givenUpAt === null; attempt++) {
        if (attempt > 100) throw new Error("still retrying after 100 attempts");
        await nextAttempt(store, job.id, clock, attempt);
      }
      const [owed] = await store.notifications(job.id);
      const times = receiver.deliveries.map((delivery) => delivery.at);
      expect(owed!.attempts).toBe(times.length);
      expect(new Set(receiver.deliveries.map((delivery) => delivery.headers["webhook-id"]))).toEqual(new Set([owed!.id]));
      // The last attempt came after the horizon, the one before it within: no attempt more than needed.
      expect(times.at(-1)! - endedAt).toBeGreaterThanOrEqual(NOTIFY_RETRY_HORIZON_MS);
      expect(times.at(-2)! - endedAt).toBeLessThan(NOTIFY_RETRY_HORIZON_MS);
      const gaps = times.slice(1).map((at, index) => at - times[index]!);
      expect(Math.max(...gaps)).toBeLessThanOrEqual(3_600_000 + 5_000);
      expect(gaps[0]).toBeLessThan(35_000);
      // Exponential, then capped: 9 doublings reach the hour; the rest of the day takes 23 to 46 more.
      expect(times.length).toBeGreaterThanOrEqual(25);
      expect(times.length).toBeLessThanOrEqual(60);
      const events = await attemptEvents(store, job.id);
      expect(events).toHaveLength(times.length);
      expect(events.slice(0, -1).every((event) => event.detail.outcome === "retry" && event.detail.status === 503)).toBe(true);
      expect(events.at(-1)!.detail.outcome).toBe("given_up");
      expect(events.at(-1)!.reason).toMatch(new RegExp(`given up after ${times.length} attempts over 2\\d h: the last to http://127\\.0\\.0\\.1:\\d+/\\[redacted\\] failed \\(HTTP 503\\)$`));
    });

    it("without MEDIAGATE_ALLOW_PRIVATE_URLS a notify URL on a private or loopback address (or plain http) is refused at send time: nothing is sent, and the job's events say why", async () => {
      const { store, clock, receiver } = await setUp();
      // As MEDIAGATE_NOTIFY_URL could name it (the API refuses such a notify_url at once; a name may also resolve there later).
      store.setNotificationPolicy({ defaultUrl: `https://127.0.0.1:${receiver.port}/hook`, events: "terminal" });
      const loopback = await endedJob(store, "loopback", clock.now(), null);
      const plain = await endedJob(store, "plain", clock.now(), `http://hooks.example.com:${receiver.port}/hook`);
      deliveringEngine(store, clock, { allowPrivateUrls: false }).start();
      await until(async () => (await store.notifications(loopback.id))[0]?.givenUpAt != null && (await store.notifications(plain.id))[0]?.givenUpAt != null, "both to be refused");
      expect(receiver.connections()).toBe(0);
      expect(await store.notifications(loopback.id)).toMatchObject([{ attempts: 1, lastStatus: null, lastError: "unsafe_url", deliveredAt: null }]);
      const [refused] = await attemptEvents(store, loopback.id);
      expect(refused!.reason).toMatch(/not sent: refused URL https:\/\/127\.0\.0\.1:\d+\/\[redacted\]: 127\.0\.0\.1 resolves to a loopback address/);
      expect(refused!.reason).toMatch(/MEDIAGATE_ALLOW_PRIVATE_URLS=1 allows/);
      const [http] = await attemptEvents(store, plain.id);
      expect(http!.reason).toMatch(/scheme http: is not allowed; https only/);
    });

    it("without MEDIAGATE_NOTIFY_SECRET nothing is sent unsigned: the notification is given up, the job's events say why, and the engine warns at start when MEDIAGATE_NOTIFY_URL is set", async () => {
      const { store, clock, receiver } = await setUp();
      let logged = "";
      const log = createLogger({ level: "warn", secrets: () => [], destination: new Writable({ write: (chunk: Buffer, _encoding, done) => ((logged += chunk.toString()), done()) }) });
      const job = await endedJob(store, "unsigned", clock.now(), receiver.url);
      deliveringEngine(store, clock, { notifications: notifier({ secret: null, defaultUrl: receiver.url }), log }).start();
      await until(async () => (await store.notifications(job.id))[0]?.givenUpAt != null, "the notification to be given up");
      expect(receiver.connections()).toBe(0);
      expect(await store.notifications(job.id)).toMatchObject([{ lastError: "no_secret", body: null }]);
      const [event] = await attemptEvents(store, job.id);
      expect(event!.reason).toMatch(/not sent: MEDIAGATE_NOTIFY_SECRET is not set, and notifications are only sent signed$/);
      expect(logged).toContain("MEDIAGATE_NOTIFY_URL is set but MEDIAGATE_NOTIFY_SECRET is not");
    });

    it("a command's engine under MEDIAGATE_NOTIFY_URL delivers what its own batch's jobs owe while it runs (their ends and the batch's batch.completed), and nothing of another batch's; what it leaves is counted as owed", async () => {
      const { store, clock, receiver } = await setUp();
      store.setNotificationPolicy({ defaultUrl: receiver.url, events: "terminal" });
      const at = clock.now();
      await store.insertJobs([newDJob("mine-1", { batchId: "batch_mine" }), newDJob("mine-2", { batchId: "batch_mine" }), newDJob("theirs", { batchId: "batch_theirs" })], at);
      for (const ref of ["mine-1", "mine-2", "theirs"]) await store.transition(`job_${ref}`, { state: "queued" }, "cancelled", { reason: "cancelled by the user" }, "cancelled by the user", at);
      // Each job's end, and each batch's: its last job's end owes batch.completed.
      expect(await store.notificationsOwed({ batchId: "batch_mine" })).toEqual({ owed: 3, neverTried: 3 });
      const command = deliveringEngine(store, clock, { notifications: notifier({ defaultUrl: receiver.url }) });
      command.restrictTo({ batchId: "batch_mine" });
      command.start();
      await until(async () => (await store.notificationsOwed({ batchId: "batch_mine" })).owed === 0, "the command's engine to deliver its batch's notifications");
      const iterations = command.iterations;
      await until(() => command.iterations > iterations + 20, "the command's engine to look at the store a few times more");
      await command.stop();
      expect(receiver.deliveries.filter((delivery) => delivery.payload?.type !== "batch.completed").map((delivery) => delivery.payload?.data.id).sort()).toEqual(["job_mine-1", "job_mine-2"]);
      // Without describeBatch (the entry point's API shape), the batch as the store counts it.
      expect(receiver.deliveries.filter((delivery) => delivery.payload?.type === "batch.completed").map((delivery) => delivery.payload?.data)).toEqual([
        { batch_id: "batch_mine", jobs: 2, byState: { cancelled: 2 }, estimateMicroUsd: 60_000, unpriced: 0, chargedMicroUsd: 0 },
      ]);
      expect(await store.notificationsOwed({ batchId: "batch_theirs" })).toEqual({ owed: 2, neverTried: 2 });
      expect(await store.notificationsOwed({ jobIds: ["job_theirs", "job_mine-1"] })).toEqual({ owed: 2, neverTried: 2 });
    });

    it("a notification owed by a job that ended where nothing delivered it (a command's engine without MEDIAGATE_NOTIFY_URL, or one that died right after the change) is delivered by the next engine on the store", async () => {
      const { store, clock, receiver } = await setUp();
      const job = await endedJob(store, "left", clock.now(), receiver.url);
      // A command's engine without MEDIAGATE_NOTIFY_URL delivers nothing: its jobs have no notify_url (only the API's do).
      const command = deliveringEngine(store, clock);
      command.restrictTo({ jobIds: [job.id] });
      command.start();
      const iterations = command.iterations;
      await until(() => command.iterations > iterations + 20, "the command's engine to look at the store a few times");
      await command.stop();
      expect(receiver.deliveries).toHaveLength(0);
      deliveringEngine(store, clock).start();
      await until(async () => (await store.notifications(job.id))[0]?.deliveredAt != null, "the next engine to deliver it");
      expect(receiver.deliveries.map((delivery) => delivery.payload?.data.id)).toEqual([job.id]);
    });

    it("two engines on one store never send the same attempt: each notification arrives once", async () => {
      const { store, clock, receiver } = await setUp();
      const jobs: Job[] = [];
      for (let index = 0; index < 12; index++) jobs.push(await endedJob(store, `shared-${index}`, clock.now(), receiver.url));
      deliveringEngine(store, clock).start();
      deliveringEngine(store, clock).start();
      await until(async () => {
        for (const job of jobs) if ((await store.notifications(job.id))[0]?.deliveredAt == null) return false;
        return true;
      }, "every notification to be delivered");
      const ids = receiver.deliveries.map((delivery) => delivery.headers["webhook-id"]);
      expect(ids).toHaveLength(12);
      expect(new Set(ids).size).toBe(12);
      expect(receiver.deliveries.every((delivery) => delivery.refusal === null)).toBe(true);
    });
  });
}

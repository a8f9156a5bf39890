import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { WEBHOOK_RETRY_DELAYS_MS } from "../../src/sandbox/b/index.js";
import { IMAGE_TO_VIDEO, startB, startReceiver, submit, VALID_IMAGE_TO_VIDEO, type BSandbox, type Receiver } from "./b-http.js";

let world: BSandbox | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await world?.sandbox.stop();
  await receiver?.close();
  world = undefined;
  receiver = undefined;
});

function headersOf(delivery: Receiver["received"][number]): Record<string, string> {
  return Object.fromEntries(Object.entries(delivery.headers).map(([name, value]) => [name, String(value)]));
}

describe("B webhooks", () => {
  it("B: webhook deliveries carry a valid Standard Webhooks signature", async () => {
    receiver = await startReceiver();
    world = await startB({ allowLocalWebhookUrls: true });
    const { body } = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    expect(world.b.job(body.id)!.body.webhook_url).toBeUndefined();
    world.advance(11_000);
    await world.b.flushWebhooks();
    expect(receiver.received).toHaveLength(1);
    const [delivery] = receiver.received;
    const headers = headersOf(delivery!);
    expect(headers["webhook-id"]).toMatch(/^msg_/);
    const payload = new Webhook(world.b.webhookSecret).verify(delivery!.body, headers) as Record<string, any>;
    expect(payload).toMatchObject({ id: body.id, status: "completed", billing: null, output: { media_type: "video" } });
    expect(() => new Webhook(world!.b.webhookSecret).verify(delivery!.body.replace("completed", "failed"), headers)).toThrow();
    expect(world.b.deliveries[0]).toMatchObject({ jobId: body.id, state: "delivered", attempts: [{ attempt: 1, statusCode: 200 }] });
  });

  it("B: webhook-timestamp is wall-clock time by default, so a receiver outside the sandbox verifies deliveries however far virtual time runs ahead", async () => {
    receiver = await startReceiver();
    world = await startB({ allowLocalWebhookUrls: true }, 60);
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    // An hour of virtual time: far past the Standard Webhooks tolerance of five minutes.
    world.advance(3_600_000);
    await world.b.flushWebhooks();
    const [delivery] = receiver.received;
    const sentAt = Number(delivery!.headers["webhook-timestamp"]);
    expect(Math.abs(sentAt - Date.now() / 1000)).toBeLessThan(5);
    expect(new Webhook(world.b.webhookSecret).verify(delivery!.body, headersOf(delivery!))).toMatchObject({ status: "completed" });
    expect(world.b.deliveries[0]!.attempts[0]!.timestamp).toBe(sentAt);
  });

  it("B: webhookTimestamps \"virtual\" signs with the sandbox's clock, for a receiver on that clock", async () => {
    receiver = await startReceiver();
    world = await startB({ allowLocalWebhookUrls: true, webhookTimestamps: "virtual" });
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    world.advance(3_600_000);
    await world.b.flushWebhooks();
    const [delivery] = receiver.received;
    expect(Math.abs(Number(delivery!.headers["webhook-timestamp"]) - world.sandbox.clock.now() / 1000)).toBeLessThan(5);
    // Signed correctly, but an hour ahead of a wall-clock receiver.
    expect(() => new Webhook(world!.b.webhookSecret).verify(delivery!.body, headersOf(delivery!))).toThrow(/too new/);
  });

  it("B: failures and refusals at submit are delivered too", async () => {
    receiver = await startReceiver();
    world = await startB({ allowLocalWebhookUrls: true });
    world.b.failNextJobs(1);
    const failed = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    const rejected = await submit(world, IMAGE_TO_VIDEO, { image: "https://x.example/a.png", webhook_url: receiver.url });
    await world.b.flushWebhooks();
    expect(receiver.received.map((delivery) => JSON.parse(delivery.body).id)).toEqual([rejected.body.id]);
    world.advance(11_000);
    await world.b.flushWebhooks();
    const last = JSON.parse(receiver.received[1]!.body);
    expect(last).toMatchObject({ id: failed.body.id, status: "failed", error: { code: "generation_failed" }, billing: null });
  });

  it("B: a delivery not answered 2xx is retried", async () => {
    receiver = await startReceiver([500, 503, 200]);
    world = await startB({ allowLocalWebhookUrls: true, webhookRetryDelaysMs: [5_000, 300_000] });
    const { body } = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    world.advance(11_000);
    await world.b.flushWebhooks();
    expect(receiver.received).toHaveLength(1);
    expect(world.b.deliveries[0]!.state).toBe("retrying");
    world.advance(5_000);
    await world.b.flushWebhooks();
    expect(receiver.received).toHaveLength(2);
    world.advance(300_000);
    await world.b.flushWebhooks();
    expect(receiver.received).toHaveLength(3);
    const ids = new Set(receiver.received.map((delivery) => delivery.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    const delivery = world.b.deliveries[0]!;
    expect(delivery).toMatchObject({ jobId: body.id, state: "delivered" });
    expect(delivery.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 503, 200]);
  });

  it("B: retries stop after the schedule, about 55 hours by default", async () => {
    receiver = await startReceiver([500]);
    world = await startB({ allowLocalWebhookUrls: true });
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    world.advance(11_000);
    await world.b.flushWebhooks();
    for (const delayMs of WEBHOOK_RETRY_DELAYS_MS) {
      world.advance(delayMs);
      await world.b.flushWebhooks();
    }
    const delivery = world.b.deliveries[0]!;
    expect(delivery.state).toBe("failed");
    expect(delivery.attempts).toHaveLength(WEBHOOK_RETRY_DELAYS_MS.length + 1);
    expect(receiver.received).toHaveLength(WEBHOOK_RETRY_DELAYS_MS.length + 1);
    const spanHours = (delivery.attempts.at(-1)!.at - delivery.attempts[0]!.at) / 3_600_000;
    expect(spanHours).toBeGreaterThan(54);
    expect(spanHours).toBeLessThan(56);
  });

  it("B: retry timers run on scaled virtual time, without clock jumps", async () => {
    receiver = await startReceiver([500, 500, 200]);
    // 10 virtual minutes between attempts are 6 real ms at this scale.
    world = await startB({ allowLocalWebhookUrls: true, renderTimeMs: 1_000, queueTimeMs: 0, webhookRetryDelaysMs: [600_000, 600_000] }, 100_000);
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    const deadline = Date.now() + 3_000;
    while (world.b.deliveries[0]?.state !== "delivered" && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(world.b.deliveries[0]!.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 500, 200]);
  });

  it("B: a duplicated delivery keeps its webhook-id; a dropped one is never sent", async () => {
    receiver = await startReceiver();
    world = await startB({ allowLocalWebhookUrls: true });
    world.b.injectWebhookFault("duplicate");
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    world.b.injectWebhookFault("drop");
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    world.advance(12_000);
    await world.b.flushWebhooks();
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[0]!.headers["webhook-id"]).toBe(receiver.received[1]!.headers["webhook-id"]);
    expect(receiver.received[0]!.body).toBe(receiver.received[1]!.body);
    expect(world.b.deliveries.map((delivery) => delivery.state)).toEqual(["delivered", "delivered", "dropped"]);
  });

  it("B: a delayed delivery arrives later; a re-serialised one is still correctly signed over its bytes", async () => {
    receiver = await startReceiver();
    world = await startB({ allowLocalWebhookUrls: true });
    world.b.injectWebhookFault("delay", 1, 60_000);
    world.b.injectWebhookFault("reserialize");
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    world.advance(11_000);
    await world.b.flushWebhooks();
    expect(receiver.received).toHaveLength(0);
    world.advance(60_000);
    await world.b.flushWebhooks();
    expect(receiver.received).toHaveLength(1);
    const delivery = receiver.received[0]!;
    expect(delivery.body).toContain("\n  ");
    // Signed with the virtual clock, now 71 s ahead of the real one: within the tolerance.
    expect(new Webhook(world.b.webhookSecret).verify(delivery.body, headersOf(delivery))).toMatchObject({ status: "completed" });
  });

  it("B: a non-https or loopback webhook_url answers 400 unless local URLs are allowed", async () => {
    world = await startB();
    for (const webhookUrl of ["http://hooks.example.com/b", "https://127.0.0.1/hook", "https://localhost/hook", "https://10.1.2.3/hook", "ftp://hooks.example.com", "not a url", 42]) {
      const answer = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: webhookUrl });
      expect(answer.status, String(webhookUrl)).toBe(400);
      expect(answer.body.error.code).toBe("invalid_webhook_url");
    }
    expect(world.b.jobs).toHaveLength(0);
    const accepted = await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: "https://hooks.example.com/b" });
    expect(accepted.status).toBe(200);
    world.advance(11_000);
    await world.b.flushWebhooks();
    // The sandbox makes no outside requests.
    expect(world.b.deliveries[0]!.state).toBe("not_sent");
  });

  it("B: closing the sandbox stops pending retries", async () => {
    receiver = await startReceiver([500]);
    world = await startB({ allowLocalWebhookUrls: true });
    await submit(world, IMAGE_TO_VIDEO, { ...VALID_IMAGE_TO_VIDEO, webhook_url: receiver.url });
    world.advance(11_000);
    await world.b.flushWebhooks();
    await world.sandbox.stop();
    world.advance(10 * 3_600_000);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(receiver.received).toHaveLength(1);
    world = undefined;
  });
});

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/core/errors.js";
import type { WebhookDelivery } from "../../../src/providers/adapter.js";
import { BWebhookError, createBAdapter, verifyBWebhook, WEBHOOK_TOLERANCE_MS } from "../../../src/providers/b/index.js";
import { SANDBOX_B_WEBHOOK_SECRET } from "../../../src/sandbox/b/index.js";
import { imageToVideo, QUEUE_MS, RENDER_MS, startB, thrown, type BBed } from "./bed.js";

const OTHER_SECRET = `whsec_${Buffer.from("somebody else's signing secret").toString("base64")}`;

/** A webhook receiver on loopback that keeps every delivery exactly as received. */
interface Receiver {
  url: string;
  deliveries: WebhookDelivery[];
}

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function startReceiver(): Promise<Receiver> {
  const deliveries: WebhookDelivery[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const headers: Record<string, string | undefined> = {};
      for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
      deliveries.push({ rawBody: Buffer.concat(chunks), headers, jobId: request.url?.split("/").pop() ?? null });
      response.writeHead(204).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/b`, deliveries };
}

/** A job submitted with a callback to the receiver, finished, and its delivery received. */
async function delivered(bed: BBed, receiver: Receiver) {
  const { submitted } = await bed.submitted(imageToVideo(), { id: "job-1", callbackUrl: `${receiver.url}/job-1` });
  bed.advance(QUEUE_MS + RENDER_MS + 1);
  await bed.emulator.flushWebhooks();
  expect(receiver.deliveries.length).toBeGreaterThan(0);
  return { submitted, delivery: receiver.deliveries[0]! };
}

async function startWithReceiver(secret = SANDBOX_B_WEBHOOK_SECRET) {
  const bed = await startB({ allowLocalWebhookUrls: true }, { webhookSecret: secret });
  return { bed, receiver: await startReceiver() };
}

describe("B webhooks (Standard Webhooks)", () => {
  it("B: a signed delivery is verified over the raw body; webhook-id is the delivery id; the job's status is reported", async () => {
    const { bed, receiver } = await startWithReceiver();
    const { submitted, delivery } = await delivered(bed, receiver);
    const verdict = await bed.adapter.webhooks!.verify(delivery, bed.context);
    expect(verdict).toMatchObject({ kind: "accepted", deliveryId: delivery.headers["webhook-id"], providerJobId: submitted.providerJobId });
    if (verdict.kind !== "accepted") throw new Error("expected accepted");
    expect(verdict.status).toMatchObject({ kind: "succeeded", providerStatus: "completed", outputs: [{ metadata: { mediaType: "video" } }] });
    // The address comes from the content call, as on a poll.
    expect(bed.requests().at(-1)!.url).toBe(`/b/v1/media/jobs/${submitted.providerJobId}/content`);
  });

  it("B: a delivery's billing is null, so the charge is settled by reading the job", async () => {
    const { bed, receiver } = await startWithReceiver();
    const { submitted, delivery } = await delivered(bed, receiver);
    expect(JSON.parse(delivery.rawBody.toString("utf8"))).toMatchObject({ id: submitted.providerJobId, billing: null });
    const verdict = await bed.adapter.webhooks!.verify(delivery, bed.context);
    if (verdict.kind !== "accepted" || !verdict.status) throw new Error("expected a status");
    bed.advance(10_000);
    const settlement = await bed.adapter.settle!(submitted, verdict.status, bed.jobContext());
    expect(settlement).toMatchObject({ kind: "settled", microUsd: 450_000 });
  });

  it("B: one byte changed in the body is refused", async () => {
    const { bed, receiver } = await startWithReceiver();
    const { delivery } = await delivered(bed, receiver);
    const rawBody = Buffer.from(delivery.rawBody);
    const at = rawBody.indexOf("completed");
    rawBody[at] = "C".charCodeAt(0);
    const verdict = await bed.adapter.webhooks!.verify({ ...delivery, rawBody }, bed.context);
    expect(verdict).toMatchObject({ kind: "rejected", code: "bad_signature" });
  });

  it("B: a delivery signed with another secret is refused", async () => {
    const { bed, receiver } = await startWithReceiver();
    const { delivery } = await delivered(bed, receiver);
    const stranger = createBAdapter({ baseUrl: `${bed.sandbox.url}/b`, apiKey: "sandbox-b-key", webhookSecret: OTHER_SECRET });
    expect(await stranger.webhooks!.verify(delivery, bed.context)).toMatchObject({ kind: "rejected", code: "bad_signature" });
  });

  it("B: a delivery outside the five-minute timestamp tolerance is refused, either way", async () => {
    const { bed, receiver } = await startWithReceiver();
    const { delivery } = await delivered(bed, receiver);
    bed.advance(WEBHOOK_TOLERANCE_MS + 2_000);
    expect(await bed.adapter.webhooks!.verify(delivery, bed.context)).toMatchObject({ kind: "rejected", code: "timestamp_too_old" });
    const sentAt = Number(delivery.headers["webhook-timestamp"]) * 1000;
    expect(() => verifyBWebhook(delivery.rawBody, delivery.headers, SANDBOX_B_WEBHOOK_SECRET, { nowMs: sentAt - WEBHOOK_TOLERANCE_MS - 2_000 })).toThrow(
      expect.objectContaining({ code: "timestamp_too_new" }),
    );
  });

  it("B: missing signature headers are refused", async () => {
    const { bed, receiver } = await startWithReceiver();
    const { delivery } = await delivered(bed, receiver);
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
      const headers = { ...delivery.headers, [name]: undefined };
      expect(await bed.adapter.webhooks!.verify({ ...delivery, headers }, bed.context)).toMatchObject({ kind: "rejected", code: "missing_headers" });
    }
  });

  it("B: a re-serialised delivery is verified over its exact bytes", async () => {
    const { bed, receiver } = await startWithReceiver();
    bed.emulator.injectWebhookFault("reserialize");
    const { delivery } = await delivered(bed, receiver);
    expect(delivery.rawBody.toString("utf8")).toContain("\n");
    expect((await bed.adapter.webhooks!.verify(delivery, bed.context)).kind).toBe("accepted");
  });

  it("B: a duplicated delivery carries the same webhook-id, the key to de-duplicate by", async () => {
    const { bed, receiver } = await startWithReceiver();
    bed.emulator.injectWebhookFault("duplicate");
    await delivered(bed, receiver);
    bed.advance(2_000);
    await bed.emulator.flushWebhooks();
    expect(receiver.deliveries).toHaveLength(2);
    const verdicts = await Promise.all(receiver.deliveries.map((delivery) => bed.adapter.webhooks!.verify(delivery, bed.context)));
    const ids = verdicts.map((verdict) => (verdict.kind === "accepted" ? verdict.deliveryId : null));
    expect(ids[0]).not.toBeNull();
    expect(ids[1]).toBe(ids[0]);
  });

  it("B: a failed job's delivery reports failed with its error.code", async () => {
    const { bed, receiver } = await startWithReceiver();
    bed.emulator.failNextJobs(1, { code: "generation_failed", message: "upstream said no" });
    const { delivery } = await delivered(bed, receiver);
    const verdict = await bed.adapter.webhooks!.verify(delivery, bed.context);
    expect(verdict).toMatchObject({ kind: "accepted", status: { kind: "failed", code: "generation_failed" } });
  });

  it("B: verifyBWebhook parses only after verifying (a wrongly signed body that is not JSON is bad_signature, not invalid_payload), and throws one error type", async () => {
    const { bed, receiver } = await startWithReceiver();
    const { submitted, delivery } = await delivered(bed, receiver);
    const now = { nowMs: bed.sandbox.clock.now() };
    const event = verifyBWebhook(delivery.rawBody, delivery.headers, SANDBOX_B_WEBHOOK_SECRET, now);
    expect(event).toMatchObject({ deliveryId: delivery.headers["webhook-id"], job: { id: submitted.providerJobId, status: "completed", billing: null } });
    // A body that is not JSON under a signature that does not match it: a parser run first would say invalid_payload.
    const notJson = Buffer.concat([delivery.rawBody.subarray(0, delivery.rawBody.length - 1), Buffer.from("<not json")]);
    expect(() => JSON.parse(notJson.toString("utf8"))).toThrow(SyntaxError);
    const wrong = await thrown(async () => verifyBWebhook(notJson, delivery.headers, SANDBOX_B_WEBHOOK_SECRET, now));
    expect(wrong).toBeInstanceOf(BWebhookError);
    expect(wrong).toMatchObject({ code: "bad_signature", deliveryId: null });
    // The same bytes correctly signed get as far as parsing: invalid_payload, with the delivery id, since B did send it.
    const messageId = "msg_not_json";
    const sentAt = new Date(now.nowMs);
    const signed = { "webhook-id": messageId, "webhook-timestamp": String(Math.floor(now.nowMs / 1000)), "webhook-signature": new Webhook(SANDBOX_B_WEBHOOK_SECRET).sign(messageId, sentAt, notJson) };
    expect(await thrown(async () => verifyBWebhook(notJson, signed, SANDBOX_B_WEBHOOK_SECRET, now))).toMatchObject({ code: "invalid_payload", deliveryId: messageId });
  });

  it("B: an invalid webhook secret is a configuration error naming the variable", async () => {
    expect(() => createBAdapter({ baseUrl: "http://127.0.0.1:9/b", apiKey: "k", webhookSecret: "whsec_" })).toThrow(ConfigError);
    expect(() => createBAdapter({ baseUrl: "http://127.0.0.1:9/b", apiKey: "k", webhookSecret: "whsec_" })).toThrow(/MEDIAGATE_B_WEBHOOK_SECRET/);
  });
});

import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { SANDBOX_B_WEBHOOK_SECRET } from "../../src/sandbox/b/options.js";
import { until } from "../helpers/until.js";
import { startCompatSandbox, type CompatSandbox } from "./sandbox.js";

/**
 * `standardwebhooks`, the reference Standard Webhooks package, verifying
 * sandbox B's deliveries in a receiver written as a user would write one:
 * a real HTTP server on loopback, the raw body and headers straight into
 * `Webhook#verify`, 2xx only when it verifies. The library checks
 * `webhook-timestamp` against the wall clock (five minutes either way), so
 * this is what breaks when the sandbox signs with its accelerated clock.
 */

const B_KEY = "sandbox-b-key";
const TEXT_TO_VIDEO = "vendorx/video-2.5/text-to-video";
const TIME_SCALE = 60;
/** The virtual clock after ten seconds of a sandbox at 60×: far past the library's five-minute tolerance. */
const TEN_MINUTES = 10 * 60_000;

interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  /** What `verify` returned, or null when it threw. */
  payload: Record<string, unknown> | null;
  error: string | null;
  answered: number;
}

interface Receiver {
  url: string;
  received: ReceivedDelivery[];
}

const servers: Server[] = [];
let running: CompatSandbox | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** The receiver: 204 for a verified delivery, 400 for one that is not; `failFirst` verified deliveries are answered 500 first. */
async function startReceiver(secret: string, failFirst = 0): Promise<Receiver> {
  const webhook = new Webhook(secret);
  const received: ReceivedDelivery[] = [];
  let toFail = failFirst;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      let payload: Record<string, unknown> | null = null;
      let error: string | null = null;
      try {
        payload = webhook.verify(Buffer.concat(chunks).toString("utf8"), headers) as Record<string, unknown>;
      } catch (thrown) {
        error = thrown instanceof Error ? thrown.message : String(thrown);
      }
      const answered = payload === null ? 400 : toFail-- > 0 ? 500 : 204;
      received.push({ headers: request.headers, payload, error, answered });
      response.writeHead(answered).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/b`, received };
}

async function submit(sandboxUrl: string, body: Record<string, unknown>): Promise<{ id: string; status: string }> {
  const response = await fetch(`${sandboxUrl}/b/v1/media/${TEXT_TO_VIDEO}`, {
    method: "POST",
    headers: { "x-api-key": B_KEY, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { id: string; status: string };
}

const clip = (prompt: string, webhookUrl: string) => ({ prompt, resolution: "720p", duration_s: 5, webhook_url: webhookUrl });

describe("compat: standardwebhooks verifying sandbox B's deliveries at time scale 60", () => {
  it("B via standardwebhooks: at 60× with the virtual clock ten minutes ahead, every delivery verifies (completed, failed, refused at submit, and a retry after a 500), webhook-timestamp being wall-clock time", async () => {
    running = await startCompatSandbox({ timeScale: TIME_SCALE, queueMs: { b: 1_000 }, renderMs: { b: 6_000 } });
    const { sandbox, emulators } = running;
    sandbox.clock.advance(TEN_MINUTES);
    const receiver = await startReceiver(SANDBOX_B_WEBHOOK_SECRET, 1);

    const refused = await submit(sandbox.url, { resolution: "720p", duration_s: 5, webhook_url: receiver.url });
    expect(refused.status).toBe("failed");
    emulators.b.failNextJobs(1);
    const failed = await submit(sandbox.url, clip("a paper boat sinks", receiver.url));
    const completed = await submit(sandbox.url, clip("a paper boat drifting on a pond", receiver.url));
    await until(() => emulators.b.deliveries.length === 3 && emulators.b.deliveries.every((delivery) => delivery.state === "delivered"), "three messages delivered", 5_000);

    // Four requests: the first was answered 500 and retried (5 virtual seconds later) under the same webhook-id, signed again.
    expect(receiver.received).toHaveLength(4);
    expect(receiver.received.map((delivery) => delivery.error)).toEqual([null, null, null, null]);
    expect(receiver.received.map((delivery) => delivery.answered)).toEqual([500, 204, 204, 204]);
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(receiver.received[0]!.headers["webhook-id"]);
    const nowSeconds = Date.now() / 1000;
    for (const delivery of receiver.received) expect(Math.abs(Number(delivery.headers["webhook-timestamp"]) - nowSeconds)).toBeLessThan(10);

    const byJob = new Map(receiver.received.slice(1).map((delivery) => [delivery.payload!.id, delivery.payload!]));
    expect(byJob.get(refused.id)).toMatchObject({ status: "failed", error: { code: "invalid_request" }, billing: null });
    expect(byJob.get(failed.id)).toMatchObject({ status: "failed", error: { code: "generation_failed" }, billing: null });
    expect(byJob.get(completed.id)).toMatchObject({ status: "completed", output: { media_type: "video" }, billing: null });
    expect((byJob.get(completed.id)!.usage as { video_output_tokens: number }).video_output_tokens).toBeGreaterThan(0);
  });

  it("B via standardwebhooks: signed on the sandbox's clock instead (webhookTimestamps \"virtual\"), the same receiver refuses every delivery as too new", async () => {
    running = await startCompatSandbox({ timeScale: TIME_SCALE, queueMs: { b: 1_000 }, renderMs: { b: 6_000 }, webhookTimestamps: "virtual" });
    running.sandbox.clock.advance(TEN_MINUTES);
    const receiver = await startReceiver(SANDBOX_B_WEBHOOK_SECRET);
    await submit(running.sandbox.url, clip("a paper boat drifting on a pond", receiver.url));
    await until(() => receiver.received.length >= 2, "the first attempt and its retry", 5_000);
    expect(receiver.received.every((delivery) => delivery.payload === null && delivery.answered === 400)).toBe(true);
    expect(receiver.received[0]!.error).toMatch(/timestamp too new/i);
  });
});

import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { BATCH_CANCEL_PAGE } from "../../src/app/cancel.js";
import { createToken } from "../../src/app/tokens.js";
import { serveSandbox, servedStores, type Served } from "../helpers/dashboard.js";
import { until } from "../helpers/until.js";

/**
 * Issue 37, part 4, over real HTTP against the sandbox, on both stores: a
 * batch's end is told once (`batch.completed`, signed as a job's end is, its
 * href absolute under MEDIAGATE_PUBLIC_URL), and `POST /v1/batches/{id}/cancel`
 * cancels only the caller's batch's jobs not sent yet.
 */

const SECRET = `whsec_${randomBytes(32).toString("base64")}`;

interface Received {
  type: string;
  webhookId: string;
  data: Record<string, unknown>;
}

/** A receiver that verifies every delivery with the standardwebhooks package over the raw body, as a real one would. */
async function startReceiver() {
  const received: Received[] = [];
  const refused: string[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      try {
        const payload = new Webhook(SECRET).verify(body, request.headers as Record<string, string>) as { type: string; data: Record<string, unknown> };
        received.push({ type: payload.type, webhookId: String(request.headers["webhook-id"]), data: payload.data });
        response.statusCode = 204;
      } catch (error) {
        refused.push((error as Error).message);
        response.statusCode = 400;
      }
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    refused,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function api(served: Served, secret: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${served.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, any> };
}

const dLine = (ref: string, extra: Record<string, unknown> = {}) => ({ ref, provider: "d", model: "gen-2-pro", input: { prompt: `a lighthouse ${ref}`, width: 512, height: 512 }, ...extra });

for (const kind of servedStores) {
  describe(`a batch's end and its cancel over HTTP (${kind.name})`, () => {
    it(`batch.completed: once the last job of a batch ends, one notification signed with Standard Webhooks carries its counts by state, its spend in micro-USD and its href, absolute under MEDIAGATE_PUBLIC_URL (${kind.name})`, async () => {
      const receiver = await startReceiver();
      cleanups.push(receiver.close);
      const served = await serveSandbox({
        store: kind,
        env: { MEDIAGATE_NOTIFY_URL: receiver.url, MEDIAGATE_NOTIFY_SECRET: SECRET, MEDIAGATE_ALLOW_PRIVATE_URLS: "1", MEDIAGATE_PUBLIC_URL: "https://mediagate.example/base" },
        emulators: { d: { renderTimeMs: { minMs: 100, maxMs: 200 } } },
      });
      cleanups.push(served.close);
      const { secret } = await createToken(await served.runtime.store(), { name: "alice", now: Date.now() });
      const posted = await api(served, secret, "POST", "/v1/batches", [dLine("one"), dLine("two"), dLine("three")]);
      expect(posted.status).toBe(201);
      const batchId = posted.json.batch_id as string;
      // One job's end notification each, and one for the batch.
      await until(() => receiver.received.filter((each) => each.type === "job.succeeded").length === 3 && receiver.received.some((each) => each.type === "batch.completed"), "three job.succeeded and a batch.completed", 30_000);
      expect(receiver.refused).toEqual([]);
      const ends = receiver.received.filter((each) => each.type === "batch.completed");
      expect(ends).toHaveLength(1);
      expect(ends[0]!.webhookId).toMatch(/^msg_/);
      expect(ends[0]!.data).toEqual({
        batch_id: batchId,
        jobs: 3,
        by_state: { succeeded: 3 },
        estimate_micro_usd: 90_000,
        unpriced: 0,
        charged_micro_usd: 90_000,
        href: `https://mediagate.example/base/v1/batches/${batchId}`,
        dashboard_href: `https://mediagate.example/base/batches/${batchId}`,
      });
      // The job notifications' output hrefs are absolute too.
      const job = receiver.received.find((each) => each.type === "job.succeeded")!.data as { outputs: Array<{ href: string }> };
      expect(job.outputs[0]!.href).toMatch(/^https:\/\/mediagate\.example\/base\/v1\/jobs\/.+\/outputs\/0$/);
      // The API answers the batch in the same shape.
      expect((await api(served, secret, "GET", `/v1/batches/${batchId}`)).json).toEqual(ends[0]!.data);
    }, 60_000);

    it(`POST /v1/batches/{id}/cancel cancels the batch's unsent jobs, a page of ${BATCH_CANCEL_PAGE} at a time, and never one already claimed for sending; another tenant is answered 404 and changes nothing; a bad id is one sentence naming the field (${kind.name})`, async () => {
      // No engine: every job stays queued until the test moves it.
      const served = await serveSandbox({ store: kind, engine: false });
      cleanups.push(served.close);
      const store = await served.runtime.store();
      const alice = await createToken(store, { name: "alice", now: Date.now() });
      const bob = await createToken(store, { name: "bob", now: Date.now() });
      const count = BATCH_CANCEL_PAGE * 2 + 7;
      const posted = await api(served, alice.secret, "POST", "/v1/batches", Array.from({ length: count }, (_, index) => dLine(`l-${index}`)));
      expect(posted.status).toBe(201);
      const batchId = posted.json.batch_id as string;
      const jobIds = (posted.json.jobs as Array<{ id: string }>).map((job) => job.id);
      // One job claimed for sending by an engine (its request may be leaving): it must be left alone.
      const claimed = await store.claimForSubmit(jobIds[5]!, "engine-elsewhere", [], Date.now(), 60_000);
      expect(claimed.kind).toBe("claimed");

      const refused = await api(served, bob.secret, "POST", `/v1/batches/${batchId}/cancel`);
      expect(refused.status).toBe(404);
      expect(refused.json.error.code).toBe("not_found");
      expect((await api(served, bob.secret, "GET", `/v1/batches/${batchId}`)).status).toBe(404);
      expect((await store.batchSummary(batchId)).byState).toEqual({ queued: count - 1, submitting: 1 });

      const bad = await api(served, alice.secret, "POST", `/v1/batches/${"x".repeat(5)}%20%3B/cancel`);
      expect(bad.status).toBe(422);
      expect(bad.json.error).toMatchObject({ code: "invalid_input", field: "batch" });

      const cancelled = await api(served, alice.secret, "POST", `/v1/batches/${batchId}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.json.cancelled).toBe(count - 1);
      expect(cancelled.json.batch.by_state).toEqual({ cancelled: count - 1, submitting: 1 });
      expect((await store.getJob(jobIds[5]!))!.state).toBe("submitting");
      // Again: nothing left unsent.
      expect((await api(served, alice.secret, "POST", `/v1/batches/${batchId}/cancel`)).json.cancelled).toBe(0);
      const read = await fetch(`${served.url}/v1/batches/${batchId}/cancel`, { method: "POST", headers: { authorization: `Bearer ${(await createToken(store, { name: "reader", readOnly: true, now: Date.now() })).secret}` } });
      expect(read.status).toBe(403);
    }, 60_000);
  });
}

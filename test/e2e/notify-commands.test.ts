import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { runCli } from "../helpers/cli.js";
import { batchLines, type DWorld, startDWorld } from "../helpers/d-sandbox.js";

// A command's own engine delivers the notifications its jobs owe under MEDIAGATE_NOTIFY_URL (issue 12): the built
// CLI, the sandbox's D and a receiver over real HTTP on loopback verifying each delivery with standardwebhooks.

const SECRET = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;

interface Received {
  id: string;
  /** A job's notification: its job; batch.completed: undefined (it tells `batchId`). */
  jobId: string;
  batchId?: string;
  type: string;
  at: number;
}

async function startReceiver(status: number) {
  const received: Received[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const payload = new Webhook(SECRET).verify(body, request.headers as Record<string, string>) as { type: string; data: { id: string; batch_id?: string } };
      received.push({ id: String(request.headers["webhook-id"]), jobId: payload.data.id, batchId: payload.data.batch_id, type: payload.type, at: Date.now() });
      response.statusCode = status;
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/mediagate`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let world: DWorld | undefined;
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
afterEach(async () => {
  await receiver?.close();
  await world?.close();
  world = receiver = undefined;
});

describe("notifications from a command's own engine (MEDIAGATE_NOTIFY_URL)", () => {
  it("mediagate batch and generate: each job's end, and the batch's (batch.completed), is POSTed, signed, before the command exits; nothing is left owed", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    receiver = await startReceiver(200);
    const env = { ...world.env, MEDIAGATE_NOTIFY_URL: receiver.url, MEDIAGATE_NOTIFY_SECRET: SECRET, MEDIAGATE_ALLOW_PRIVATE_URLS: "1" };
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(3));
    const batch = await runCli(["batch", file, "--json"], { env });
    const exitedAt = Date.now();
    expect(batch.code, batch.stderr).toBe(0);
    const jobIds = batch.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { id: string }).id);
    const jobEnds = receiver.received.filter((delivery) => delivery.type === "job.succeeded");
    expect(jobEnds.map((delivery) => delivery.jobId).sort()).toEqual([...jobIds].sort());
    const batchEnds = receiver.received.filter((delivery) => delivery.type === "batch.completed");
    expect(batchEnds).toHaveLength(1);
    expect(batchEnds[0]!.batchId).toMatch(/\S/);
    expect(receiver.received).toHaveLength(4);
    expect(receiver.received.every((delivery) => delivery.at <= exitedAt)).toBe(true);
    expect(new Set(receiver.received.map((delivery) => delivery.id)).size).toBe(4);
    expect(batch.stderr).not.toMatch(/not delivered/);

    const generate = await runCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a fox", "--width", "512", "--height", "512", "--json"], { env });
    expect(generate.code, generate.stderr).toBe(0);
    const generated = (JSON.parse(generate.stdout.trim()) as { id: string }).id;
    expect(receiver.received.map((delivery) => delivery.jobId)).toContain(generated);
    expect(receiver.received).toHaveLength(5);

    const store = await openSqliteStore(join(world.folder, "mediagate.db"));
    try {
      expect(await store.notificationsOwed({ jobIds: [...jobIds, generated] })).toEqual({ owed: 0, neverTried: 0 });
    } finally {
      await store.close();
    }
  });

  it("a receiver that fails: the command tries each once, exits as it would have (0), and says how many are kept for `worker` or `serve` to retry", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    receiver = await startReceiver(503);
    const env = { ...world.env, MEDIAGATE_NOTIFY_URL: receiver.url, MEDIAGATE_NOTIFY_SECRET: SECRET, MEDIAGATE_ALLOW_PRIVATE_URLS: "1" };
    const file = join(world.folder, "jobs.jsonl");
    writeFileSync(file, batchLines(2));
    const batch = await runCli(["batch", file, "--json"], { env });
    expect(batch.code, batch.stderr).toBe(0);
    // Each job's end and the batch's.
    expect(receiver.received).toHaveLength(3);
    expect(batch.stderr).toMatch(/3 notification\(s\) to MEDIAGATE_NOTIFY_URL not delivered yet; they are kept in the store, and `mediagate worker` or `mediagate serve` on it retries them/);
    const jobIds = batch.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { id: string }).id);
    const store = await openSqliteStore(join(world.folder, "mediagate.db"));
    try {
      // batch.completed is owed under the job whose end completed the batch.
      expect(await store.notificationsOwed({ jobIds })).toEqual({ owed: 3, neverTried: 0 });
    } finally {
      await store.close();
    }
  });
});

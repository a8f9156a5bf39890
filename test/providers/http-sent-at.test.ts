import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/clock.js";
import { ProviderHttp, type ProviderHttpOptions } from "../../src/providers/http.js";
import { nodeTransport } from "../../src/providers/node-transport.js";

// When a request left, as the poll scheduler learns it (issue 10): the moment it was handed to the transport, after
// its rate token, not when its step began. Real HTTP over loopback, the real clock.

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A loopback server that answers 200 and notes when each request reached it. */
async function receiver(): Promise<{ url: string; receivedAt: number[] }> {
  const receivedAt: number[] = [];
  server = createServer((request, response) => {
    receivedAt.push(Date.now());
    request.resume();
    request.on("end", () => response.end('{"ok":true}'));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`, receivedAt };
}

/** A D client on the real clock that may send to loopback, with `options` added (a rate wait, a transport, a backoff). */
function loopbackClient(options: Partial<ProviderHttpOptions> = {}): ProviderHttp {
  return new ProviderHttp({ provider: "d", clock: systemClock, secrets: () => [], urlPolicy: { allowHttp: true, allowPrivate: true }, ...options });
}

describe("ProviderHttp.lastSentAt", () => {
  it("is when the request was handed to the transport: after a 60 ms wait for its rate token, and no later than the server saw it", async () => {
    const { url, receivedAt } = await receiver();
    const http = loopbackClient({
      beforeRequest: async () => {
        await new Promise((resolve) => setTimeout(resolve, 60));
      },
    });
    expect(http.lastSentAt).toBeNull();
    const startedAt = Date.now();
    const response = await http.request({ method: "POST", url: `${url}/d/v1/gen-2-pro`, body: { prompt: "a lighthouse" }, retry: "none" });
    expect(response.status).toBe(200);
    expect(http.lastSentAt).not.toBeNull();
    expect(http.lastSentAt!).toBeGreaterThanOrEqual(startedAt + 59);
    expect(http.lastSentAt!).toBeLessThanOrEqual(receivedAt[0]!);
  });

  it("is the latest attempt's: a retried idempotent request's second send, after its backoff", async () => {
    const { url, receivedAt } = await receiver();
    let answers = 0;
    server!.removeAllListeners("request");
    server!.on("request", (request, response) => {
      receivedAt.push(Date.now());
      request.resume();
      response.statusCode = answers++ === 0 ? 503 : 200;
      request.on("end", () => response.end("{}"));
    });
    const http = loopbackClient({ random: () => 1 });
    const response = await http.request({ method: "GET", url: `${url}/d-poll/v1/get_result?id=x`, retry: "idempotent" });
    expect(response.status).toBe(200);
    expect(receivedAt).toHaveLength(2);
    expect(http.lastSentAt!).toBeGreaterThan(receivedAt[0]!);
    expect(http.lastSentAt!).toBeLessThanOrEqual(receivedAt[1]!);
  });
});

describe("ProviderHttp.lastSentAt on a new connection", () => {
  it("is when the connection was made, not when the request was handed over: a loop held 60 ms before it could read the connection made", async () => {
    const { url, receivedAt } = await receiver();
    let handedAt = 0;
    const http = loopbackClient({
      transport: (target, init) => {
        handedAt = Date.now();
        const answer = nodeTransport(target, init);
        // Busy, as an engine saving results is: the connection's completion is read only after this.
        const until = Date.now() + 60;
        while (Date.now() < until);
        return answer;
      },
    });
    // localhost: a fresh agent connection (after a name lookup), never one a test before left open.
    const response = await http.request({ method: "POST", url: `${url.replace("127.0.0.1", "localhost")}/d/v1/gen-2-pro`, body: { prompt: "a lighthouse" }, retry: "none" });
    expect(response.status).toBe(200);
    expect(http.lastSentAt!).toBeGreaterThanOrEqual(handedAt + 60);
    expect(http.lastSentAt!).toBeLessThanOrEqual(receivedAt[0]!);
  });

  it("is the hand-off on a keep-alive connection already open", async () => {
    const { url, receivedAt } = await receiver();
    const http = loopbackClient();
    await http.request({ method: "GET", url: `${url}/d-poll/v1/get_result?id=warm`, retry: "none" });
    let handedAt = 0;
    const reused = loopbackClient({
      transport: (target, init) => {
        handedAt = Date.now();
        return nodeTransport(target, init);
      },
    });
    await reused.request({ method: "GET", url: `${url}/d-poll/v1/get_result?id=again`, retry: "none" });
    expect(receivedAt).toHaveLength(2);
    expect(reused.lastSentAt!).toBeGreaterThanOrEqual(handedAt);
    expect(reused.lastSentAt!).toBeLessThanOrEqual(receivedAt[1]!);
  });
});

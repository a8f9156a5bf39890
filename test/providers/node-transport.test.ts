import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/clock.js";
import { ProviderHttp, TransportError } from "../../src/providers/http.js";

// The provider requests' transport (Node's HTTP client in place of fetch), seen through ProviderHttp against real
// loopback servers: connections kept and reused, idle ones closed before a submit could meet a server closing them,
// headers as the provider's code gave them, an abort's reason, an answer cut mid-body, multipart bodies.

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

interface Seen {
  connections: number;
  requests: Array<{ method: string; url: string; headers: IncomingMessage["headers"]; body: Buffer }>;
}

/** A loopback server answering with `handler` (after reading the body), counting its connections. */
async function serve(handler: (request: IncomingMessage, response: ServerResponse, body: Buffer) => void): Promise<{ base: string; seen: Seen }> {
  const seen: Seen = { connections: 0, requests: [] };
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      seen.requests.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
      handler(request, response, body);
    });
  });
  server.on("connection", () => seen.connections++);
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return { base: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`, seen };
}

function client(): ProviderHttp {
  return new ProviderHttp({ provider: "d", clock: systemClock, secrets: () => ["sk-transport-key"], urlPolicy: { allowHttp: true, allowPrivate: true }, random: () => 0 });
}

const json = (response: ServerResponse, value: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(200, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(value));
};

describe("the provider requests' transport (Node's HTTP client, keep-alive)", () => {
  it("forty requests, eight at a time, share a few kept connections; a POST's JSON body arrives with its length and type", async () => {
    const { base, seen } = await serve((_request, response, body) => json(response, { echo: body.length }));
    const http = client();
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, index) => http.request({ method: "POST", url: `${base}/d/v1/gen-2-pro`, body: { prompt: `p${round}-${index}` }, retry: "none" })),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
    }
    expect(seen.requests).toHaveLength(40);
    expect(seen.connections).toBeLessThanOrEqual(8);
    const first = seen.requests[0]!;
    expect(first.headers["content-type"]).toBe("application/json");
    expect(Number(first.headers["content-length"])).toBe(first.body.length);
    expect(JSON.parse(first.body.toString("utf8"))).toMatchObject({ prompt: expect.stringMatching(/^p0-/) });
  });

  it("a connection left unused for 2 s is closed, so the next request opens a new one", async () => {
    const { base, seen } = await serve((_request, response) => json(response, { ok: true }));
    const http = client();
    await http.request({ method: "GET", url: `${base}/a`, retry: "idempotent" });
    await http.request({ method: "GET", url: `${base}/b`, retry: "idempotent" });
    expect(seen.connections).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 2_400));
    await http.request({ method: "POST", url: `${base}/c`, body: { prompt: "x" }, retry: "none" });
    expect(seen.connections).toBe(2);
  });

  it("a server whose Keep-Alive hint is 1 s gets a new connection for every request (the hint less a second leaves nothing)", async () => {
    const { base, seen } = await serve((_request, response) => json(response, { ok: true }, { "keep-alive": "timeout=1" }));
    const http = client();
    for (let index = 0; index < 3; index++) await http.request({ method: "GET", url: `${base}/x${index}`, retry: "idempotent" });
    expect(seen.connections).toBe(3);
  });

  it("headers go as the provider's code gave them, one of each name whatever its case; the answer's headers and bytes come back whole", async () => {
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, index) => index % 251));
    const { base, seen } = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "image/png", "x-request-id": "r-1" });
      response.end(bytes);
    });
    const answer = await client().request({ method: "GET", url: `${base}/file.png`, headers: { Accept: "image/png", "X-Key": "sk-transport-key" }, retry: "idempotent" });
    expect(answer.headers.get("content-type")).toBe("image/png");
    expect(answer.headers.get("x-request-id")).toBe("r-1");
    expect(answer.body.equals(bytes)).toBe(true);
    const sent = seen.requests[0]!;
    expect(sent.headers.accept).toBe("image/png");
    expect(sent.headers["x-key"]).toBe("sk-transport-key");
    expect(sent.headers["user-agent"]).toBe("mediagate");
    expect(sent.headers["content-length"]).toBeUndefined();
  });

  it("an answer cut after its headers may have carried the request: a TransportError, maybe sent", async () => {
    const { base } = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      response.write('{"id": "abc"');
      setTimeout(() => response.destroy(), 20);
    });
    const error = await client()
      .request({ method: "POST", url: `${base}/d/v1/gen-2-pro`, body: { prompt: "x" }, retry: "none" })
      .catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).maybeSent).toBe(true);
  });

  it("no answer within the request's time limit: timed out, maybe sent; an abort ends the request with the caller's reason", async () => {
    const { base } = await serve(() => undefined);
    const http = client();
    const timedOut = await http.request({ method: "POST", url: `${base}/slow`, body: { prompt: "x" }, timeoutMs: 200, retry: "none" }).catch((failure: unknown) => failure);
    expect(timedOut).toBeInstanceOf(TransportError);
    expect((timedOut as TransportError).maybeSent).toBe(true);
    expect((timedOut as Error).message).toMatch(/timed out$/);
    const stop = new AbortController();
    const reason = new Error("engine stopping");
    setTimeout(() => stop.abort(reason), 50);
    await expect(http.request({ method: "GET", url: `${base}/slow`, retry: "idempotent" }, stop.signal)).rejects.toBe(reason);
  });

  it("a multipart body (FormData) is encoded and sent with its boundary", async () => {
    const { base, seen } = await serve((_request, response) => json(response, { ok: true }));
    const form = new FormData();
    form.append("prompt", "a fox");
    form.append("image", new Blob([Buffer.from("PNGDATA")], { type: "image/png" }), "fox.png");
    await client().request({ method: "POST", url: `${base}/upload`, body: form, retry: "none" });
    const sent = seen.requests[0]!;
    expect(sent.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    expect(sent.body.toString("latin1")).toContain('name="image"; filename="fox.png"');
    expect(sent.body.toString("latin1")).toContain("PNGDATA");
  });
});

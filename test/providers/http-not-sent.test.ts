import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/clock.js";
import { ProviderHttp, RequestNotSentError, TransportError } from "../../src/providers/http.js";

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A ProviderHttp that counts its rate tokens (taken just before a request leaves). */
function client() {
  let tokens = 0;
  const http = new ProviderHttp({
    provider: "d",
    clock: systemClock,
    secrets: () => ["sk-not-sent-key"],
    urlPolicy: { allowHttp: true, allowPrivate: true },
    random: () => 0,
    beforeRequest: async () => {
      tokens++;
    },
  });
  return { http, tokens: () => tokens };
}

async function failure(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the request to fail");
}

/** A loopback port with nothing listening: bound, then released. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return typeof address === "object" && address ? address.port : 0;
}

describe("finding 11: errors that prove nothing left the machine are 'not sent'", () => {
  it("a URL on a port fetch never connects to (port 1) is not sent: blocked_port, permanent, and no rate token is spent on it", async () => {
    const { http, tokens } = client();
    const error = await failure(() => http.request({ method: "POST", url: "http://127.0.0.1:1/d/v1/gen-2-pro", body: { prompt: "x" }, retry: "none" }));
    expect(error).toBeInstanceOf(RequestNotSentError);
    expect(error).toMatchObject({ code: "blocked_port", permanent: true });
    expect((error as Error).message).toBe(
      "request to http://127.0.0.1:1/d/v1/gen-2-pro not sent: port 1 is one that fetch never connects to (the Fetch standard's blocked ports)",
    );
    expect(tokens()).toBe(0);
  });

  it("a URL carrying credentials is not sent (invalid_url), and its password is not repeated", async () => {
    const { http } = client();
    const error = await failure(() => http.request({ method: "GET", url: "http://user:pw-in-url-1234@127.0.0.1:9/x", retry: "idempotent" }));
    expect(error).toMatchObject({ code: "invalid_url", permanent: true });
    expect((error as Error).message).not.toContain("pw-in-url-1234");
  });

  it("a refused connection (nothing listening) is a TransportError that proves nothing was sent", async () => {
    const { http } = client();
    const port = await closedPort();
    const error = await failure(() => http.request({ method: "POST", url: `http://127.0.0.1:${port}/d/v1/gen-2-pro`, body: { prompt: "x" }, retry: "none" }));
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).maybeSent).toBe(false);
    expect((error as Error).message).toBe(`request to http://127.0.0.1:${port}/d/v1/gen-2-pro not sent: connection refused (ECONNREFUSED)`);
  });

  it("a connection cut after the request arrived may have carried it: maybeSent", async () => {
    server = createServer((socket) => socket.once("data", () => socket.destroy()));
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const { http } = client();
    const error = await failure(() => http.request({ method: "POST", url: `http://127.0.0.1:${port}/d/v1/gen-2-pro`, body: { prompt: "x" }, retry: "none" }));
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).maybeSent).toBe(true);
  });
});

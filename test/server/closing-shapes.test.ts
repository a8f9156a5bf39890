import { connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import { createLogger } from "../../src/engine/logger.js";
import { buildServer } from "../../src/server/app.js";
import { answerClientError } from "../../src/server/client-errors.js";
import { tempDir } from "../helpers/stores.js";
import { until } from "../helpers/until.js";

/**
 * The two answers of the error-shape table (error-shapes.test.ts) that no
 * ordinary request reaches: 503 shutting_down (a request whose headers end
 * while the server closes) and 408 request_timeout (headers that never end,
 * as Node's parser reports them). Both are read off a real socket.
 */

/** Everything the peer writes until it closes the connection. */
function readAll(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
}

/** A raw HTTP/1.1 answer's status and JSON body. */
function parsed(raw: string): { status: number; headers: string; body: any } {
  const [head, body] = raw.split("\r\n\r\n", 2) as [string, string];
  return { status: Number(head.split(" ")[1]), headers: head.toLowerCase(), body: JSON.parse(body) };
}

function opened(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.on("error", reject);
  });
}

describe("answers no ordinary request reaches, in the one error shape", () => {
  const folder = tempDir();
  let runtime: Runtime;
  beforeAll(() => {
    runtime = createRuntime({ overrides: { MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`, MEDIAGATE_OUTPUT_DIR: join(folder.path, "out") } });
  });
  afterAll(async () => {
    await runtime.close();
    folder.remove();
  });

  it('503 shutting_down: a request whose headers end once the server is closing is answered {"error": {"code", "message"}} and its connection closed', async () => {
    const log = createLogger({ level: "silent", secrets: runtime.secrets });
    const app = await buildServer({ store: await runtime.store(), engine: await runtime.engine(), providers: runtime.providers, log, now: () => Date.now() }, { runtime, log });
    await app.listen({ port: 0, host: "127.0.0.1" });
    const port = (app.server.address() as { port: number }).port;
    // A request begun (so its connection is not idle, and closing keeps it for the grace), its headers not ended.
    const late = await opened(port);
    const answer = readAll(late);
    late.write("GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    // Answered after the begun request's bytes were read: the server has parsed them by then.
    const other = await opened(port);
    const otherAnswer = readAll(other);
    other.end("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    expect(parsed(await otherAnswer).status).toBe(200);
    const closed = app.close();
    await until(() => !app.server.listening, "the server to stop listening");
    late.write("\r\n");
    const refused = parsed(await answer);
    await closed;
    expect(refused.status).toBe(503);
    expect(refused.headers).toContain("connection: close");
    expect(refused.body).toEqual({ error: { code: "shutting_down", message: "the server is stopping; send the request again (to another server, or once this one is back)" } });
  });

  it('408 request_timeout: headers Node reports as not received in time are answered {"error": {"code", "message"}} on the socket, which is then closed', async () => {
    const server = createServer((socket) => answerClientError(Object.assign(new Error("Request timeout"), { code: "ERR_HTTP_REQUEST_TIMEOUT" }), socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const client = await opened((server.address() as { port: number }).port);
      const answer = parsed(await readAll(client));
      expect(answer.status).toBe(408);
      expect(answer.headers).toContain("http/1.1 408 request timeout");
      expect(answer.headers).toContain("content-type: application/json");
      expect(answer.body).toEqual({ error: { code: "request_timeout", message: "the request's headers did not arrive in time; send the request again" } });
    } finally {
      server.close();
    }
  });
});

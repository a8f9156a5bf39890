import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createBEmulator, type BEmulator, type BEmulatorOptions } from "../../src/sandbox/b/index.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

/** Plain HTTP helpers for the B emulator's tests: what a client sends over loopback, nothing of our client. */

export const B_KEY = "sandbox-b-key";
export const IMAGE_TO_VIDEO = "vendorx/video-2.5/image-to-video";
export const VALID_IMAGE_TO_VIDEO = { image: "https://images.example.com/cat.png", resolution: "720p", duration_s: 5 };

export interface BSandbox {
  sandbox: Sandbox;
  b: BEmulator;
  /** The client's base URL, `{sandbox}/b`. */
  baseUrl: string;
  /** Moves virtual time forward. */
  advance(ms: number): void;
}

/** Fixed render time (1 s queued + 10 s running) so tests move time with advance(). */
export async function startB(options: BEmulatorOptions = {}, timeScale = 1): Promise<BSandbox> {
  const b = createBEmulator({ queueTimeMs: 1_000, renderTimeMs: 10_000, ...options });
  const sandbox = await startSandbox({ providers: ["b"], emulators: { b: b }, timeScale });
  return { sandbox, b, baseUrl: `${sandbox.url}/b`, advance: (ms) => sandbox.clock.advance(ms) };
}

export interface Answer<T = Record<string, any>> {
  status: number;
  headers: Headers;
  body: T;
}

export async function call(world: BSandbox, method: string, path: string, options: { body?: unknown; headers?: Record<string, string>; key?: string | null } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== null) headers["x-api-key"] ??= options.key ?? B_KEY;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${world.baseUrl}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === "" ? null : JSON.parse(text) };
}

export function submit(world: BSandbox, apiId: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return call(world, "POST", `/v1/media/${apiId}`, { body, headers });
}

export function readJob(world: BSandbox, id: string): Promise<Answer> {
  return call(world, "GET", `/v1/media/jobs/${id}`);
}

export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on 127.0.0.1 that answers the given statuses in turn (the last one repeats). */
export interface Receiver {
  url: string;
  received: ReceivedDelivery[];
  close(): Promise<void>;
}

export async function startReceiver(statuses: number[] = [200]): Promise<Receiver> {
  const received: ReceivedDelivery[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
      response.statusCode = statuses[Math.min(received.length - 1, statuses.length - 1)] ?? 200;
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/b`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A sender's connection that is silent (not "idle" to Node) would hold the close for a minute.
        server.closeAllConnections();
      }),
  };
}

import http from "node:http";
import https from "node:https";

/** What `ProviderHttp` needs of an answer: `fetch`'s `Response` has it too. */
export interface TransportResponse {
  status: number;
  headers: Headers;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** What `ProviderHttp` sends: the part of `fetch`'s init it uses (redirects are always followed by hand). */
export interface TransportInit {
  method: string;
  headers: Record<string, string>;
  body?: unknown;
  redirect: "manual";
  signal: AbortSignal;
  /**
   * Called when the request leaves: at once on a keep-alive connection already
   * open, or when a new connection is made (after its name lookup and, for
   * https, its handshake), right before its bytes are written. A transport that
   * cannot tell (`fetch`) never calls it; the caller keeps its hand-off time.
   */
  onSent?: () => void;
}

export type Transport = (url: string, init: TransportInit) => Promise<TransportResponse>;

/**
 * A free keep-alive connection is closed after this long unused (sooner when
 * the server's Keep-Alive hint says so, which Node's agent honours), so that a
 * submit is not written into a connection the server is closing: a reset
 * there could not tell whether the provider took the job.
 */
const IDLE_CONNECTION_MS = 2_000;
/** A connection not made within this long is given up as not sent (nothing can have reached the provider). */
const CONNECT_TIMEOUT_MS = 10_000;

const agentOptions = { keepAlive: true, timeout: IDLE_CONNECTION_MS, scheduling: "lifo" as const };
const agents = { "http:": new http.Agent(agentOptions), "https:": new https.Agent(agentOptions) };

/**
 * The provider requests' transport: Node's own HTTP client on keep-alive
 * connections, with `fetch`'s contract as `ProviderHttp` uses it (the answer at
 * its headers, the body read after; redirects not followed; an abort rejects
 * with the signal's reason; a connection refused or not made fails with the
 * socket's error). `fetch` costs about four times the CPU a request (0.2–0.4 ms
 * against 0.05–0.14 ms on loopback, more while its code is cold), the largest
 * item of a batch's main thread. Multipart bodies (`FormData`) still go
 * through `fetch`, which encodes them.
 */
export const nodeTransport: Transport = async (url, init) => {
  if (init.body instanceof FormData) return fetch(url, init as RequestInit);
  const target = new URL(url);
  const payload = bytesOf(init.body);
  // Node's request sets these one by one, a name whatever its case, the later winning: the caller's over the defaults.
  const headers: Record<string, string> = { accept: "*/*", "user-agent": "mediagate", ...init.headers };
  if (payload !== undefined) headers["content-length"] = String(payload.length);
  const { signal } = init;
  signal.throwIfAborted();
  const agent = agents[target.protocol as keyof typeof agents];
  if (!agent) throw new TypeError(`fetch does not speak ${target.protocol}`);
  const client = target.protocol === "https:" ? https : http;
  return new Promise<TransportResponse>((resolve, reject) => {
    let answered = false;
    let failBody: (error: unknown) => void = () => undefined;
    let connectTimer: NodeJS.Timeout | undefined;
    const request = client.request(target, { method: init.method, headers, agent }, (response) => {
      answered = true;
      const body = new Promise<ArrayBuffer>((resolveBody, rejectBody) => {
        failBody = rejectBody;
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", rejectBody);
        response.on("aborted", () => rejectBody(Object.assign(new Error("the connection closed before the answer's end"), { code: "ECONNRESET" })));
        response.on("end", () => {
          signal.removeEventListener("abort", onAbort);
          const whole = Buffer.concat(chunks);
          resolveBody(whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.byteLength) as ArrayBuffer);
        });
      });
      // Read or not (a redirect's body is dropped), a failed body must not be an unhandled rejection.
      body.catch(() => undefined);
      resolve({ status: response.statusCode ?? 0, headers: headersOf(response.rawHeaders), arrayBuffer: () => body });
    });
    const onAbort = () => {
      const reason: unknown = signal.reason;
      request.destroy(reason instanceof Error ? reason : new Error(String(reason)));
      if (answered) failBody(reason);
      else reject(reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    request.on("socket", (socket) => {
      if (!socket.connecting) {
        init.onSent?.();
        return;
      }
      connectTimer = setTimeout(() => {
        request.destroy(Object.assign(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`), { code: "ETIMEDOUT", syscall: "connect" }));
      }, CONNECT_TIMEOUT_MS);
      connectTimer.unref();
      socket.once("connect", () => clearTimeout(connectTimer));
      // A new connection: the request's bytes go once it is made (for https, once its handshake is done).
      socket.once(target.protocol === "https:" ? "secureConnect" : "connect", () => init.onSent?.());
    });
    request.on("error", (error) => {
      clearTimeout(connectTimer);
      signal.removeEventListener("abort", onAbort);
      if (signal.aborted) return;
      if (answered) failBody(error);
      else reject(error);
    });
    request.on("close", () => clearTimeout(connectTimer));
    request.end(payload);
  });
};

function bytesOf(body: unknown): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof URLSearchParams) return Buffer.from(body.toString(), "utf8");
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError("a request body must be a string, bytes, URLSearchParams or FormData");
}

function headersOf(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let index = 0; index + 1 < raw.length; index += 2) {
    try {
      headers.append(raw[index]!, raw[index + 1]!);
    } catch {
      // A header no Headers object can hold (a name or value fetch would refuse too) is left out.
    }
  }
  return headers;
}

import { fullJitterBackoffMs, retryAfterMs } from "../core/backoff.js";
import { isBlockedPort } from "../core/blocked-ports.js";
import type { Clock } from "../core/clock.js";
import { MediagateError, ProviderError } from "../core/errors.js";
import { displayUrl, redactSecrets } from "../core/redact.js";
import type { RequestSpan } from "../core/tracing.js";
import { assertSafeUrl, type UrlPolicy } from "../core/url-safety.js";
import { nodeTransport, type Transport, type TransportResponse } from "./node-transport.js";

/** A network failure. `maybeSent` is true when the request may have reached the provider. */
export class TransportError extends MediagateError {
  constructor(
    readonly provider: string,
    readonly maybeSent: boolean,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(maybeSent ? "transport_error_after_send" : "transport_error", message, options);
  }
}

/**
 * The request never left this machine, so sending it again can never charge
 * twice. Usually the wait for its rate token failed (the store) or was called
 * off (the engine stopping), and it is sent later. `permanent` when sending it
 * again cannot succeed either: fetch refuses its address before connecting
 * (`blocked_port`, `invalid_url`); the job then fails as not sent.
 */
export class RequestNotSentError extends MediagateError {
  readonly permanent: boolean;
  constructor(
    readonly provider: string,
    message: string,
    options: { cause?: unknown; code?: "request_not_sent" | "blocked_port" | "invalid_url"; permanent?: boolean } = {},
  ) {
    super(options.code ?? "request_not_sent", message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.permanent = options.permanent ?? false;
  }
}

/**
 * Failures that happen before a connection exists: nothing of the request
 * can have reached the provider. Node's error codes and the failing system
 * call say so (never the message's wording).
 */
const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);
const NOT_CONNECTED_SYSCALLS: ReadonlySet<string> = new Set(["connect", "getaddrinfo"]);

/** Plain words for the not-connected failures, for job reasons and logs. */
const NOT_CONNECTED_WORDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host lookup failed for now",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
};

export interface HttpResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  /** The final URL after redirects. */
  url: string;
  text(): string;
  /** Parses the body as JSON; throws ProviderError(`invalid_response`) when it is not. Validate the result with a schema. */
  json(): unknown;
}

export interface HttpRequest {
  method: "GET" | "POST" | "PUT" | "DELETE" | "PATCH";
  url: string;
  headers?: Record<string, string>;
  /** Headers made afresh for every attempt and redirect hop (C's per-request Ai-trace-id). */
  attemptHeaders?: () => Record<string, string>;
  /** An object is sent as JSON; FormData as multipart; a string or Buffer as is. */
  body?: unknown;
  timeoutMs?: number;
  /**
   * "idempotent": safe to resend, so 429, 5xx and network failures are retried
   * here with Retry-After or full-jitter backoff (reads, polls, downloads).
   * "none": sent once; the engine decides what a failure means (submits).
   */
  retry?: "idempotent" | "none";
  /** Check the URL against the provider's URL policy first (URLs the provider handed back). */
  untrustedUrl?: boolean;
}

/** How many times an idempotent request (a poll, a download) is sent before its caller sees the failure, first try included. */
export const IDEMPOTENT_ATTEMPTS = 4;

export interface ProviderHttpOptions {
  provider: string;
  clock: Clock;
  /** Every secret that must never appear in an error or log (keys, tokens, client secrets). */
  secrets: () => Array<string | undefined>;
  /**
   * Called before every request is sent: the engine takes a rate token here.
   * A function it returns is called once the answer (or failure) is in.
   */
  beforeRequest?: () => Promise<(() => Promise<void>) | void>;
  /** Called after every answer (the engine counts 429s, learns limits). */
  afterResponse?: (response: { status: number; url: string }) => void;
  urlPolicy: UrlPolicy;
  defaultTimeoutMs?: number;
  /** Attempts for idempotent requests (first try included); IDEMPOTENT_ATTEMPTS unless given. */
  maxAttempts?: number;
  /** A Retry-After longer than this is not waited here; the error goes to the engine. */
  maxInlineWaitMs?: number;
  random?: () => number;
  /** How requests are sent: Node's HTTP client by default (see `nodeTransport`); `fetch` fits too. */
  transport?: Transport;
  /** Starts a trace span for each request as it leaves (every attempt and redirect hop); absent when traces are off. */
  requestSpan?: (method: string, url: string) => RequestSpan;
}

const MAX_REDIRECTS = 5;
const MAX_ERROR_BODY = 2_000;

/**
 * The one HTTP path of every provider: rate token, timeout, URL checks on
 * every redirect hop, bounded retries of idempotent requests honouring
 * Retry-After, and redaction of secrets in every error.
 */
export class ProviderHttp {
  private readonly transport: Transport;
  /**
   * When the latest request left (this client's clock): when it was handed to
   * the transport, after its rate token and every other wait, or later, when the
   * transport says so (a new connection made: its name lookup, its connect, and
   * a busy loop's delay in reading that it is made all come before the request
   * goes). The earliest the provider can have seen it, and closer to that than
   * any time noted before. Null before the first request.
   */
  lastSentAt: number | null = null;

  constructor(readonly options: ProviderHttpOptions) {
    this.transport = options.transport ?? nodeTransport;
  }

  get provider(): string {
    return this.options.provider;
  }

  get urlPolicy(): UrlPolicy {
    return this.options.urlPolicy;
  }

  redact(text: string): string {
    return redactSecrets(text, this.options.secrets());
  }

  async request(request: HttpRequest, signal?: AbortSignal): Promise<HttpResponse> {
    const maxAttempts = request.retry === "idempotent" ? (this.options.maxAttempts ?? IDEMPOTENT_ATTEMPTS) : 1;
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await this.send(request, signal);
        const retryable = response.status === 429 || response.status === 408 || response.status >= 500;
        if (!retryable || attempt + 1 >= maxAttempts) return response;
        const wait = retryAfterMs(response.headers, this.options.clock.now());
        if (wait !== null && wait > (this.options.maxInlineWaitMs ?? 60_000)) return response;
        await this.options.clock.sleep(wait ?? this.backoff(attempt), signal);
      } catch (error) {
        if (!(error instanceof TransportError) || attempt + 1 >= maxAttempts || signal?.aborted) throw error;
        await this.options.clock.sleep(this.backoff(attempt), signal);
      }
    }
  }

  /** Builds a ProviderError from a non-2xx answer, with the body truncated and redacted. */
  errorFrom(
    response: HttpResponse,
    code: string,
    message: string,
    flags: { retryable?: boolean; backpressure?: boolean; haltsProvider?: boolean; taskUnknown?: boolean; providerCode?: string } = {},
  ): ProviderError {
    const wait = retryAfterMs(response.headers, this.options.clock.now());
    return new ProviderError(code, this.redact(message), {
      provider: this.provider,
      httpStatus: response.status,
      retryable: flags.retryable ?? false,
      ...(flags.providerCode !== undefined ? { providerCode: flags.providerCode } : {}),
      ...(flags.backpressure ? { backpressure: true } : {}),
      ...(flags.haltsProvider ? { haltsProvider: true } : {}),
      ...(flags.taskUnknown ? { taskUnknown: true } : {}),
      ...(wait !== null ? { retryAfterMs: wait } : {}),
      rawBody: this.redact(response.text().slice(0, MAX_ERROR_BODY)),
    });
  }

  private backoff(attempt: number): number {
    return fullJitterBackoffMs(attempt, { baseMs: 250, capMs: 8_000, ...(this.options.random ? { random: this.options.random } : {}) });
  }

  private async send(request: HttpRequest, signal?: AbortSignal): Promise<HttpResponse> {
    let url = request.url;
    let method = request.method;
    let body = encodeBody(request.body);
    const headers: Record<string, string> = { ...(request.headers ?? {}) };
    if (body.contentType && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
      headers["content-type"] = body.contentType;
    }
    for (let hop = 0; ; hop++) {
      const refusal = addressFetchRefuses(url);
      if (refusal) {
        if (hop === 0) {
          throw new RequestNotSentError(this.provider, this.redact(`request to ${safeForDisplay(url)} not sent: ${refusal.why}`), { code: refusal.code, permanent: true });
        }
        // The request was sent and answered with this redirect: what it started at the provider is unknown.
        throw new TransportError(this.provider, true, this.redact(`request redirected to ${safeForDisplay(url)}, which cannot be fetched: ${refusal.why}`));
      }
      if (request.untrustedUrl || hop > 0) await assertSafeUrl(url, this.options.urlPolicy);
      if (request.attemptHeaders) Object.assign(headers, request.attemptHeaders());
      let answered: (() => Promise<void>) | void;
      try {
        answered = await this.options.beforeRequest?.();
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const reason = error instanceof Error ? error.message : String(error);
        throw new RequestNotSentError(this.provider, this.redact(`request to ${safeForDisplay(url)} not sent: ${reason}`), { cause: error });
      }
      // One controller per attempt, its timer cleared and its listener removed once the body is read:
      // AbortSignal.timeout and AbortSignal.any keep every request's timer (up to two minutes) and a weak
      // link on the engine's long-lived signal alive after it ends, and at a few hundred requests a second
      // that held hundreds of megabytes.
      const limitMs = request.timeoutMs ?? this.options.defaultTimeoutMs ?? 30_000;
      const attempt = new AbortController();
      const timer = setTimeout(() => attempt.abort(new DOMException(`no answer within ${limitMs} ms`, "TimeoutError")), limitMs);
      timer.unref();
      const stop = () => attempt.abort(signal?.reason);
      if (signal?.aborted) stop();
      else signal?.addEventListener("abort", stop, { once: true });
      let response: TransportResponse;
      let bytes: Buffer;
      const span = this.options.requestSpan?.(method, url);
      try {
        try {
          this.lastSentAt = this.options.clock.now();
          response = await this.transport(url, {
            method,
            headers,
            ...(body.payload !== undefined ? { body: body.payload } : {}),
            redirect: "manual",
            signal: attempt.signal,
            onSent: () => {
              this.lastSentAt = this.options.clock.now();
            },
          });
        } catch (error) {
          span?.end({ error: signal?.aborted ? signal.reason : error });
          await noteAnswered(answered);
          if (signal?.aborted) throw signal.reason;
          throw this.transportError(url, error);
        }
        await noteAnswered(answered);
        this.options.afterResponse?.({ status: response.status, url });
        if (response.status >= 300 && response.status < 400 && response.headers.has("location") && hop < MAX_REDIRECTS) {
          await response.arrayBuffer().catch(() => undefined);
          span?.end({ status: response.status });
          url = new URL(response.headers.get("location")!, url).toString();
          if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
            method = "GET";
            body = { payload: undefined, contentType: undefined };
            delete headers["content-type"];
          }
          continue;
        }
        try {
          bytes = Buffer.from(await response.arrayBuffer());
          span?.end({ status: response.status });
        } catch (error) {
          span?.end({ error: signal?.aborted ? signal.reason : error });
          if (signal?.aborted) throw signal.reason;
          throw this.transportError(url, error);
        }
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener("abort", stop);
      }
      return makeResponse(this, response.status, response.headers, bytes, url);
    }
  }

  private transportError(url: string, error: unknown): TransportError {
    const cause = error instanceof Error ? error : new Error(String(error));
    // fetch wraps the socket's error; a host with several addresses fails as an AggregateError of one per address.
    type SocketFailure = { code?: unknown; syscall?: unknown; errors?: SocketFailure[]; cause?: SocketFailure };
    const socket: SocketFailure = (cause as SocketFailure).cause ?? (cause as SocketFailure);
    const first = socket.errors?.[0] ?? socket;
    const code = typeof socket.code === "string" ? socket.code : typeof first.code === "string" ? first.code : undefined;
    const syscall = typeof first.syscall === "string" ? first.syscall : typeof socket.syscall === "string" ? socket.syscall : undefined;
    // Before a connection exists nothing can have reached the provider; anything later may have.
    const notSent = (code !== undefined && NOT_CONNECTED_CODES.has(code)) || (syscall !== undefined && NOT_CONNECTED_SYSCALLS.has(syscall));
    const what =
      cause.name === "TimeoutError"
        ? "timed out"
        : notSent
          ? `not sent: ${(code && NOT_CONNECTED_WORDS[code]) ?? "no connection"}${code ? ` (${code})` : ""}`
          : `failed (${code ?? cause.message})`;
    return new TransportError(this.provider, !notSent, this.redact(`request to ${safeForDisplay(url)} ${what}`), { cause });
  }
}

/** Why fetch would refuse `url` before connecting (so nothing can be sent to it), or null. */
function addressFetchRefuses(url: string): { code: "blocked_port" | "invalid_url"; why: string } | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { code: "invalid_url", why: "it is not a valid absolute URL" };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return { code: "invalid_url", why: `fetch does not speak ${parsed.protocol}` };
  if (parsed.username || parsed.password) return { code: "invalid_url", why: "fetch refuses a URL that carries credentials" };
  if (isBlockedPort(parsed)) return { code: "blocked_port", why: `port ${parsed.port} is one that fetch never connects to (the Fetch standard's blocked ports)` };
  return null;
}

/**
 * Tells the rate limiter the answer is in. When the store cannot take the note
 * (it is restarting), the request keeps its place in its window until that
 * expires: slower for a while, never over a limit. It must not turn an answered
 * request into a failed one: a submit the provider accepted would be taken
 * for lost.
 */
async function noteAnswered(answered: (() => Promise<void>) | void): Promise<void> {
  try {
    await answered?.();
  } catch {
    // see above
  }
}

/** A URL for messages: signed query strings are cut, since they are credentials too. */
export function safeForDisplay(url: string): string {
  return URL.canParse(url) ? displayUrl(url) : "(invalid URL)";
}

function encodeBody(body: unknown): { payload: RequestInit["body"] | undefined; contentType: string | undefined } {
  if (body === undefined) return { payload: undefined, contentType: undefined };
  if (body instanceof FormData) return { payload: body, contentType: undefined };
  if (typeof body === "string") return { payload: body, contentType: undefined };
  if (Buffer.isBuffer(body)) return { payload: new Uint8Array(body), contentType: undefined };
  if (body instanceof URLSearchParams) return { payload: body, contentType: "application/x-www-form-urlencoded" };
  return { payload: JSON.stringify(body), contentType: "application/json" };
}

function makeResponse(http: ProviderHttp, status: number, headers: Headers, body: Buffer, url: string): HttpResponse {
  return {
    status,
    headers,
    body,
    url,
    text: () => body.toString("utf8"),
    json: () => {
      try {
        return JSON.parse(body.toString("utf8")) as unknown;
      } catch {
        throw new ProviderError("invalid_response", `${http.provider}: answer from ${safeForDisplay(url)} is not JSON`, {
          provider: http.provider,
          httpStatus: status,
          retryable: false,
          rawBody: http.redact(body.toString("utf8").slice(0, MAX_ERROR_BODY)),
        });
      }
    },
  };
}

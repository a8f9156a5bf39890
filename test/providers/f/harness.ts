import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { systemClock, type Clock } from "../../../src/core/clock.js";
import type { UrlPolicy } from "../../../src/core/url-safety.js";
import type { CallContext, JobRequest, ProviderAdapter, Submitted, ValidatedRequest, WebhookDelivery } from "../../../src/providers/adapter.js";
import { createFAdapter, type FAdapterConfig } from "../../../src/providers/f/index.js";
import { ProviderHttp } from "../../../src/providers/http.js";
import { startSandbox, type FEmulator, type FEmulatorOptions, type Sandbox } from "../../../src/sandbox/index.js";

export const F_KEY = "sandbox-f-key";
/** Virtual render time of every generation in these tests. */
export const RENDER_MS = 2_000;
/** The longest a test waits for a delivery, in real time. */
const DELIVERY_WAIT_MS = 5_000;

export const RELAXED: UrlPolicy = { allowHttp: true, allowPrivate: true };
export const STRICT: UrlPolicy = { allowHttp: false, allowPrivate: false };

/** One POST the receiver got: the exact bytes and the headers, lower-cased. */
export interface Received {
  path: string;
  headers: Record<string, string | undefined>;
  rawBody: Buffer;
}

/** A webhook receiver on 127.0.0.1 that records every request and answers 204. */
export class Receiver {
  readonly received: Received[] = [];
  private waiters: Array<{ count: number; resolve: () => void }> = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Receiver> {
    let receiver: Receiver | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        receiver!.record({ path: request.url ?? "", headers: flatHeaders(request.headers), rawBody: Buffer.concat(chunks) });
        response.statusCode = 204;
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new Receiver(server, `http://127.0.0.1:${port}`);
    return receiver;
  }

  /** Resolves once `count` requests have arrived in all; fails after a bounded real-time wait. */
  async waitFor(count: number): Promise<Received[]> {
    if (this.received.length < count) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`expected ${count} deliveries, got ${this.received.length}`)), DELIVERY_WAIT_MS);
        this.waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    }
    return this.received.slice(0, count);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private record(received: Received): void {
    this.received.push(received);
    const ready = this.waiters.filter((waiter) => this.received.length >= waiter.count);
    this.waiters = this.waiters.filter((waiter) => this.received.length < waiter.count);
    for (const waiter of ready) waiter.resolve();
  }
}

function flatHeaders(headers: IncomingHttpHeaders): Record<string, string | undefined> {
  const flat: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  return flat;
}

export function asDelivery(received: Received, jobId: string | null = null): WebhookDelivery {
  return { rawBody: received.rawBody, headers: { ...received.headers }, jobId };
}

/** A running sandbox with F, a receiver, and helpers to build the adapter and call contexts. */
export class FWorld {
  private constructor(
    readonly sandbox: Sandbox,
    readonly emulator: FEmulator,
    readonly receiver: Receiver,
  ) {}

  static async start(options: FEmulatorOptions = {}): Promise<FWorld> {
    // Documented deviation of the sandbox: loopback webhook URLs are accepted so this test can receive deliveries.
    // Verified on the sandbox's virtual clock (advance()), so deliveries carry its timestamps too.
    const sandbox = await startSandbox({
      providers: ["f"],
      webhookTimestamps: "virtual",
      emulators: { f: { renderMs: RENDER_MS, allowLoopbackWebhooks: true, ...options } },
    });
    const receiver = await Receiver.start();
    return new FWorld(sandbox, sandbox.emulators.f!, receiver);
  }

  get baseUrl(): string {
    return `${this.sandbox.url}/f`;
  }

  get clock(): Clock {
    return this.sandbox.clock;
  }

  /** Moves virtual time past every generation's render time (and the key refresh cool-down). */
  advance(ms = RENDER_MS + 1): void {
    this.sandbox.clock.advance(ms);
  }

  adapter(config: Partial<FAdapterConfig> = {}): ProviderAdapter {
    return createFAdapter({ baseUrl: this.baseUrl, apiKey: F_KEY, ...config });
  }

  /** A call context on the sandbox's virtual clock (its webhook timestamps are virtual time too). */
  context(options: { callbackUrl?: string | null; urlPolicy?: UrlPolicy; clock?: Clock; maxAttempts?: number } = {}): CallContext {
    const http = new ProviderHttp({
      provider: "f",
      clock: systemClock,
      secrets: () => [F_KEY],
      urlPolicy: options.urlPolicy ?? RELAXED,
      random: () => 0,
      ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    });
    const callbackUrl = options.callbackUrl === undefined ? null : options.callbackUrl;
    return { http, clock: options.clock ?? this.clock, job: { id: "job-1", idempotencyKey: null, callbackUrl } };
  }

  /** The receiver's URL for one of our jobs, shaped like mediagate's `{public}/webhooks/f/{jobId}`. */
  callbackUrl(jobId = "job-1"): string {
    return `${this.receiver.url}/webhooks/f/${jobId}`;
  }

  async submit(
    adapter: ProviderAdapter,
    input: Record<string, unknown> = { text_prompt: "a red kite over dunes" },
    options: { webhook?: boolean; model?: string; extra?: Partial<JobRequest> } = {},
  ): Promise<{ validated: ValidatedRequest; submitted: Submitted; context: CallContext }> {
    const validated = adapter.validate({ provider: "f", model: options.model ?? "img-v3", input, ...options.extra });
    const context = this.context({ callbackUrl: options.webhook === false ? null : this.callbackUrl() });
    return { validated, context, submitted: await adapter.submit(validated, context) };
  }

  /** Requests the sandbox received for F's API (image downloads excluded). */
  requests() {
    return this.sandbox.requests().filter((entry) => entry.provider === "f" && !entry.url.startsWith("/f/images/"));
  }

  jwksRequests(): number {
    return this.requests().filter((entry) => entry.url === "/f/v1/.well-known/jwks.json").length;
  }

  async close(): Promise<void> {
    await this.sandbox.stop();
    await this.receiver.close();
  }
}

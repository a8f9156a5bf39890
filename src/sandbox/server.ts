import type { IncomingMessage } from "node:http";
import Fastify, { type FastifyInstance } from "fastify";
import { ScaledClock } from "../core/clock.js";
import { ConfigError, InputError } from "../core/errors.js";
import type { ProviderEmulator, SandboxContext } from "./context.js";
import { faultRulesOf } from "./fault-spec.js";
import { FaultInjector, type FaultRule } from "./faults.js";
import { CONTROL_PATH, registerInspectionRoutes, type SandboxControls } from "./inspection.js";
import { RequestLog } from "./request-log.js";
import { SignedUrls } from "./signed-url.js";
import { collectStats } from "./stats.js";

export interface SandboxServerOptions {
  /** 0 picks a free port. */
  port?: number;
  /** Always a loopback address. */
  host?: "127.0.0.1" | "::1";
  /** Virtual time runs this many times faster than real time (default 1). */
  timeScale?: number;
  /** Seed of the sandbox's randomness (default 1). */
  seed?: number;
  emulators: ProviderEmulator[];
  /** Fault rules in force from the start, and again after each reset. */
  faults?: readonly FaultRule[];
}

/** `controls` are what the `/_sandbox/` endpoints do (requests, stats, reset, advance, faults). */
export interface SandboxServer {
  readonly url: string;
  readonly port: number;
  readonly context: SandboxContext;
  readonly app: FastifyInstance;
  readonly controls: SandboxControls;
  /**
   * A whole-host outage: stops listening and cuts every open connection (a
   * request in flight sees its connection reset, a new one is refused), until
   * `endOutage`. The emulators' state is kept, as a provider's would be.
   */
  startOutage(): Promise<void>;
  /** Listens again on the same port. */
  endOutage(): Promise<void>;
  close(): Promise<void>;
}

/** mulberry32; `restart` replays the same sequence (a reset sandbox draws the same render times again). */
function seededRandom(seed: number): { next: () => number; restart: () => void } {
  let state = seed >>> 0;
  return {
    next() {
      state = (state + 0x6d2b79f5) | 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
    restart() {
      state = seed >>> 0;
    },
  };
}

/**
 * Waits `ms` real milliseconds, or until the client's connection closes (it
 * gave up, or its process died): a held request is then handled, or its
 * answer released, at once, so nothing waits on a client that is gone.
 */
function holdWhileConnected(raw: IncomingMessage, ms: number): Promise<void> {
  const socket = raw.socket;
  if (socket.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      socket.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    socket.once("close", done);
  });
}

/**
 * The server under the library's `startSandbox` (index.ts), the one entry
 * point tests and the CLI use: every given emulator on one loopback port,
 * each under its own prefix.
 */
export async function startSandboxServer(options: SandboxServerOptions): Promise<SandboxServer> {
  const host = options.host ?? "127.0.0.1";
  const clock = new ScaledClock(options.timeScale ?? 1);
  const seeded = seededRandom(options.seed ?? 1);
  const random = seeded.next;
  const requests = new RequestLog();
  const faults = new FaultInjector(random);
  const startFaults = options.faults ?? [];
  for (const rule of startFaults) faults.add(rule);
  let port = 0;
  const hostLiteral = host === "::1" ? "[::1]" : host;
  const context: SandboxContext = {
    clock,
    requests,
    faults,
    signedUrls: new SignedUrls(clock),
    baseUrl: () => `http://${hostLiteral}:${port}`,
    alternateBaseUrl: () => `http://localhost:${port}`,
    random,
  };

  // Closing the sandbox ends every connection at once: a client's socket opened as its request was
  // aborted (sent nothing yet, so not "idle" to Node's server) would otherwise hold the close for
  // the server's headers timeout, a minute.
  const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024, forceCloseConnections: true });

  app.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    if (CONTROL_PATH.test(path)) return;
    const segment = path.split("/")[1] ?? "";
    const provider = /^[a-f]$/.test(segment) ? segment : segment.match(/^([a-f])-/)?.[1] ?? null;
    const entry = requests.record({
      at: clock.now(),
      realAt: Date.now(),
      method: request.method,
      url: request.url,
      provider,
      headers: { ...request.headers },
    });
    (request as unknown as { sandboxLog: typeof entry }).sandboxLog = entry;
    const fault = faults.take({ provider, method: request.method, path });
    if (!fault) return;
    entry.fault = fault.kind;
    if (fault.kind === "delay") {
      await holdWhileConnected(request.raw, fault.ms);
      return;
    }
    if (fault.kind === "drop") {
      request.raw.socket.destroy();
      return reply.hijack();
    }
    if (fault.kind === "drop_after_handling") {
      (request as unknown as { dropAfterHandling: boolean }).dropAfterHandling = true;
      return;
    }
    if (fault.kind === "delay_answer") {
      (request as unknown as { delayAnswerMs: number }).delayAnswerMs = fault.ms;
      return;
    }
    reply.code(fault.status);
    for (const [name, value] of Object.entries(fault.headers ?? {})) reply.header(name, value);
    return reply.send(fault.body ?? { error: "injected fault" });
  });

  // The body as the emulator sees it, so a test can tell which job a request was for ("this job was submitted once").
  app.addHook("preHandler", async (request) => {
    const entry = (request as unknown as { sandboxLog?: { body?: Record<string, unknown> } }).sandboxLog;
    const body = request.body;
    if (entry && body !== null && typeof body === "object" && !Buffer.isBuffer(body) && !Array.isArray(body)) entry.body = body as Record<string, unknown>;
  });

  app.addHook("onSend", async (request, reply, payload) => {
    const entry = (request as unknown as { sandboxLog?: { statusCode?: number } }).sandboxLog;
    const delayAnswerMs = (request as unknown as { delayAnswerMs?: number }).delayAnswerMs;
    if (delayAnswerMs !== undefined) await holdWhileConnected(request.raw, delayAnswerMs);
    if (entry) entry.statusCode = reply.statusCode;
    if ((request as unknown as { dropAfterHandling?: boolean }).dropAfterHandling) {
      request.raw.socket.destroy();
    }
    return payload;
  });

  app.get("/_sandbox/health", async () => ({ ok: true, providers: options.emulators.map((e) => e.id) }));

  const controls: SandboxControls = {
    requests: (filter) => requests.query(filter),
    stats: () => collectStats(options.emulators, requests, clock),
    async reset() {
      for (const emulator of options.emulators) await emulator.reset?.();
      requests.clear();
      faults.clear();
      for (const rule of startFaults) faults.add(rule);
      seeded.restart();
    },
    advance(ms) {
      if (!Number.isSafeInteger(ms) || ms < 0) throw new InputError("ms", `${ms} is not a whole number of milliseconds ≥ 0`, "a whole number ≥ 0 (virtual time only moves forward)");
      clock.advance(ms);
      return clock.now();
    },
    addFaults(spec, field) {
      const rules = faultRulesOf(spec, field, options.emulators.map((emulator) => emulator.id));
      for (const rule of rules) faults.add(rule);
      return rules.length;
    },
    clearFaults: () => faults.clear(),
  };
  await registerInspectionRoutes(app, controls);

  for (const emulator of options.emulators) await emulator.register(app, context);

  try {
    await app.listen({ port: options.port ?? 0, host });
  } catch (error) {
    for (const emulator of options.emulators) await emulator.close?.();
    await app.close();
    throw listenError(error, options.port ?? 0, host);
  }
  const address = app.server.address();
  port = typeof address === "object" && address ? address.port : 0;

  return {
    get url() {
      return context.baseUrl();
    },
    port,
    context,
    app,
    controls,
    startOutage,
    endOutage,
    async close() {
      for (const emulator of options.emulators) await emulator.close?.();
      if (!app.server.listening) await endOutage();
      await app.close();
    },
  };

  async function startOutage(): Promise<void> {
    const closed = new Promise<void>((resolve) => app.server.close(() => resolve()));
    app.server.closeAllConnections();
    await closed;
  }

  async function endOutage(): Promise<void> {
    if (app.server.listening) return;
    await new Promise<void>((resolve, reject) => {
      app.server.once("error", reject);
      app.server.listen({ port, host }, () => {
        app.server.off("error", reject);
        resolve();
      });
    });
  }
}

/** A port that cannot be had is a configuration problem with one fix (another port), not a crash. */
function listenError(error: unknown, port: number, host: string): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") return new ConfigError("port", `port ${port} on ${host} is already in use; choose another port, or 0 for a free one`, "port_in_use");
  if (code === "EACCES") return new ConfigError("port", `port ${port} on ${host} may not be opened by this user; choose a port above 1023, or 0 for a free one`, "port_refused");
  return error;
}

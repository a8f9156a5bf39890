import type { Command } from "commander";
import { onStopRequests, tellUser } from "./signals.js";
import { InputError } from "../core/errors.js";
import { maskStoreAddress } from "../core/store-address.js";
import { PRIVATE_URLS_WARNING } from "../core/url-safety.js";
import { createLogger } from "../engine/logger.js";
import { runtimeOf, type GlobalOptions } from "./globals.js";
import { PORTS, wholeNumberFlag } from "./number-flags.js";
import { addStopTimeoutOption, exitAtOnce, finishStop, stopTimeoutMs } from "./stop.js";

function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function registerServe(program: Command, globals: () => GlobalOptions): void {
  addStopTimeoutOption(
    program
      .command("serve")
      .description(
        "the REST API on /v1 (tokens: `mediagate token`), provider webhooks on /webhooks/{provider}[/{jobId}], /metrics, /healthz, /readyz, and the engine (set MEDIAGATE_PUBLIC_URL to where this is reachable)",
      )
      .option("--port <n>", "port to listen on", "8788")
      .option("--host <address>", "address to listen on", "127.0.0.1")
      .option("--no-engine", "the API and webhooks only: jobs are run by `mediagate worker` processes on the same store"),
  ).action(async (flags: { port: string; host: string; stopTimeout: string; engine: boolean }) => {
    const options = globals();
    const port = wholeNumberFlag("--port", flags.port, PORTS);
    const timeoutMs = stopTimeoutMs(flags.stopTimeout);
    const runtime = runtimeOf(options);
    // Without an engine of its own the server still needs the engine object: webhooks are verified and jobs nudged through it.
    const engine = await runtime.engine();
    if (flags.engine) engine.listenForWork();
    const store = await runtime.store();
    const log = createLogger({ level: runtime.config.values.MEDIAGATE_LOG_LEVEL ?? "warn", secrets: runtime.secrets });
    // Without any API token, the API answers anyone who can reach it: only this machine may.
    const tokens = await store.hasActiveTokens();
    if (!tokens && !isLoopbackHost(flags.host)) {
      throw new InputError("--host", `no API token exists, so serve listens on loopback only, not ${flags.host}`, "127.0.0.1 or ::1, or create a token first (`mediagate token create NAME`)");
    }
    const { buildServer } = await import("../server/app.js");
    const app = await buildServer({ store, engine, providers: runtime.providers, log, now: () => Date.now() }, { runtime, log }, { engine: flags.engine ? engine : null });
    // Listening for signals before announcing: a SIGTERM right after the start line must stop gracefully, not kill.
    const stopRequested = new Promise<void>((resolve) => {
      // SIGHUP too: a server started from a terminal that closes must stop cleanly, not die mid-submit.
      onStopRequests(() => resolve(), exitAtOnce("serve"));
    });
    const address = await app.listen({ port, host: flags.host });
    // The engine says it at its start; without one, the API still takes notify_url under the lifted check.
    if (flags.engine) engine.start();
    else if (runtime.config.allowPrivateUrls) log.warn({}, PRIVATE_URLS_WARNING);
    if (options.json) process.stdout.write(`${JSON.stringify({ url: address, public_url: runtime.config.publicUrl, engine: flags.engine ? engine.owner : null })}\n`);
    else {
      const running = flags.engine ? `engine ${engine.owner}` : "no engine (--no-engine: workers run the jobs)";
      process.stderr.write(`mediagate serve on ${address}; ${running} on ${maskStoreAddress(runtime.config.store)}\n`);
      if (!runtime.config.publicUrl) process.stderr.write("MEDIAGATE_PUBLIC_URL is not set: providers are not asked to call back, jobs are tracked by polling\n");
      if (!tokens) process.stderr.write("no API token exists: the API (/v1) answers without one, so serve listens on loopback only; `mediagate token create NAME` to open it to others\n");
    }
    await stopRequested;
    tellUser("mediagate serve: stopping (no new connections; finishing the requests and submits in flight)…\n");
    await finishStop(
      "serve",
      async () => {
        // Both at once: the engine stops claiming now, while the requests in flight finish (the store stays open for both).
        await Promise.all([app.close(), flags.engine ? engine.stop() : undefined]);
        await runtime.close();
      },
      timeoutMs,
    );
  });
}

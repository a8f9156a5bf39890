import type { Command } from "commander";
import type { GlobalOptions } from "./globals.js";
import { asFlagError, sandboxOptionsOf, type SandboxFlags } from "./sandbox-flags.js";

export function registerSandbox(program: Command, globals: () => GlobalOptions): void {
  program
    .command("sandbox")
    .description("run the emulated providers on one loopback port and print the environment that points mediagate at them (see src/sandbox/README.md)")
    .option("--port <n>", "port (0 picks a free one)", "8787")
    .option("--providers <list>", "start only these providers, e.g. a,b,d (default all six)")
    .option("--time-scale <k>", "virtual time runs k times faster (ten-minute rules in seconds)", "1")
    .option("--seed <n>", "seed of the sandbox's randomness", "1")
    .option("--render-ms <ms>", "virtual ms a task runs: 500, 2000-8000, or by provider d=500,a=1000-3000")
    .option("--queue-ms <ms>", "virtual ms a task stays queued first (A, B): 0, or by provider a=500,b=0")
    .option("--slots <list>", "tasks at once per key, by provider: b=4,d=8 (C by tier: c=3, 15, 20 or 25)")
    .option("--rate <list>", "requests per minute per key, by provider: a=60 (every request), b=10 (submits), e=4")
    .option("--credits <list>", "starting balance, by provider: b=MICRO_USD, c=CREDITS, d=CREDITS")
    .option("--faults <json>", `injected faults, JSON or @FILE: '{"d": {"status5xx": 0.05}}'`)
    .option("--webhook-timestamps <clock>", "clock of B's and F's webhook timestamps: real (wall clock) or virtual", "real")
    .action(async (flags: SandboxFlags) => {
      const json = Boolean(globals().json);
      const options = sandboxOptionsOf(flags);
      // Listened for before anything starts: a stop asked for while the sandbox starts (or the moment it has said where
      // it runs) stops it once it is up, instead of killing the process by the signal's default action.
      const stopAsked = new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      // Loaded here, not at start-up: every other command starts faster without the emulators and their server.
      const { startSandbox } = await import("../sandbox/index.js");
      let sandbox: Awaited<ReturnType<typeof startSandbox>>;
      try {
        sandbox = await startSandbox(options);
      } catch (error) {
        throw asFlagError(error);
      }
      if (json) {
        const status = {
          url: sandbox.url,
          port: sandbox.port,
          providers: sandbox.providers,
          time_scale: sandbox.timeScale,
          seed: sandbox.seed,
          webhook_timestamps: sandbox.webhookTimestamps,
          base_urls: sandbox.baseUrls,
          environment: sandbox.environment,
        };
        process.stdout.write(`${JSON.stringify(status)}\n`);
      } else {
        const providers = sandbox.providers.map((provider) => provider.toUpperCase()).join(", ");
        process.stderr.write(`mediagate sandbox on ${sandbox.url} (providers ${providers}; time scale ${sandbox.timeScale}; webhook timestamps ${sandbox.webhookTimestamps}); Ctrl-C stops it\n`);
        for (const [name, value] of Object.entries(sandbox.environment)) process.stdout.write(`export ${name}=${value}\n`);
      }
      await stopAsked;
      await sandbox.stop();
    });
}

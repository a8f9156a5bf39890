import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import type { GlobalOptions } from "./runtime.js";

export function registerSandbox(program: Command, globals: () => GlobalOptions): void {
  program
    .command("sandbox")
    .description("run the emulated providers on one loopback port and print the environment that points mediagate at them")
    .option("--port <n>", "port (0 picks a free one)", "8787")
    .option("--time-scale <k>", "virtual time runs k times faster (ten-minute rules in seconds)", "1")
    .option("--seed <n>", "seed of the sandbox's randomness", "1")
    .action(async (flags: { port: string; timeScale: string; seed: string }) => {
      const options = globals();
      if (!/^\d+$/.test(flags.port) || Number(flags.port) > 65535) throw new InputError("--port", `"${flags.port}" is not a port`, "0 to 65535");
      const timeScale = Number(flags.timeScale);
      if (!(timeScale > 0)) throw new InputError("--time-scale", `"${flags.timeScale}" is not a positive number`, "a number > 0, e.g. 60");
      // Loaded here, not at start-up: every other command starts faster without the emulators and their server.
      const { createAllEmulators, sandboxEnvironment } = await import("../sandbox/all.js");
      const { startSandbox } = await import("../sandbox/server.js");
      const emulators = createAllEmulators();
      const sandbox = await startSandbox({ port: Number(flags.port), timeScale, seed: Number(flags.seed), emulators: emulators.list });
      const environment = sandboxEnvironment(sandbox.url, emulators.list.map((emulator) => emulator.id));
      if (options.json) {
        process.stdout.write(`${JSON.stringify({ url: sandbox.url, time_scale: timeScale, environment })}\n`);
      } else {
        process.stderr.write(`mediagate sandbox on ${sandbox.url} (providers ${emulators.list.map((e) => e.id.toUpperCase()).join(", ")}; time scale ${timeScale}); Ctrl-C stops it\n`);
        for (const [name, value] of Object.entries(environment)) process.stdout.write(`export ${name}=${value}\n`);
      }
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      await sandbox.close();
    });
}

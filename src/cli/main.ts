#!/usr/bin/env node
// First: V8's heap settings apply before anything else is loaded (see heap.ts).
import "./heap.js";
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { configSecrets, loadConfig } from "../core/config.js";
import { storeSecrets } from "../core/store-address.js";
import { registerBatch } from "./batch.js";
import { registerCancel } from "./cancel.js";
import { registerDemo } from "./demo.js";
import { reportError } from "./errors.js";
import { EXIT } from "./exit-codes.js";
import { registerGenerate } from "./generate.js";
import { registerJobs } from "./jobs.js";
import { registerModels } from "./models.js";
import { registerPlan } from "./plan.js";
import { registerQuote } from "./quote.js";
import { registerResubmit } from "./resubmit.js";
import { flagMistake, type GlobalOptions } from "./globals.js";
import { registerWait } from "./wait.js";
import { registerSandbox } from "./sandbox.js";
import { registerShow } from "./show.js";
import { registerSpend } from "./spend.js";
import { registerToken } from "./token.js";
import { registerBAccount } from "./b-account.js";
import { registerServe } from "./serve.js";
import { registerWorker } from "./worker.js";

/** The version in the package's own package.json (two folders up from src/cli and from dist/cli alike). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return manifest.version;
}

async function main(argv: string[]): Promise<number> {
  // After SIGHUP the terminal is gone and writes fail (EIO, EPIPE): a command that is detaching must not crash on them.
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => undefined);
  let exitCode: number = EXIT.ok;
  const setExit = (code: number) => {
    exitCode = code;
  };
  const program = new Command("mediagate")
    .description("run image and video generation jobs on six provider APIs as if they were one")
    .version(packageVersion(), "-V, --version", "print mediagate's version")
    .option("--json", "machine-readable output (one JSON document, or JSON lines for streams)")
    .option("--config <file>", "config file (default ./mediagate.config.json when present)")
    .option("--store <location>", "sqlite:PATH or postgres://… (MEDIAGATE_STORE)")
    .option("--output-dir <dir>", "where result files are saved: a folder or s3://bucket/prefix (MEDIAGATE_OUTPUT_DIR)")
    .option("--budget-usd <amount>", "refuse a command or batch whose estimate exceeds this (MEDIAGATE_BUDGET_USD)")
    .option("--log-level <level>", "engine log level on stderr: error, warn, info, debug (MEDIAGATE_LOG_LEVEL)")
    .showHelpAfterError()
    .exitOverride();
  const globals = () => program.opts<GlobalOptions>();
  registerGenerate(program, globals, setExit);
  registerBatch(program, globals, setExit);
  registerJobs(program, globals);
  registerModels(program, globals);
  registerShow(program, globals);
  registerCancel(program, globals, setExit);
  registerResubmit(program, globals);
  registerQuote(program, globals);
  registerPlan(program, globals);
  registerSpend(program, globals);
  registerWorker(program, globals);
  registerServe(program, globals);
  registerToken(program, globals);
  registerBAccount(program, globals);
  registerSandbox(program, globals);
  registerWait(program, globals, setExit);
  registerDemo(program, globals, setExit);
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? EXIT.ok : EXIT.invalidInput;
    }
    const globalOptions = program.opts<GlobalOptions>();
    // --store may carry a password the environment does not.
    let secrets: string[] = storeSecrets(globalOptions.store ?? "");
    try {
      secrets = [...secrets, ...configSecrets(loadConfig({ ...(globalOptions.config ? { configFile: globalOptions.config } : {}), overrides: globalOptions.store ? { MEDIAGATE_STORE: globalOptions.store } : {} }))];
    } catch {
      // configuration itself may be what failed
    }
    return reportError(flagMistake(globalOptions, error), Boolean(globalOptions.json), secrets);
  }
  return exitCode;
}

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`mediagate: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = EXIT.jobsFailed;
  },
);

import { BudgetError, ConfigError, InputError, MediagateError } from "../core/errors.js";
import { escapeUnprintable } from "../core/printable.js";
import { redactSecrets } from "../core/redact.js";
import { escapeLoneSurrogates } from "../core/well-formed.js";
import { EXIT } from "./exit-codes.js";

/** Prints one clear sentence for an error (or a JSON error object) and returns the exit code. */
export function reportError(error: unknown, json: boolean, secrets: string[] = []): number {
  let code = "internal_error";
  let exitCode: number = EXIT.jobsFailed;
  let message = error instanceof Error ? error.message : String(error);
  let field: string | undefined;
  if (error instanceof InputError) {
    exitCode = EXIT.invalidInput;
    code = error.code;
    field = error.field;
    message = `invalid input: ${error.message}`;
  } else if (error instanceof ConfigError) {
    exitCode = EXIT.notConfigured;
    code = error.code;
    field = error.variable;
  } else if (error instanceof BudgetError) {
    exitCode = EXIT.overBudget;
    code = error.code;
  } else if (error instanceof MediagateError) {
    code = error.code;
  }
  message = redactSecrets(message, secrets);
  if (json) {
    process.stdout.write(`${JSON.stringify({ error: { code, message, ...(field ? { field } : {}) } })}\n`);
  } else {
    // Messages may quote what the user gave (a model, a field name): escaped, so printing one cannot act on the terminal (nor show a lone surrogate as U+FFFD); the newlines between problems stay.
    process.stderr.write(`mediagate: ${message.split("\n").map((line) => escapeLoneSurrogates(escapeUnprintable(line))).join("\n")}\n`);
  }
  return exitCode;
}

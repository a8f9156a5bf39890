import { BudgetError, ConfigError, InputError, MediagateError } from "../core/errors.js";
import { PreparedInputError } from "../app/prepare.js";
import { NoEligibleTargetError } from "../engine/route.js";
import { escapeUnprintable } from "../core/printable.js";
import { redactSecrets } from "../core/redact.js";
import { escapeLoneSurrogates } from "../core/well-formed.js";
import { BatchFileError } from "./batch-file.js";
import { EXIT } from "./exit-codes.js";

/** Prints one clear sentence for an error (or a JSON error object, the API's shape: code, message, field?, targets?) and returns the exit code. */
export function reportError(error: unknown, json: boolean, secrets: string[] = []): number {
  let code = "internal_error";
  let exitCode: number = EXIT.jobsFailed;
  let message = error instanceof Error ? error.message : String(error);
  let field: string | undefined;
  let targets: Array<{ target: string; reasons: string[] }> | undefined;
  if (error instanceof InputError) {
    exitCode = EXIT.invalidInput;
    code = error.code;
    field = error.field;
    message = `invalid input: ${error.message}`;
    // A routing refusal has the API's code and its `targets`, one entry per target with why.
    const refusal = error instanceof PreparedInputError ? error.inner : error;
    if (refusal instanceof NoEligibleTargetError) {
      code = "no_eligible_target";
      targets = refusal.targets();
    }
    // A batch's refused lines, one entry each, as the API's 422 lists them.
    if (error instanceof BatchFileError) targets = error.lineEntries();
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
  targets = targets?.map((entry) => ({ target: entry.target, reasons: entry.reasons.map((reason) => redactSecrets(reason, secrets)) }));
  if (json) {
    process.stdout.write(`${JSON.stringify({ error: { code, message, ...(field ? { field } : {}), ...(targets ? { targets } : {}) } })}\n`);
  } else {
    // Messages may quote what the user gave (a model, a field name): escaped, so printing one cannot act on the terminal (nor show a lone surrogate as U+FFFD); the newlines between problems stay.
    process.stderr.write(`mediagate: ${message.split("\n").map((line) => escapeLoneSurrogates(escapeUnprintable(line))).join("\n")}\n`);
  }
  return exitCode;
}

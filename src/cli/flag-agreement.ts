import { InputError } from "../core/errors.js";

/**
 * A common flag (`--prompt`, `--width`, `--height`, `--seed`) and the same
 * key in `--input` must agree: which one was meant is the user's call, and
 * picking one silently could send (and charge for) what was not asked.
 * Returns the flag's value for the request; throws an InputError naming both.
 */
export function agreeingFlag<T extends string | number>(key: string, flagValue: T, input: Record<string, unknown>): T {
  if (!Object.hasOwn(input, key) || input[key] === flagValue) return flagValue;
  throw new InputError(
    `--${key}`,
    `says ${JSON.stringify(flagValue)} but --input sets ${key} to ${JSON.stringify(input[key])}`,
    `--${key} or "${key}" in --input, or the same value in both`,
  );
}

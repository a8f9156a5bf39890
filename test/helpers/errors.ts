import { BudgetError, ConfigError, InputError, ProviderError } from "../../src/core/errors.js";

/** Runs `run` and returns the error of class `kind` it throws; fails the test if it throws nothing or something else. */
export function thrown<T extends Error>(kind: abstract new (...args: never[]) => T, run: () => unknown): T {
  try {
    run();
  } catch (error) {
    if (error instanceof kind) return error;
    throw error;
  }
  throw new Error(`expected a ${kind.name}`);
}

/** Runs `run` and returns the InputError it throws; fails the test if it throws nothing or something else. */
export function inputError(run: () => unknown): InputError {
  return thrown(InputError, run);
}

/** Runs `run` and returns the ConfigError it throws; fails the test otherwise. */
export function configError(run: () => unknown): ConfigError {
  return thrown(ConfigError, run);
}

/** Runs `run` and returns the BudgetError it throws; fails the test otherwise. */
export function budgetError(run: () => unknown): BudgetError {
  return thrown(BudgetError, run);
}

/** Awaits `run` and returns the ProviderError it rejects with; fails the test otherwise. */
export async function providerError(run: () => Promise<unknown>): Promise<ProviderError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error("expected a ProviderError");
}

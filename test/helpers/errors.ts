import { InputError, ProviderError } from "../../src/core/errors.js";

/** Runs `run` and returns the InputError it throws; fails the test if it throws nothing or something else. */
export function inputError(run: () => unknown): InputError {
  try {
    run();
  } catch (error) {
    if (error instanceof InputError) return error;
    throw error;
  }
  throw new Error("expected an InputError");
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

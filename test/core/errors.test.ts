import { describe, expect, it } from "vitest";
import {
  BudgetError,
  ConfigError,
  InputError,
  isMediagateError,
  MediagateError,
  OutcomeUnknownError,
  ProviderError,
  UnsafeUrlError,
} from "../../src/core/errors.js";

describe("domain errors are values with stable codes", () => {
  it("an InputError names the field, what was wrong and what is allowed", () => {
    const error = new InputError("--width", "must be a multiple of 16, got 100", "256 to 2048");
    expect(error.code).toBe("invalid_input");
    expect(error.message).toBe("--width: must be a multiple of 16, got 100 (allowed: 256 to 2048)");
    expect([error.field, error.reason, error.allowed]).toEqual(["--width", "must be a multiple of 16, got 100", "256 to 2048"]);
    expect(error.name).toBe("InputError");
  });

  it("an InputError without an allowed range says only the field and the reason", () => {
    expect(new InputError("prompt", "must not be empty").message).toBe("prompt: must not be empty");
    expect(new InputError("prompt", "must not be empty", "").message).toBe("prompt: must not be empty");
  });

  it("a ConfigError names the variable to set and is not_configured unless a more precise code is given", () => {
    const error = new ConfigError("MEDIAGATE_D_API_KEY", "D is not configured: set MEDIAGATE_D_API_KEY");
    expect([error.code, error.variable, error.message, error.name]).toEqual([
      "not_configured",
      "MEDIAGATE_D_API_KEY",
      "D is not configured: set MEDIAGATE_D_API_KEY",
      "ConfigError",
    ]);
    expect(new ConfigError("MEDIAGATE_STORE", "cannot reach the store", "store_unreachable").code).toBe("store_unreachable");
  });

  it("a BudgetError carries the estimate and the budget in micro-USD", () => {
    const error = new BudgetError(3_000_000, 2_000_000, "estimated cost $3.0000 exceeds the budget of $2.0000");
    expect([error.code, error.estimateMicroUsd, error.budgetMicroUsd, error.name]).toEqual(["over_budget", 3_000_000, 2_000_000, "BudgetError"]);
  });

  it("a ProviderError carries its own code, the provider's detail and the cause", () => {
    const cause = new Error("socket hang up");
    const detail = { provider: "d", httpStatus: 429, providerCode: "rate_limited", retryable: true, backpressure: true, retryAfterMs: 2_000 };
    const error = new ProviderError("slot_limit", "D has no free slot", detail, { cause });
    expect([error.code, error.message, error.detail, error.cause, error.name]).toEqual(["slot_limit", "D has no free slot", detail, cause, "ProviderError"]);
  });

  it("an OutcomeUnknownError is submit_outcome_unknown and names the provider", () => {
    const cause = new Error("timeout after send");
    const error = new OutcomeUnknownError("c", "the submit may have reached C", { cause });
    expect([error.code, error.provider, error.message, error.cause, error.name]).toEqual(["submit_outcome_unknown", "c", "the submit may have reached C", cause, "OutcomeUnknownError"]);
  });

  it("an UnsafeUrlError quotes the refused URL and why", () => {
    const error = new UnsafeUrlError("http://10.0.0.1/x", "private address");
    expect([error.code, error.url, error.message, error.name]).toEqual(["unsafe_url", "http://10.0.0.1/x", "refused URL http://10.0.0.1/x: private address", "UnsafeUrlError"]);
  });

  it("every domain error is a MediagateError and an Error; other values are not", () => {
    const errors = [new InputError("f", "r"), new ConfigError("V", "m"), new BudgetError(1, 0, "m"), new ProviderError("c", "m", { provider: "a", retryable: false }), new OutcomeUnknownError("b", "m"), new UnsafeUrlError("u", "r"), new MediagateError("some_code", "m")];
    for (const error of errors) {
      expect(isMediagateError(error)).toBe(true);
      expect(error).toBeInstanceOf(Error);
    }
    expect(new MediagateError("some_code", "m").name).toBe("MediagateError");
    for (const value of [new Error("plain"), new TypeError("t"), { code: "invalid_input", message: "m" }, null, undefined, "invalid_input"]) expect(isMediagateError(value)).toBe(false);
  });
});

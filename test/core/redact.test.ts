import { describe, expect, it } from "vitest";
import { redactDeep, redactSecrets } from "../../src/core/redact.js";

describe("redaction of a provider's answer kept as detail", () => {
  it("every string of a nested answer loses the secret, object keys included; numbers, nulls and booleans are kept", () => {
    const answer = { status: "Failed", details: ["key sk-secret-123 refused", { "sk-secret-123": 1, ok: true, none: null }], credits: 4.5 };
    expect(redactDeep(answer, (text) => redactSecrets(text, ["sk-secret-123"]))).toEqual({
      status: "Failed",
      details: ["key [redacted] refused", { "[redacted]": 1, ok: true, none: null }],
      credits: 4.5,
    });
  });

  it("the answer itself is not changed, and values that are not plain data are kept as they are", () => {
    const bytes = Buffer.from("sk-secret-123");
    const answer = { message: "sk-secret-123", bytes };
    const copy = redactDeep(answer, (text) => redactSecrets(text, ["sk-secret-123"]));
    expect(answer.message).toBe("sk-secret-123");
    expect(copy.bytes).toBe(bytes);
  });
});

import { describe, expect, it } from "vitest";
import { CREDENTIAL_HEADERS, displayUrl, redactDeep, redactHeaders, redactSecrets } from "../../src/core/redact.js";

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

  it("an object without a prototype (parsed JSON kept by some libraries) is redacted like a plain one", () => {
    const answer = Object.assign(Object.create(null) as Record<string, unknown>, { token: "sk-secret-123" });
    expect(redactDeep(answer, (text) => redactSecrets(text, ["sk-secret-123"]))).toEqual({ token: "[redacted]" });
  });

  it("undefined values and functions are kept as they are", () => {
    const callback = () => "sk-secret-123";
    expect(redactDeep({ missing: undefined, callback, list: [undefined] }, (text) => redactSecrets(text, ["sk-secret-123"]))).toEqual({ missing: undefined, callback, list: [undefined] });
  });

  it("a class instance or a Date is kept as it is, not copied into a plain object", () => {
    class Detail {
      constructor(readonly message: string) {}
    }
    const detail = new Detail("sk-secret-123");
    const at = new Date(0);
    const copy = redactDeep({ detail, at }, (text) => redactSecrets(text, ["sk-secret-123"]));
    expect(copy.detail).toBe(detail);
    expect(copy.at).toBe(at);
  });
});

describe("redaction of secrets in text", () => {
  it("every occurrence of every secret is replaced", () => {
    expect(redactSecrets("key=abcd1234 again abcd1234, client wxyz", ["abcd1234", "wxyz"])).toBe("key=[redacted] again [redacted], client [redacted]");
  });

  it("a secret of four characters is redacted; shorter ones, empty ones and missing ones are ignored (they would shred the text)", () => {
    expect(redactSecrets("pin 1234 ok", ["1234"])).toBe("pin [redacted] ok");
    expect(redactSecrets("a status of ok", ["ok", "a", "", undefined])).toBe("a status of ok");
  });
});

describe("redaction of credential headers", () => {
  it("authorization, x-key, x-api-key, api-key, cookie and set-cookie are the credential headers", () => {
    expect([...CREDENTIAL_HEADERS].sort()).toEqual(["api-key", "authorization", "cookie", "set-cookie", "x-api-key", "x-key"]);
  });

  it("credential values are replaced whatever the case of the name; other headers are kept; the original is unchanged", () => {
    const headers = {
      Authorization: "Bearer sk-1",
      "X-Key": "d-key",
      "x-api-key": "f-key",
      "API-Key": "c-key",
      Cookie: "session=1",
      "set-cookie": "session=2",
      "content-type": "application/json",
      "x-request-id": "req-1",
    };
    expect(redactHeaders(headers)).toEqual({
      Authorization: "[redacted]",
      "X-Key": "[redacted]",
      "x-api-key": "[redacted]",
      "API-Key": "[redacted]",
      Cookie: "[redacted]",
      "set-cookie": "[redacted]",
      "content-type": "application/json",
      "x-request-id": "req-1",
    });
    expect(headers.Authorization).toBe("Bearer sk-1");
  });
});

describe("a URL quoted in an error", () => {
  it("keeps origin and path, never the user part or the query; text that is not a URL up to its query, or nothing when it holds an @", () => {
    expect(displayUrl("https://user:pa55@files.example/a/b.png?X-Amz-Signature=s3cr3t#frag")).toBe("https://files.example/a/b.png?…");
    expect(displayUrl("https://files.example:8443/a")).toBe("https://files.example:8443/a");
    expect(displayUrl("http://[fd00::1]/x")).toBe("http://[fd00::1]/x");
    expect(displayUrl("/relative/path?token=s3cr3t")).toBe("/relative/path");
    expect(displayUrl("user:pa55@host/x")).toBe("user:…"); // a URL of scheme "user:": only its scheme is shown
    expect(displayUrl("admin@host/x")).toBe("(not a valid URL)");
    expect(displayUrl("mailto:someone@example.com")).toBe("mailto:…");
    expect(displayUrl("file:///etc/passwd")).toBe("file:///etc/passwd");
  });
});

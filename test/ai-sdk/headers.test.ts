import { describe, expect, it } from "vitest";
import { headerWarnings } from "../../src/ai-sdk/headers.js";

const NOT_SENT = "mediagate's engine sends the provider requests itself from its durable queue, with the configured credentials";

describe("AI SDK provider: a call's HTTP headers", () => {
  it("AI SDK headers: none given, none set or only the SDK's own user-agent (in any case) is nothing to warn about", () => {
    expect(headerWarnings(undefined)).toEqual([]);
    expect(headerWarnings({})).toEqual([]);
    expect(headerWarnings({ "x-trace": undefined })).toEqual([]);
    expect(headerWarnings({ "user-agent": "ai/6.0.0", "User-Agent": "ai/6.0.0" })).toEqual([]);
  });

  it("AI SDK headers: the headers a caller set are not sent, and one warning names each of them in order, as written", () => {
    expect(headerWarnings({ "X-Trace": "abc", "user-agent": "ai/6.0.0", "x-unset": undefined, Authorization: "Bearer sk-x" })).toEqual([
      { type: "unsupported", feature: "headers", details: `not sent: X-Trace, Authorization; ${NOT_SENT}` },
    ]);
    // An empty value was still set by the caller.
    expect(headerWarnings({ "x-empty": "" })).toEqual([{ type: "unsupported", feature: "headers", details: `not sent: x-empty; ${NOT_SENT}` }]);
  });
});

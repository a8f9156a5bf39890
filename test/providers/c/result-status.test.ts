import { describe, expect, it } from "vitest";
import type { ProviderStatus } from "../../../src/providers/adapter.js";
import { createCAdapter } from "../../../src/providers/c/index.js";
import { resultStatusOf } from "../../../src/providers/c/result-status.js";
import { decodeEnvelope } from "../../../src/providers/c/envelope.js";

const MINUTE = 60_000;

describe("C: result statuses", () => {
  it("C: status 5 is pending and holds its slot", () => {
    expect(resultStatusOf({ status: 5 }, 9 * MINUTE, {})).toMatchObject({ kind: "pending", holdsSlot: true });
  });

  it("C: after ten minutes in status 5 the provider has released the slot", () => {
    expect(resultStatusOf({ status: 5 }, 10 * MINUTE, {})).toMatchObject({ kind: "pending", holdsSlot: false });
  });

  it("C: status 1 succeeds with Resp.url", () => {
    expect(resultStatusOf({ status: 1, url: "https://e.com/v.mp4" }, 0, {})).toMatchObject({ kind: "succeeded", outputs: [{ url: "https://e.com/v.mp4" }] });
    expect(resultStatusOf({ status: 1 }, 0, {})).toBe("success_without_url");
  });

  it("C: status 7 is a moderation failure with no charge", () => {
    const status = resultStatusOf({ status: 7 }, 0, {}) as ProviderStatus;
    expect(status).toMatchObject({ kind: "failed", code: "moderation_failed" });
    const adapter = createCAdapter({ baseUrl: "https://c.example", apiKey: "key", tier: "free" });
    const request = adapter.validate({ provider: "c", model: "v6", input: { prompt: "x" } });
    expect(adapter.charge(request, status)).toEqual({ microUsd: 0, source: "C refunds the credits of a moderation failure (status 7)" });
  });

  it("C: status 8 is a generation failure", () => {
    expect(resultStatusOf({ status: 8 }, 0, {})).toMatchObject({ kind: "failed", code: "generation_failed" });
  });

  it("C: status 6 is deleted, with its own code", () => {
    expect(resultStatusOf({ status: 6 }, 0, {})).toMatchObject({ kind: "failed", code: "deleted" });
  });

  it("C: any other status is unknown: pending, polled on until the deadline", () => {
    expect(resultStatusOf({ status: 3 }, 0, {})).toMatchObject({ kind: "pending", providerStatus: "3 (unknown status)", holdsSlot: true, unrecognised: { said: "C answered Resp.status 3", taskUnknown: false } });
    expect(resultStatusOf({ status: 42 }, 11 * MINUTE, {})).toMatchObject({ kind: "pending", holdsSlot: false });
  });
});

describe("C: envelope", () => {
  it("C: an answer is an envelope only with an integer ErrCode", () => {
    expect(decodeEnvelope('{"ErrCode":0,"ErrMsg":"ok","Resp":{"video_id":"1"}}')).toEqual({ ErrCode: 0, ErrMsg: "ok", Resp: { video_id: "1" } });
    expect(decodeEnvelope('{"ErrCode":500044,"ErrMsg":"full"}')?.ErrCode).toBe(500044);
    expect(decodeEnvelope('{"ErrCode":"0","Resp":{}}')).toBeNull();
    expect(decodeEnvelope("<html>bad gateway</html>")).toBeNull();
    expect(decodeEnvelope('{"error":"x"}')).toBeNull();
  });
});

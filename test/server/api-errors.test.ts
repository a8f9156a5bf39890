import { describe, expect, it } from "vitest";
import { ConflictError, IdempotencyKeyReusedError, LineProblemsError, NotFoundError } from "../../src/app/errors.js";
import { BudgetError, ConfigError, InputError, MediagateError } from "../../src/core/errors.js";
import { NoEligibleTargetError } from "../../src/engine/route.js";
import { ApiError, apiErrorOf, failureOf, frameworkErrorCode } from "../../src/server/api/errors.js";
import { batchLines } from "../../src/server/api/batches.js";

/** The API's one error shape for each domain error, unit by unit (issue 35: the mutation run left these unchecked). */
describe("API errors: a domain error as the API says it", () => {
  it("each kind maps to its code, status, field and targets; anything else is not the client's to see", () => {
    const verdicts = [{ target: { name: "e/v3" }, reasons: ["unpriced under a budget"] }, { target: { name: "d/gen-2-pro" }, reasons: ["over budget", "halted"] }];
    const routed = apiErrorOf(new NoEligibleTargetError("route", verdicts as never))!;
    expect([routed.status, routed.body()]).toEqual([
      422,
      { error: { code: "no_eligible_target", message: "no target of the route can take this request", field: "route", targets: [{ target: "e/v3", reasons: ["unpriced under a budget"] }, { target: "d/gen-2-pro", reasons: ["over budget", "halted"] }] } },
    ]);
    expect(apiErrorOf(new NotFoundError("no job x"))!.body()).toEqual({ error: { code: "not_found", message: "no job x" } });
    expect(apiErrorOf(new NotFoundError("no job x"))!.status).toBe(404);
    const reused = apiErrorOf(new IdempotencyKeyReusedError("k1"))!;
    expect([reused.status, reused.body().error.code, reused.body().error.field]).toEqual([422, "idempotency_key_reused", "Idempotency-Key"]);
    expect(apiErrorOf(new ConflictError("ref_conflict", "ref x is taken", "ref"))!.body()).toEqual({ error: { code: "ref_conflict", message: "ref x is taken", field: "ref" } });
    expect(apiErrorOf(new ConflictError("not_cancellable", "it ended"))!.body()).toEqual({ error: { code: "not_cancellable", message: "it ended" } });
    expect(apiErrorOf(new ConflictError("not_cancellable", "it ended"))!.status).toBe(409);
    const lines = apiErrorOf(new LineProblemsError([{ origin: "line 2", error: new InputError("model", "is required") }]))!;
    expect(lines.body()).toEqual({ error: { code: "invalid_input", message: "1 line(s) of the batch are refused; nothing was queued", field: "body", targets: [{ target: "line 2", reasons: ["model: is required"] }] } });
    expect(apiErrorOf(new InputError("width", "must be a whole number"))!.body()).toEqual({ error: { code: "invalid_input", message: "width: must be a whole number", field: "width" } });
    const budget = apiErrorOf(new BudgetError(60_000, 50_000, "over the token's budget"))!;
    expect([budget.status, budget.body()]).toEqual([402, { error: { code: "over_budget", message: "over the token's budget" } }]);
    const config = apiErrorOf(new ConfigError("MEDIAGATE_D_API_KEY", "D is not configured"))!;
    expect([config.status, config.body().error.field]).toEqual([503, "MEDIAGATE_D_API_KEY"]);
    expect(apiErrorOf(new MediagateError("invalid_input", "bad"))!.body()).toEqual({ error: { code: "invalid_input", message: "bad" } });
    expect(apiErrorOf(new MediagateError("something_else", "x"))).toBeNull();
    expect(apiErrorOf(new TypeError("a bug"))).toBeNull();
    const own = new ApiError("payload_too_large", "too big");
    expect(apiErrorOf(own)).toBe(own);
  });

  it("an unexpected failure is logged by its message and code, never its stack", () => {
    expect(failureOf(Object.assign(new Error("connect refused"), { code: "ECONNREFUSED" }))).toEqual({ err: "connect refused", code: "ECONNREFUSED" });
    expect(failureOf(new Error(""))).toEqual({ err: "Error" });
    expect(failureOf(Object.assign(new Error("x"), { code: 42 }))).toEqual({ err: "x" });
    expect(failureOf("plain")).toEqual({ err: "plain" });
    expect(failureOf(null)).toEqual({ err: "null" });
  });
});

describe("API batches: a body of requests", () => {
  const line = (ref: string) => ({ ref, provider: "d", model: "gen-2-pro", input: { prompt: ref } });

  it("a JSON array, or JSON lines (blank lines skipped) when the type is not JSON", () => {
    expect(batchLines(Buffer.from(JSON.stringify([line("a"), line("b")])), "application/json")).toEqual([line("a"), line("b")]);
    const text = `${JSON.stringify(line("a"))}\n\n  \r\n${JSON.stringify(line("b"))}\n`;
    for (const type of ["application/x-ndjson", "application/jsonl", "text/plain", undefined]) expect(batchLines(Buffer.from(text), type), String(type)).toEqual([line("a"), line("b")]);
  });

  it("JSON that is not an array, JSON that does not parse, and a line that is not JSON are refused saying which", () => {
    expect(() => batchLines(Buffer.from(JSON.stringify(line("a"))), "application/json")).toThrow(/^body: must be a JSON array of requests \(or JSON lines\)$/);
    const broken = (() => {
      try {
        batchLines(Buffer.from("{not json"), "application/json");
      } catch (error) {
        return error as ApiError;
      }
      return null;
    })();
    expect(broken).toBeInstanceOf(ApiError);
    expect(broken!.body().error).toEqual({ code: "invalid_json", message: "the body is not JSON: send a JSON array of requests, or JSON lines with Content-Type application/x-ndjson" });
    const arrayBroken = (() => {
      try {
        batchLines(Buffer.from("[1, 2"), "application/json");
      } catch (error) {
        return error as ApiError;
      }
      return null;
    })();
    expect(arrayBroken!.body().error.code).toBe("invalid_json");
    const lineBroken = (() => {
      try {
        batchLines(Buffer.from(`${JSON.stringify(line("a"))}\n{oops}\n`), "application/x-ndjson");
      } catch (error) {
        return error as ApiError;
      }
      return null;
    })();
    expect(lineBroken!.body().error).toEqual({ code: "invalid_json", message: "line 2 is not JSON", field: "line 2" });
  });
});

describe("what Fastify refused, and a conflict without a field", () => {
  it("a 413 is payload_too_large, a 415 unsupported_media_type, any other 4xx of the framework bad_request", () => {
    expect(frameworkErrorCode(413)).toBe("payload_too_large");
    expect(frameworkErrorCode(415)).toBe("unsupported_media_type");
    expect(frameworkErrorCode(400)).toBe("bad_request");
    expect(frameworkErrorCode(431)).toBe("bad_request");
  });

  it("a conflict that names no field answers none", () => {
    const answer = apiErrorOf(new ConflictError("not_cancellable", "job job_1 has ended"))!;
    expect(answer.status).toBe(409);
    expect(answer.body().error).toEqual({ code: "not_cancellable", message: "job job_1 has ended" });
    expect(apiErrorOf(new ConflictError("ref_conflict", "taken", "ref"))!.body().error).toMatchObject({ field: "ref" });
  });
});

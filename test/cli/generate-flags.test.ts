import { describe, expect, it } from "vitest";
import { requestFromFlags as fromFlags, type RequestFlags } from "../../src/cli/generate.js";
import type { JobRequest } from "../../src/providers/adapter.js";
import { inputError } from "../helpers/errors.js";

/** Native flags make a native request. */
const requestFromFlags = (given: RequestFlags) => fromFlags(given) as JobRequest;
const flags = (extra: Partial<RequestFlags>): RequestFlags => ({ provider: "d", model: "gen-2-pro", ...extra });

describe("generate: common flags against --input", () => {
  it("a flag contradicting the same key in --input is refused naming both (--prompt, --width, --height, --seed)", () => {
    const cases: Array<[Partial<RequestFlags>, string, RegExp]> = [
      [{ prompt: "a fox", input: '{"prompt":"a hen"}' }, "--prompt", /says "a fox" but --input sets prompt to "a hen"/],
      [{ width: "1024", input: '{"width":512}' }, "--width", /says 1024 but --input sets width to 512/],
      [{ height: "768", input: '{"height":"768"}' }, "--height", /says 768 but --input sets height to "768"/],
      [{ seed: "7", input: '{"seed":8}' }, "--seed", /says 7 but --input sets seed to 8/],
    ];
    for (const [given, field, reason] of cases) {
      const error = inputError(() => requestFromFlags(flags(given)));
      expect(error.field).toBe(field);
      expect(error.reason).toMatch(reason);
      expect(error.allowed).toMatch(/or the same value in both/);
    }
  });

  it("a flag and --input giving the same value agree, and each alone is taken as given", () => {
    const request = requestFromFlags(flags({ prompt: "a fox", width: "1024", height: "768", seed: "7", input: '{"prompt":"a fox","width":1024,"height":768,"seed":7,"extra":true}' }));
    expect(request.input).toEqual({ prompt: "a fox", width: 1024, height: 768, seed: 7, extra: true });
    expect(requestFromFlags(flags({ width: "1024", input: '{"height":768}' })).input).toEqual({ width: 1024, height: 768 });
    expect(requestFromFlags(flags({ input: '{"width":512}' })).input).toEqual({ width: 512 });
  });
});

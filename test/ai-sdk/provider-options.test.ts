import { InvalidArgumentError } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { checkCallText, mediagateCallOptions } from "../../src/ai-sdk/provider-options.js";

/** The error `read` throws, or null. */
function thrownBy(read: () => unknown): unknown {
  try {
    read();
    return null;
  } catch (error) {
    return error;
  }
}

describe("AI SDK provider: what a call says through providerOptions.mediagate", () => {
  it("AI SDK options: none given, or other namespaces absent, is no option; providerOptions.mediagate is read as given", () => {
    expect(mediagateCallOptions(undefined)).toEqual({});
    expect(mediagateCallOptions({})).toEqual({});
    const given = { ref: "fox", provider_options: { d: { output_format: "png" } }, route_by: "price", fallback_on_failure: true };
    expect(mediagateCallOptions({ mediagate: given })).toEqual(given);
  });

  it("AI SDK options: another provider's options are refused (never dropped), each namespace named, the first as the argument", () => {
    const error = thrownBy(() => mediagateCallOptions({ blackForestLabs: { width: 512 }, mediagate: { ref: "fox" }, openai: { style: "vivid" } }));
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      argument: "providerOptions.blackForestLabs",
      message:
        "providerOptions.blackForestLabs, providerOptions.openai: mediagate reads only providerOptions.mediagate, and does not drop options that would change the result; " +
        "give a provider's native fields as providerOptions.mediagate.provider_options.<provider> (e.g. { d: { width: 512 } })",
    });
  });

  it("AI SDK options: a key of providerOptions.mediagate that is not an option is refused naming it and the options allowed", () => {
    const error = thrownBy(() => mediagateCallOptions({ mediagate: { ref: "fox", seed: 7 } }));
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      argument: "providerOptions.mediagate.seed",
      message: "providerOptions.mediagate.seed is not an option of mediagate (allowed: ref, provider_options, route_by, fallback_on_failure, cancel_after_s)",
    });
  });

  it("AI SDK options: a prompt or ref that is well-formed passes; one with a lone surrogate is refused naming it; a ref that is not text is left to submit", () => {
    expect(() => checkCallText("a fox 🦊", { ref: "fox 🦊" })).not.toThrow();
    expect(() => checkCallText(undefined, { ref: 7 as unknown as string })).not.toThrow();
    const prompt = thrownBy(() => checkCallText("a fox\ud800", {}));
    expect(prompt).toMatchObject({
      argument: "prompt",
      message: "prompt: holds a lone surrogate U+D800 at position 6, which is not a character (allowed: well-formed Unicode text (a UTF-16 surrogate only as half of a pair))",
    });
    const ref = thrownBy(() => checkCallText("a fox", { ref: "\udc00fox" }));
    expect(InvalidArgumentError.isInstance(ref)).toBe(true);
    expect(ref).toMatchObject({ argument: "providerOptions.mediagate.ref", message: expect.stringMatching(/^providerOptions\.mediagate\.ref: holds a lone surrogate U\+DC00 at position 1,/) });
  });
});

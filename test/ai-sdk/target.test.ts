import { NoSuchModelError } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { checkTarget, modelIdOf, routingOf, type MediagateTarget } from "../../src/ai-sdk/target.js";

/** The NoSuchModelError `checkTarget` throws for `target`, or null when it takes it. */
function refusal(target: unknown, modelType: "imageModel" | "videoModel" = "imageModel"): NoSuchModelError | null {
  try {
    checkTarget(target as MediagateTarget, modelType);
    return null;
  } catch (error) {
    expect(NoSuchModelError.isInstance(error)).toBe(true);
    return error as NoSuchModelError;
  }
}

describe("AI SDK provider: a model's target or route", () => {
  it("AI SDK target: the model id is the target, or the route's targets joined as --route takes them", () => {
    expect(modelIdOf("d/gen-2-pro")).toBe("d/gen-2-pro");
    expect(modelIdOf({ route: ["d/gen-2-pro", "f/img-v2"] })).toBe("d/gen-2-pro,f/img-v2");
  });

  it("AI SDK target: provider/model targets and routes of them make a model; B's targets name vendor, model and function", () => {
    expect(refusal("d/gen-2-pro")).toBeNull();
    expect(refusal({ route: ["d/gen-2-pro", "f/img-v2"], route_by: "price" })).toBeNull();
    expect(refusal("b/acme/pix/generate", "videoModel")).toBeNull();
  });

  it("AI SDK target: a target that is not provider/model is no model, named by the model id and kind, saying why", () => {
    expect(refusal("gen-2-pro")).toMatchObject({ modelId: "gen-2-pro", modelType: "imageModel", message: expect.stringMatching(/^mediagate: model: "gen-2-pro" does not start with a provider/) });
    expect(refusal("a/", "videoModel")).toMatchObject({ modelId: "a/", modelType: "videoModel", message: expect.stringMatching(/^mediagate: model: "a\/" is not provider\/model/) });
  });

  it("AI SDK target: a route's target that is not provider/model is refused naming its place in the route", () => {
    expect(refusal({ route: ["d/gen-2-pro", "f"] })).toMatchObject({ modelId: "d/gen-2-pro,f", message: expect.stringMatching(/^mediagate: route\[1\]: "f" is not provider\/model/) });
    expect(refusal({ route: ["x/gen-2-pro"] })).toMatchObject({ modelId: "x/gen-2-pro", message: expect.stringMatching(/^mediagate: route\[0\]: "x\/gen-2-pro" does not start with a provider/) });
  });

  it("AI SDK target: a route that is empty, not a list, or no route at all (a caller outside TypeScript) is refused saying what a route is", () => {
    const what = 'mediagate: a route is a non-empty list of targets, e.g. { route: ["d/gen-2-pro", "f/img-v2"] }';
    expect(refusal({ route: [] })).toMatchObject({ modelId: "", message: what });
    expect(refusal({ route: "d/gen-2-pro" }, "videoModel")).toMatchObject({ modelId: "[object Object]", modelType: "videoModel", message: what });
    expect(refusal(null)).toMatchObject({ modelId: "null", message: what });
    expect(refusal(7)).toMatchObject({ modelId: "7", message: what });
  });

  it("AI SDK target: a call's routing is the model's target, or its route with the call's route_by and fallback_on_failure over the model's; fields set by neither are left out", () => {
    expect(routingOf("d/gen-2-pro", {})).toStrictEqual({ model: "d/gen-2-pro" });
    expect(routingOf("d/gen-2-pro", { route_by: "price", fallback_on_failure: false })).toStrictEqual({ model: "d/gen-2-pro", route_by: "price", fallback_on_failure: false });
    const route = ["d/gen-2-pro", "f/img-v2"];
    expect(routingOf({ route }, {})).toStrictEqual({ route });
    expect(routingOf({ route, route_by: "price", fallback_on_failure: true }, {})).toStrictEqual({ route, route_by: "price", fallback_on_failure: true });
    expect(routingOf({ route, route_by: "price", fallback_on_failure: true }, { route_by: "order", fallback_on_failure: false })).toStrictEqual({ route, route_by: "order", fallback_on_failure: false });
  });
});

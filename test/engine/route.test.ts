import { describe, expect, it } from "vitest";
import { checkCommonRequest, type CommonRequest } from "../../src/core/common-request.js";
import { loadConfig } from "../../src/core/config.js";
import { InputError } from "../../src/core/errors.js";
import type { ProviderId } from "../../src/providers/adapter.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import { jobRouteOf, NoEligibleTargetError, parseTarget, planRoute, routedRequestFrom, type RouteWorld } from "../../src/engine/route.js";
import { inputError } from "../helpers/errors.js";

/** Real adapters; D and F configured (addresses never called: nothing here sends), the others not. */
function world(options: { halted?: Partial<Record<ProviderId, string>>; leftMicroUsd?: number | null; allowUnpriced?: boolean } = {}): RouteWorld {
  const registry = createProviderRegistry(
    loadConfig({
      env: { MEDIAGATE_D_BASE_URL: "http://127.0.0.1:65530/d", MEDIAGATE_D_API_KEY: "k", MEDIAGATE_F_BASE_URL: "http://127.0.0.1:65530/f", MEDIAGATE_F_API_KEY: "k" },
      cwd: process.cwd(),
    }),
  );
  return {
    adapter: (provider) => {
      const entry = registry.get(provider);
      return { adapter: entry?.adapter ?? null, missing: entry?.missing ?? [] };
    },
    context: async () => {
      throw new Error("no provider is read in these tests");
    },
    halted: async () => new Map(Object.entries(options.halted ?? {}) as Array<[ProviderId, string]>),
    budget: { leftMicroUsd: options.leftMicroUsd ?? null, allowUnpriced: options.allowUnpriced ?? false },
  };
}

const fox: CommonRequest = { task: "image", prompt: "a red fox in snow", size: "1024x1024" };
const targets = (...names: string[]) => names.map((name, index) => parseTarget(name, `route[${index}]`));
const noReadImages = (text: string): string => text;

describe("routing: targets", () => {
  it("routing: a target is provider/model, or provider/model/operation; B's are b/<vendor>/<model>/<function>", () => {
    expect(parseTarget("d/gen-2-pro", "model")).toEqual({ provider: "d", model: "gen-2-pro", name: "d/gen-2-pro" });
    expect(parseTarget("e/v3/expand-image", "model")).toEqual({ provider: "e", model: "v3", operation: "expand-image", name: "e/v3/expand-image" });
    expect(parseTarget("b/vendorx/video-2.5/text-to-video", "model")).toEqual({ provider: "b", model: "vendorx/video-2.5", operation: "text-to-video", name: "b/vendorx/video-2.5/text-to-video" });
  });

  it("routing: a malformed target is refused naming its field and what is allowed", () => {
    for (const [text, reason] of [
      ["x/gen-2-pro", /does not start with a provider/],
      ["d", /is not provider\/model/],
      ["d//gen", /is not provider\/model/],
      ["b/vendorx/video-2.5", /a B target is b\/<vendor>\/<model>\/<function>/],
      ["d/a/b/c", /too many parts/],
    ] as const) {
      const error = inputError(() => parseTarget(text, "route[1]"));
      expect(error.field).toBe("route[1]");
      expect(error.reason).toMatch(reason);
      expect(error.allowed).toMatch(/provider\/model/);
    }
  });
});

describe("routing: the wire form", () => {
  it("routing: a misspelt field is refused naming it, never dropped", () => {
    const error = inputError(() => routedRequestFrom({ task: "image", prompt: "p", sise: "1x1", model: "d/gen-2-pro" }, noReadImages));
    expect(error.field).toBe("sise");
    expect(error.reason).toBe("is not a field of a common request");
  });

  it("routing: exactly one of model and route; a route is a non-empty list without repeats; route_by is order, price or time", () => {
    expect(inputError(() => routedRequestFrom({ task: "image", prompt: "p" }, noReadImages)).reason).toMatch(/or route is required/);
    expect(inputError(() => routedRequestFrom({ task: "image", prompt: "p", model: "d/gen-2-pro", route: ["f/x"] }, noReadImages)).reason).toMatch(/and route both name targets/);
    expect(inputError(() => routedRequestFrom({ task: "image", prompt: "p", route: [] }, noReadImages)).field).toBe("route");
    expect(inputError(() => routedRequestFrom({ task: "image", prompt: "p", route: ["d/gen-2-pro", "d/gen-2-pro"] }, noReadImages)).field).toBe("route[1]");
    expect(inputError(() => routedRequestFrom({ task: "image", prompt: "p", model: "d/gen-2-pro", route_by: "speed" }, noReadImages)).field).toBe("route_by");
    expect(inputError(() => routedRequestFrom({ task: "image", prompt: "p", model: "d/gen-2-pro", fallback_on_failure: "yes" }, noReadImages)).field).toBe("fallback_on_failure");
    const routed = routedRequestFrom({ task: "image", prompt: "p", route: ["d/gen-2-pro", "f/img-v2"], route_by: "price", fallback_on_failure: true }, noReadImages);
    expect(routed).toMatchObject({ routeBy: "price", fallbackOnFailure: true });
    expect(routed.targets.map((target) => target.name)).toEqual(["d/gen-2-pro", "f/img-v2"]);
  });

  it("routing: image fields go through the image reader with their field; provider_options is an object of native fields per known provider", () => {
    const read: string[] = [];
    routedRequestFrom({ task: "image", prompt: "p", images: ["a.png", "b.png"], model: "d/gen-2-pro" }, (text, field) => {
      read.push(`${field}=${text}`);
      return text;
    });
    expect(read).toEqual(["images[0]=a.png", "images[1]=b.png"]);
    expect(inputError(() => routedRequestFrom({ task: "image", prompt: "p", model: "d/gen-2-pro", provider_options: { z: {} } }, noReadImages)).field).toBe("provider_options.z");
    expect(inputError(() => routedRequestFrom({ task: "image", prompt: "p", model: "d/gen-2-pro", provider_options: { d: 3 } }, noReadImages)).field).toBe("provider_options.d");
    // A file already read (the library) must be an image by its bytes: a text file would be sent and paid for.
    const error = inputError(() => routedRequestFrom({ task: "image", prompt: "p", model: "d/gen-2-pro", images: [{ fileName: "notes.txt", bytes: Buffer.from("hello") }] }, noReadImages));
    expect(error.field).toBe("images[0]");
    expect(error.reason).toMatch(/notes.txt is not/);
  });
});

describe("routing: the request's own shape", () => {
  it("routing: each field belongs to its task and has its form, named when not", () => {
    const cases: Array<[Partial<CommonRequest> & { task: string }, string, RegExp]> = [
      [{ task: "audio" as never }, "task", /must be image or video/],
      [{ task: "image", prompt: "p", duration_s: 5 }, "duration_s", /not a field of a image request/],
      [{ task: "video", prompt: "p", n: 2 }, "n", /not a field of a video request/],
      [{ task: "image", prompt: " " }, "prompt", /non-empty/],
      [{ task: "image", prompt: "p", size: "1024*768" }, "size", /width x height/],
      [{ task: "image", prompt: "p", aspect_ratio: "adaptive" }, "aspect_ratio", /ratio of whole numbers/],
      [{ task: "image", prompt: "p", size: "1024x768", aspect_ratio: "16:9" }, "aspect_ratio", /disagrees with size 1024x768/],
      [{ task: "image", prompt: "p", seed: -1 }, "seed", /whole number from 0/],
      [{ task: "image", prompt: "p", n: 0 }, "n", /from 1/],
      [{ task: "video", prompt: "p", duration_s: 0 }, "duration_s", /positive/],
      [{ task: "video", prompt: "p", resolution: "4k" as never }, "resolution", /480p, 720p, 1080p/],
      [{ task: "video", prompt: "p", resolution: "720p", size: "1280x720" }, "resolution", /both set the frame size/],
      [{ task: "video", prompt: "p", last_frame: "https://x.example/l.png" }, "last_frame", /needs first_frame/],
      [{ task: "video", prompt: "p", aspect_ratio: "adaptive" }, "aspect_ratio", /no first_frame/],
      [{ task: "video" }, "prompt", /is required/],
    ];
    for (const [request, field, reason] of cases) {
      const error = inputError(() => checkCommonRequest(request as CommonRequest));
      expect(error.field, JSON.stringify(request)).toBe(field);
      expect(error.reason, JSON.stringify(request)).toMatch(reason);
    }
    expect(() => checkCommonRequest({ task: "video", first_frame: "https://x.example/f.png", aspect_ratio: "adaptive" })).not.toThrow();
  });
});

describe("routing: judging each target before anything is sent", () => {
  it("routing: the first eligible target is chosen; one that is not configured, cannot honour a field, or is halted says why", async () => {
    const plan = await planRoute(fox, targets("a/vidgen-2-0-250601", "c/v6", "f/img-v2", "d/gen-2-pro"), "order", world({ halted: { f: "insufficient_credits: out of credits" } }));
    expect(plan.order.map((entry) => entry.target.name)).toEqual(["d/gen-2-pro"]);
    expect(plan.verdicts.map((verdict) => [verdict.target.name, verdict.reasons])).toEqual([
      ["a/vidgen-2-0-250601", ["provider A is not configured (set MEDIAGATE_A_BASE_URL, MEDIAGATE_A_API_KEY)"]],
      ["c/v6", ["provider C is not configured (set MEDIAGATE_C_BASE_URL, MEDIAGATE_C_API_KEY)"]],
      ["f/img-v2", ["provider F is halted (insufficient_credits: out of credits)"]],
      ["d/gen-2-pro", []],
    ]);
  });

  it("routing: route_by price orders the eligible targets by estimate, unpriced last; order keeps the route's", async () => {
    const names = ["f/img-v2", "d/gen-2-max", "d/gen-2-flex", "d/gen-2-pro"];
    const byPrice = await planRoute(fox, targets(...names), "price", world());
    const estimates = byPrice.order.map((entry) => entry.estimate.microUsd);
    expect(estimates.at(-1)).toBeNull();
    const priced = estimates.slice(0, -1) as number[];
    expect(priced).toEqual([...priced].sort((left, right) => left - right));
    expect(byPrice.order.at(-1)!.target.name).toBe("f/img-v2");
    const inOrder = await planRoute(fox, targets(...names), "order", world());
    expect(inOrder.order.map((entry) => entry.target.name)).toEqual(names);
  });

  it("routing: route_by time orders the eligible targets by expected finish (to the second), price breaking ties, those with no expected finish last", async () => {
    const names = ["d/gen-2-max", "d/gen-2-pro", "f/img-v2", "d/gen-2-flex"];
    const finishing: Record<string, number | null> = { "gen-2-max": 40_000, "gen-2-pro": 90_000, "img-v2": 12_000, "gen-2-flex": null };
    const timed = (finishes: Record<string, number | null>): RouteWorld => ({ ...world(), finishIfQueued: async (validated) => finishes[validated.model] ?? null });
    const byTime = await planRoute(fox, targets(...names), "time", timed(finishing));
    expect(byTime.order.map((entry) => entry.target.name)).toEqual(["f/img-v2", "d/gen-2-max", "d/gen-2-pro", "d/gen-2-flex"]);
    // Within the same second, the cheaper goes first (gen-2-pro is cheaper than gen-2-max).
    const tied = await planRoute(fox, targets(...names), "time", timed({ ...finishing, "gen-2-max": 12_000_400, "gen-2-pro": 12_000_900, "img-v2": 99_000_000 }));
    expect(tied.order.map((entry) => entry.target.name)).toEqual(["d/gen-2-pro", "d/gen-2-max", "f/img-v2", "d/gen-2-flex"]);
    expect(tied.order[0]!.estimate.microUsd!).toBeLessThan(tied.order[1]!.estimate.microUsd!);
  });

  it("routing: under a budget, a target whose estimate is over what is left, or that is unpriced, is not eligible (unless unpriced jobs are allowed)", async () => {
    const plan = await planRoute(fox, targets("d/gen-2-max", "f/img-v2", "d/gen-2-pro"), "order", world({ leftMicroUsd: 40_000 }));
    expect(plan.order.map((entry) => entry.target.name)).toEqual(["d/gen-2-pro"]);
    expect(plan.verdicts[0]!.reasons[0]).toMatch(/^its estimate \$0\.0700 is over what the budget leaves \(\$0\.0400\)$/);
    expect(plan.verdicts[1]!.reasons[0]).toMatch(/^it is unpriced .* and a budget is set$/);
    const allowed = await planRoute(fox, targets("f/img-v2"), "order", world({ leftMicroUsd: 40_000, allowUnpriced: true }));
    expect(allowed.order).toHaveLength(1);
  });

  it("routing: provider_options are merged over the mapped fields and validated with them: a native field the provider refuses makes that target ineligible", async () => {
    const merged = await planRoute({ ...fox, provider_options: { d: { output_format: "png", width: 512 } } }, targets("d/gen-2-pro"), "order", world());
    expect(merged.order[0]!.validated.body).toMatchObject({ output_format: "png", width: 512, height: 1024 });
    const error = await planRoute({ ...fox, provider_options: { d: { width: 500 } } }, targets("d/gen-2-pro"), "order", world()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NoEligibleTargetError);
    expect((error as NoEligibleTargetError).verdicts[0]!.reasons[0]).toMatch(/width: must be a multiple of 16, got 500/);
  });

  it("routing: when no target can take the request, one line per target says why (an InputError: exit 2)", async () => {
    const error = (await planRoute({ task: "image", prompt: "p", n: 4 }, targets("d/gen-2-pro", "c/v6"), "order", world()).catch((caught: unknown) => caught)) as NoEligibleTargetError;
    expect(error).toBeInstanceOf(InputError);
    expect(error.field).toBe("route");
    expect(error.message).toBe(
      "route: no target can take this request:\n" +
        "  d/gen-2-pro: size: D needs a size or aspect_ratio: its default size is not shown and the price depends on it; n: D makes one image per request, not 4\n" +
        "  c/v6: provider C is not configured (set MEDIAGATE_C_BASE_URL, MEDIAGATE_C_API_KEY)",
    );
  });

  it("routing: a malformed request is refused as such before any target is judged", async () => {
    const error = await planRoute({ task: "image", prompt: "p", size: "big" }, targets("d/gen-2-pro"), "order", world()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InputError);
    expect(error).not.toBeInstanceOf(NoEligibleTargetError);
    expect((error as InputError).field).toBe("size");
  });
});

describe("routing: the edges the mutation run found unchecked (issue 36, finding 12)", () => {
  const png = Buffer.from("89504e470d0a1a0a0000000d49484452000000080000000808020000004b6d29dc", "hex");

  it("routing: a target that is not a string, an empty route and a provider without a common mapping are refused, each saying why", async () => {
    expect(() => parseTarget(7 as unknown as string, "route[0]")).toThrow(/^route\[0\]: must be a string/);
    expect(() => parseTarget("z/model", "route[0]")).toThrow(/^route\[0\]: "z\/model" does not start with a provider \(a, b, c, d, e, f\)/);
    expect(parseTarget("d/gen-2-pro", "model")).toEqual({ provider: "d", model: "gen-2-pro", name: "d/gen-2-pro" });
    expect(() => routedRequestFrom({ task: "image", prompt: "p", route: [] }, noReadImages)).toThrow(/^route: must be a non-empty list of targets/);
    await expect(planRoute(fox, [], "order", world())).rejects.toThrow(/^route: is empty/);
    // A provider this build has no adapter for, and one without a mapping of the common request.
    const bare: RouteWorld = { ...world(), adapter: (provider) => (provider === "d" ? { adapter: { ...world().adapter("d").adapter!, fromCommon: undefined }, missing: [] } : { adapter: null, missing: [] }) };
    const error = (await planRoute(fox, targets("d/gen-2-pro", "f/img-v2"), "order", bare).catch((caught: unknown) => caught)) as NoEligibleTargetError;
    expect(error.targets()).toEqual([
      { target: "d/gen-2-pro", reasons: ["provider D takes native requests only"] },
      { target: "f/img-v2", reasons: [expect.stringMatching(/^provider F is not supported by this version of /)] },
    ]);
  });

  it("routing: an estimate exactly what the budget leaves is eligible; a cent over is not", async () => {
    const exact = await planRoute(fox, targets("d/gen-2-pro"), "order", world({ leftMicroUsd: 30_000 }));
    expect(exact.order).toHaveLength(1);
    const short = await planRoute(fox, targets("d/gen-2-pro"), "order", world({ leftMicroUsd: 29_999 })).catch((caught: unknown) => caught);
    expect(short).toBeInstanceOf(NoEligibleTargetError);
  });

  it("routing: what a job stores of its route: the chosen target, the eligible ones after it with what each would be sent, nothing tried yet", async () => {
    const plan = await planRoute(fox, targets("d/gen-2-pro", "d/gen-2-max"), "order", world());
    const route = jobRouteOf(plan.order, true);
    expect(route).toEqual({
      current: "d/gen-2-pro",
      next: [
        {
          name: "d/gen-2-max",
          provider: "d",
          model: "gen-2-max",
          operation: plan.order[1]!.validated.operation,
          body: plan.order[1]!.validated.body,
          facts: plan.order[1]!.validated.facts,
          warnings: plan.order[1]!.validated.warnings,
          estimateMicroUsd: plan.order[1]!.estimate.microUsd,
          estimateSource: plan.order[1]!.estimate.source,
        },
      ],
      tried: [],
      fallbackOnFailure: true,
      failingSince: null,
    });
    expect(jobRouteOf(plan.order.slice(0, 1), false).next).toEqual([]);
  });

  it("routing: an image given as a file already read must be an image; images must be a list; provider_options must be objects of native fields", () => {
    const base = { task: "image", prompt: "p", model: "d/gen-2-pro" };
    expect(routedRequestFrom({ ...base, images: [{ fileName: "a.png", bytes: png }] }, noReadImages).common.images).toEqual([{ fileName: "a.png", bytes: png }]);
    expect(() => routedRequestFrom({ ...base, images: [{ fileName: "a.txt", bytes: Buffer.from("hello") }] }, noReadImages)).toThrow(/^images\[0\]: file a\.txt is not /);
    for (const bad of [{ fileName: 3, bytes: png }, { fileName: "a.png", bytes: "png" }, null, 5, ""]) {
      expect(() => routedRequestFrom({ ...base, images: [bad] }, noReadImages), JSON.stringify(bad)).toThrow(/^images\[0\]: must be an image URL, a local file path, or \{ fileName, bytes \}/);
    }
    expect(() => routedRequestFrom({ ...base, images: "https://img.example/a.png" }, noReadImages)).toThrow(/^images: must be a list of images/);
    expect(routedRequestFrom({ task: "video", prompt: "p", model: "c/v6", first_frame: "https://img.example/a.png" }, noReadImages).common.first_frame).toBe("https://img.example/a.png");
    for (const options of [[], "png", null]) expect(() => routedRequestFrom({ ...base, provider_options: options }, noReadImages)).toThrow(/^provider_options: must be an object of native fields per provider/);
    for (const fields of [[], "png", null]) expect(() => routedRequestFrom({ ...base, provider_options: { d: fields } }, noReadImages)).toThrow(/^provider_options\.d: must be an object of that provider's native fields/);
  });
});

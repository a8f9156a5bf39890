import { NoSuchModelError } from "@ai-sdk/provider";
import { InputError } from "../core/errors.js";
import { parseTarget, type RouteBy } from "../engine/route.js";
import type { Job } from "../core/job.js";
import type { CommonSubmitRequest } from "../app/mediagate.js";
import type { MediagateCallOptions } from "./provider-options.js";

/**
 * Where a model's calls may go: one target (`"d/gen-2-pro"`,
 * `"b/<vendor>/<model>/<function>"`), or a route tried in order (or by price
 * with `route_by: "price"`), every target judged before anything is sent.
 */
export type MediagateTarget =
  | string
  | {
      route: string[];
      route_by?: RouteBy;
      /** After a provider accepted the job and its generation failed, try the next target. */
      fallback_on_failure?: boolean;
    };

/** The model id the AI SDK logs and reports: the target, or the route's targets as `--route` takes them. */
export function modelIdOf(target: MediagateTarget): string {
  return typeof target === "string" ? target : target.route.join(",");
}

/**
 * Checks the target's form when the model is made (a target that is not
 * provider/model is no model at all); whether a target can honour a request
 * is judged per call, with the request.
 */
export function checkTarget(target: MediagateTarget, modelType: "imageModel" | "videoModel"): void {
  const modelId = typeof target === "string" ? target : Array.isArray(target?.route) ? target.route.join(",") : String(target);
  const refuse = (message: string): never => {
    throw new NoSuchModelError({ modelId, modelType, message: `mediagate: ${message}` });
  };
  try {
    if (typeof target === "string") parseTarget(target, "model");
    else if (!Array.isArray(target?.route) || target.route.length === 0) refuse("a route is a non-empty list of targets, e.g. { route: [\"d/gen-2-pro\", \"f/img-v2\"] }");
    else target.route.forEach((each, index) => parseTarget(each, `route[${index}]`));
  } catch (error) {
    if (error instanceof InputError) refuse(error.message);
    throw error;
  }
}

/** The routing fields of a call's common request: the model's target or route, a call's `route_by` and `fallback_on_failure` over the model's. */
export function routingOf(target: MediagateTarget, call: MediagateCallOptions): Pick<CommonSubmitRequest, "model" | "route" | "route_by" | "fallback_on_failure"> {
  const base = typeof target === "string" ? { model: target } : { route: target.route, route_by: target.route_by, fallback_on_failure: target.fallback_on_failure };
  const routeBy = call.route_by ?? base.route_by;
  const fallback = call.fallback_on_failure ?? base.fallback_on_failure;
  return {
    ...("model" in base ? { model: base.model } : { route: base.route }),
    ...(routeBy !== undefined ? { route_by: routeBy } : {}),
    ...(fallback !== undefined ? { fallback_on_failure: fallback } : {}),
  };
}

/** The target a job runs on now (`f/img-v2`), as the user wrote it. */
export function targetOf(job: Job): string {
  return job.route?.current ?? `${job.provider}/${job.model}`;
}

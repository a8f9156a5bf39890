import { InputError } from "../../core/errors.js";
import type { JobRequest, ValidatedRequest } from "../adapter.js";

const API_ID_ALLOWED = "an api_id from `mediagate catalog` ({vendor}/{model}/{function}), or {vendor}/{model} with operation set to the function";

/**
 * spec B Endpoints rule 1: an operation's path is `{vendor}/{model}/{function}`,
 * the model may itself hold literal slashes, and an operation is chosen by
 * its function segment. So the function is the last segment, and everything
 * before it names the model.
 */
export interface BApiIdParts {
  /** `{vendor}/{model}`: every segment but the last, slashes kept. */
  model: string;
  /** The function segment. */
  operation: string;
}

function checkSegments(value: string, field: string): void {
  for (const segment of value.split("/")) {
    // An empty, "." or ".." segment would name another path once sent.
    if (segment === "" || segment === "." || segment === "..") {
      throw new InputError(field, `"${value}" has an empty, "." or ".." path segment`, API_ID_ALLOWED);
    }
  }
}

/**
 * The api_id a request names: `model` alone when it is a full api_id, or
 * `model/operation` when the function is given as the operation. Never
 * reordered or split further: model identifiers are not version numbers.
 */
export function apiIdOf(request: Pick<JobRequest, "model" | "operation">): string {
  const { model, operation } = request;
  if (typeof model !== "string" || model.trim() === "") throw new InputError("model", "is required", API_ID_ALLOWED);
  checkSegments(model, "model");
  if (operation === undefined) return model;
  if (typeof operation !== "string" || operation === "" || operation.includes("/")) {
    throw new InputError("operation", "must be one function segment (no slash), e.g. image-to-video", API_ID_ALLOWED);
  }
  checkSegments(operation, "operation");
  return `${model}/${operation}`;
}

/** Splits an api_id into model and function (see BApiIdParts); null when it has fewer than three segments. */
export function splitApiId(apiId: string): BApiIdParts | null {
  const segments = apiId.split("/");
  if (segments.length < 3) return null;
  return { model: segments.slice(0, -1).join("/"), operation: segments[segments.length - 1]! };
}

/** The api_id of a validated request (validate stores it as model + function). */
export function apiIdOfValidated(request: Pick<ValidatedRequest, "model" | "operation">): string {
  return request.operation === null ? request.model : `${request.model}/${request.operation}`;
}

/**
 * The api_id as a URL path. spec B rule 1: slashes are literal and sent as
 * is; each segment is percent-encoded on its own so that no character can
 * open a query, a fragment or another segment.
 */
export function apiIdPath(apiId: string): string {
  return apiId.split("/").map(encodeURIComponent).join("/");
}

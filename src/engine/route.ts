import { checkCommonRequest, COMMON_FIELDS, type CommonRequest, type ImageInput } from "../core/common-request.js";
import { checkWellFormed } from "../core/well-formed.js";
import { InputError, MediagateError } from "../core/errors.js";
import { imageTypeOf, IMAGE_TYPES_ALLOWED } from "../core/image-type.js";
import type { JobRoute } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";
import { PROVIDER_IDS, type CallContext, type CommonTarget, type Estimate, type JobRequest, type ProviderAdapter, type ProviderId, type ValidatedRequest } from "../providers/adapter.js";

/** A target of a common request, as written (`d/gen-2-pro`, `b/<vendor>/<model>/<function>`) and parsed. */
export interface RouteTarget extends CommonTarget {
  provider: ProviderId;
  /** As the user wrote it, for messages. */
  name: string;
}

export type RouteBy = "order" | "price" | "time";
export const ROUTE_BY: readonly RouteBy[] = ["order", "price", "time"];

export const TARGET_ALLOWED = "provider/model, e.g. d/gen-2-pro; B's operations as b/<vendor>/<model>/<function>";

/**
 * Parses one target. B's operations are named `b/<vendor>/<model>/<function>`
 * (the catalog's vendor/model and the operation); every other provider's
 * `p/<model>`, or `p/<model>/<operation>` where it has operations (E).
 */
export function parseTarget(text: string, field: string): RouteTarget {
  if (typeof text !== "string") throw new InputError(field, "must be a string", TARGET_ALLOWED);
  checkWellFormed(text, field);
  const parts = text.split("/");
  const provider = parts[0];
  if (!provider || !(PROVIDER_IDS as readonly string[]).includes(provider)) {
    throw new InputError(field, `"${text}" does not start with a provider (${PROVIDER_IDS.join(", ")})`, TARGET_ALLOWED);
  }
  if (parts.some((part) => part.length === 0) || parts.length < 2) throw new InputError(field, `"${text}" is not provider/model`, TARGET_ALLOWED);
  if (provider === "b") {
    if (parts.length !== 4) throw new InputError(field, `"${text}": a B target is b/<vendor>/<model>/<function>`, TARGET_ALLOWED);
    return { provider, model: `${parts[1]}/${parts[2]}`, operation: parts[3]!, name: text };
  }
  if (parts.length > 3) throw new InputError(field, `"${text}" has too many parts`, TARGET_ALLOWED);
  return { provider: provider as ProviderId, model: parts[1]!, ...(parts[2] !== undefined ? { operation: parts[2] } : {}), name: text };
}

/** What routing needs of the world: each provider's adapter and configuration, calls for the providers that read first (B), halts, the budget. */
export interface RouteWorld {
  adapter(provider: ProviderId): { adapter: ProviderAdapter | null; missing: readonly string[] };
  /** A context for a configured provider that is read before anything is sent (`prefetch`: B's catalog; its estimate is B's quote). */
  context(provider: ProviderId): Promise<CallContext>;
  /** Providers halted now (out of credits, refused key), with why. */
  halted(): Promise<ReadonlyMap<ProviderId, string>>;
  /** What one job may still commit under the command's budget, or null without a budget; and whether unpriced jobs are allowed under it. */
  budget: { leftMicroUsd: number | null; allowUnpriced: boolean };
  /** When a request sent to this target now would be expected to finish (`route_by: "time"`); null while unknown. */
  finishIfQueued?(validated: ValidatedRequest): Promise<number | null>;
}

/** A target that can take the request: what would be sent and what it is estimated to cost. */
export interface EligibleTarget {
  target: RouteTarget;
  validated: ValidatedRequest;
  estimate: Estimate;
}

export interface TargetVerdict {
  target: RouteTarget;
  /** Why this target cannot take the request (empty when it can). */
  reasons: string[];
  eligible: EligibleTarget | null;
  /** What this target would be sent, when the request maps and validates (a halted or over-budget target too): a stored job of the same ref is the same request when it matches one. */
  validated: ValidatedRequest | null;
}

/** No target of a route can take the request: one line per target with why. Exit 2 (bad input), like any request refused before sending. */
export class NoEligibleTargetError extends InputError {
  constructor(
    field: string,
    readonly verdicts: readonly TargetVerdict[],
  ) {
    super(field, `no target can take this request:\n  ${verdicts.map((verdict) => `${verdict.target.name}: ${verdict.reasons.join("; ")}`).join("\n  ")}`);
  }

  /** Each target and why it cannot take the request: the `targets` of an error body, the same in the API's 422 and the CLI's `--json`. */
  targets(): Array<{ target: string; reasons: string[] }> {
    return this.verdicts.map((verdict) => ({ target: verdict.target.name, reasons: [...verdict.reasons] }));
  }
}

/** Merges `provider_options.<p>` over the mapped native fields: the user's native fields win. */
function withProviderOptions(request: JobRequest, common: CommonRequest): JobRequest {
  const options = common.provider_options?.[request.provider];
  if (options === undefined) return request;
  return { ...request, input: { ...request.input, ...options } };
}

/**
 * Checks one target before anything is sent: the provider is supported and
 * configured, the model can honour every field the request sets, the mapped
 * body passes the provider's own validation, the provider is not halted, and
 * the estimate fits the budget.
 */
async function judge(common: CommonRequest, target: RouteTarget, world: RouteWorld, halts: ReadonlyMap<ProviderId, string>): Promise<TargetVerdict> {
  let validated: ValidatedRequest | null = null;
  const refused = (...reasons: string[]): TargetVerdict => ({ target, reasons, eligible: null, validated });
  const { adapter, missing } = world.adapter(target.provider);
  if (!adapter) return refused(`provider ${target.provider.toUpperCase()} is not supported by this version of mediagate`);
  if (!adapter.fromCommon) return refused(`provider ${target.provider.toUpperCase()} takes native requests only`);
  if (missing.length > 0) return refused(`provider ${target.provider.toUpperCase()} is not configured (set ${missing.join(", ")})`);
  // A provider whose rules live with it (B's catalog) is read first; its estimate is its quote, made with the same context.
  let context: CallContext | undefined;
  if (adapter.prefetch) {
    const stub: JobRequest = { provider: target.provider, model: target.model, ...(target.operation !== undefined ? { operation: target.operation } : {}), input: {} };
    try {
      context = await world.context(target.provider);
      await adapter.prefetch(stub, context);
    } catch (error) {
      if (error instanceof MediagateError) return refused(error.message);
      throw error;
    }
  }
  let mapping: ReturnType<NonNullable<ProviderAdapter["fromCommon"]>>;
  try {
    mapping = adapter.fromCommon(common, target);
  } catch (error) {
    // A target the provider cannot name (a malformed B operation): this target is refused, not the route.
    if (error instanceof InputError) return refused(error.message);
    throw error;
  }
  if (!mapping.ok) return refused(...mapping.unhonoured.map((entry) => `${entry.field}: ${entry.reason}`));
  try {
    const native = adapter.validate(withProviderOptions(mapping.request, common));
    validated = { ...native, warnings: [...mapping.warnings, ...native.warnings] };
  } catch (error) {
    if (error instanceof InputError) return refused(error.message);
    throw error;
  }
  const halt = halts.get(target.provider);
  if (halt !== undefined) return refused(`provider ${target.provider.toUpperCase()} is halted (${halt})`);
  const estimate = await adapter.estimate(validated, context);
  const { leftMicroUsd, allowUnpriced } = world.budget;
  if (leftMicroUsd !== null) {
    if (estimate.microUsd === null && !allowUnpriced) return refused(`it is unpriced (${estimate.source}) and a budget is set`);
    if (estimate.microUsd !== null && estimate.microUsd > leftMicroUsd) {
      return refused(`its estimate ${formatMicroUsd(estimate.microUsd)} is over what the budget leaves (${formatMicroUsd(leftMicroUsd)})`);
    }
  }
  return { target, reasons: [], eligible: { target, validated, estimate }, validated };
}

/**
 * Every target of a route judged, in the route's order, and the eligible ones
 * in the order they are to be tried: the route's, or by estimate for
 * `route_by: "price"` (unpriced last, ties in the route's order), or by
 * expected finish for `route_by: "time"` (price breaking ties). Throws
 * `NoEligibleTargetError` when none can take the request, InputError when the
 * request itself is malformed.
 */
export async function planRoute(
  common: CommonRequest,
  targets: readonly RouteTarget[],
  routeBy: RouteBy,
  world: RouteWorld,
  field = "route",
): Promise<{ verdicts: TargetVerdict[]; order: EligibleTarget[] }> {
  checkCommonRequest(common);
  if (targets.length === 0) throw new InputError(field, "is empty", TARGET_ALLOWED);
  const halts = await world.halted();
  const verdicts: TargetVerdict[] = [];
  for (const target of targets) verdicts.push(await judge(common, target, world, halts));
  const order = verdicts.flatMap((verdict) => (verdict.eligible ? [verdict.eligible] : []));
  if (order.length === 0) throw new NoEligibleTargetError(field, verdicts);
  const cost = (entry: EligibleTarget) => entry.estimate.microUsd ?? Number.POSITIVE_INFINITY;
  if (routeBy === "price") {
    // Array.prototype.sort is stable: equal estimates keep the route's order.
    order.sort((left, right) => cost(left) - cost(right));
  }
  if (routeBy === "time") {
    // The earliest expected finish, to the second; price breaks ties; a target whose pace is not known yet goes after
    // those whose is (by price among themselves).
    const finishes = new Map<EligibleTarget, number>();
    for (const entry of order) finishes.set(entry, Math.ceil(((await world.finishIfQueued?.(entry.validated)) ?? Number.POSITIVE_INFINITY) / 1_000));
    const finish = (entry: EligibleTarget) => finishes.get(entry)!;
    order.sort((left, right) => (finish(left) === finish(right) ? 0 : finish(left) - finish(right)) || cost(left) - cost(right));
  }
  return { verdicts, order };
}

/** What a routed job stores of its route: the target chosen, and the eligible ones after it with what each would be sent. */
export function jobRouteOf(order: readonly EligibleTarget[], fallbackOnFailure: boolean): JobRoute {
  const [chosen, ...next] = order;
  return {
    current: chosen!.target.name,
    next: next.map((entry) => ({
      name: entry.target.name,
      provider: entry.validated.provider,
      model: entry.validated.model,
      operation: entry.validated.operation,
      body: entry.validated.body,
      facts: entry.validated.facts,
      warnings: entry.validated.warnings,
      estimateMicroUsd: entry.estimate.microUsd,
      estimateSource: entry.estimate.source,
    })),
    tried: [],
    fallbackOnFailure,
    failingSince: null,
  };
}

/** A common request with where it may go: the wire form of a batch line, a library call or an API body. */
export interface RoutedRequest {
  common: CommonRequest;
  targets: RouteTarget[];
  routeBy: RouteBy;
  /** After a provider accepted the job and its generation failed (moderation, failure), try the next target; never for an unknown submission. */
  fallbackOnFailure: boolean;
}

const ROUTING_FIELDS = ["model", "route", "route_by", "fallback_on_failure"] as const;
const IMAGE_LIST_FIELDS = new Set(["images", "reference_images"]);
const IMAGE_FIELDS = new Set(["first_frame", "last_frame"]);

function isReadFile(value: unknown): value is { fileName: string; bytes: Buffer } {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as { fileName?: unknown; bytes?: unknown };
  return typeof candidate.fileName === "string" && Buffer.isBuffer(candidate.bytes);
}

/** Every key a routed request may have besides `ref` (and nothing else: a misspelt field is refused, not dropped). */
export const ROUTED_REQUEST_KEYS: readonly string[] = ["task", ...COMMON_FIELDS, "provider_options", ...ROUTING_FIELDS];

/**
 * A routed request from its wire form (`{task, prompt, …, model | route,
 * route_by?, fallback_on_failure?, provider_options?}`), with each image value
 * (a URL or a local file path) read by `readImage`. Values are checked later,
 * with the targets (`planRoute`); here only the shape: no unknown key, one of
 * `model` and `route`, targets well formed.
 */
export function routedRequestFrom(value: Record<string, unknown>, readImage: (text: string, field: string) => ImageInput, skip: readonly string[] = ["ref"]): RoutedRequest {
  for (const key of Object.keys(value)) {
    if (!ROUTED_REQUEST_KEYS.includes(key) && !skip.includes(key)) throw new InputError(key, "is not a field of a common request", ROUTED_REQUEST_KEYS.join(", "));
  }
  // An image is a URL or file path (read by `readImage`), or, from the library, a file already read.
  const imageOf = (item: unknown, field: string): ImageInput => {
    if (typeof item === "string" && item.length > 0) return readImage(item, field);
    if (isReadFile(item)) {
      // A file that is not an image (a text file, a key) would be encoded, sent and paid for.
      if (imageTypeOf(item.bytes) === null) throw new InputError(field, `file ${item.fileName} is not ${IMAGE_TYPES_ALLOWED} (judged by its first bytes)`, `${IMAGE_TYPES_ALLOWED} bytes`);
      return item;
    }
    throw new InputError(field, "must be an image URL, a local file path, or { fileName, bytes }", "an http(s) URL, a file path, or { fileName, bytes } with the file's bytes");
  };
  const common: Record<string, unknown> = { task: value.task };
  for (const field of COMMON_FIELDS) {
    const given = value[field];
    if (given === undefined) continue;
    if (IMAGE_LIST_FIELDS.has(field)) {
      if (!Array.isArray(given)) throw new InputError(field, "must be a list of images", "a list of http(s) URLs or file paths");
      common[field] = given.map((item: unknown, index) => imageOf(item, `${field}[${index}]`));
    } else if (IMAGE_FIELDS.has(field)) {
      common[field] = imageOf(given, field);
    } else {
      common[field] = given;
    }
  }
  if (value.provider_options !== undefined) {
    const options = value.provider_options;
    if (typeof options !== "object" || options === null || Array.isArray(options)) throw new InputError("provider_options", "must be an object of native fields per provider", '{"d": {"output_format": "png"}}');
    for (const [provider, fields] of Object.entries(options)) {
      if (!(PROVIDER_IDS as readonly string[]).includes(provider)) throw new InputError(`provider_options.${provider}`, "is not a provider", PROVIDER_IDS.join(", "));
      if (typeof fields !== "object" || fields === null || Array.isArray(fields)) throw new InputError(`provider_options.${provider}`, "must be an object of that provider's native fields");
    }
    common.provider_options = options;
  }
  if ((value.model === undefined) === (value.route === undefined)) {
    throw new InputError("model", value.model === undefined ? "or route is required: where the request may go" : "and route both name targets", "model (one target) or route (a list, tried in order)");
  }
  let targets: RouteTarget[];
  if (value.model !== undefined) targets = [parseTarget(value.model as string, "model")];
  else {
    if (!Array.isArray(value.route) || value.route.length === 0) throw new InputError("route", "must be a non-empty list of targets", TARGET_ALLOWED);
    targets = value.route.map((target, index) => parseTarget(target as string, `route[${index}]`));
    const seen = new Set<string>();
    for (const [index, target] of targets.entries()) {
      if (seen.has(target.name)) throw new InputError(`route[${index}]`, `${target.name} is already in the route`);
      seen.add(target.name);
    }
  }
  const routeBy = value.route_by ?? "order";
  if (!ROUTE_BY.includes(routeBy as RouteBy)) throw new InputError("route_by", `must be order, price or time, got ${JSON.stringify(routeBy)}`, ROUTE_BY.join(", "));
  const fallback = value.fallback_on_failure ?? false;
  if (typeof fallback !== "boolean") throw new InputError("fallback_on_failure", `must be true or false, got ${JSON.stringify(fallback)}`);
  return { common: common as unknown as CommonRequest, targets, routeBy: routeBy as RouteBy, fallbackOnFailure: fallback };
}

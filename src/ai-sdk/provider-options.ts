import { InvalidArgumentError, type SharedV3ProviderOptions } from "@ai-sdk/provider";
import { readCancelAfterS } from "../core/deadline.js";
import { InputError } from "../core/errors.js";
import { WELL_FORMED_ALLOWED, wellFormedProblem } from "../core/well-formed.js";
import type { RouteBy } from "../engine/route.js";

/** The key of `providerOptions` this provider reads, and of the `providerMetadata` it writes. */
export const MEDIAGATE_NAMESPACE = "mediagate";

/**
 * What a call may say to mediagate through `providerOptions.mediagate`,
 * in the wire names of a common request (as in batch lines and messages):
 *
 * - `ref`: your name for the job. A call with a ref that is stored already
 *   takes up the stored job (waits for it, or returns its files) instead of
 *   queueing and paying again; with `n` > 1 the jobs are `<ref>#1` … `<ref>#n`.
 *   A ref names one request: reuse it only for the same request, and leave
 *   the SDK's `maxImagesPerCall` unset with it (a smaller one splits the call,
 *   and each part would take up the same jobs).
 * - `provider_options`: native fields per provider, merged over the mapped
 *   body (`{ "d": { "output_format": "png" } }`).
 * - `route_by`: `"order"` or `"price"`, over the model's own.
 * - `fallback_on_failure`: after a provider accepted the job and its
 *   generation failed, try the route's next target; over the model's own.
 * - `cancel_after_s`: not sent within this many seconds, each job of the
 *   call is cancelled (the call then rejects); accepted by then, it is
 *   cancelled at providers that publish a cancel (E).
 */
export interface MediagateCallOptions {
  ref?: string;
  provider_options?: Record<string, Record<string, unknown>>;
  route_by?: RouteBy;
  fallback_on_failure?: boolean;
  cancel_after_s?: number;
}

const CALL_OPTION_KEYS: ReadonlySet<string> = new Set(["ref", "provider_options", "route_by", "fallback_on_failure", "cancel_after_s"]);

/**
 * `providerOptions.mediagate` of a call. Options for other providers
 * (`providerOptions.blackForestLabs.width`) are refused, not skipped: they
 * were written to change the result, and mediagate never drops silently
 * what changes the result. Their values are checked with the request
 * (`route_by`, `provider_options`) or by `submit` (`ref`).
 */
export function mediagateCallOptions(providerOptions: SharedV3ProviderOptions | undefined): MediagateCallOptions {
  const namespaces = Object.keys(providerOptions ?? {});
  const foreign = namespaces.filter((namespace) => namespace !== MEDIAGATE_NAMESPACE);
  if (foreign.length > 0) {
    throw new InvalidArgumentError({
      argument: `providerOptions.${foreign[0]}`,
      message:
        `providerOptions.${foreign.join(", providerOptions.")}: mediagate reads only providerOptions.${MEDIAGATE_NAMESPACE}, and does not drop options that would change the result; ` +
        `give a provider's native fields as providerOptions.${MEDIAGATE_NAMESPACE}.provider_options.<provider> (e.g. { d: { width: 512 } })`,
    });
  }
  const options = providerOptions?.[MEDIAGATE_NAMESPACE];
  if (options === undefined) return {};
  for (const key of Object.keys(options)) {
    if (!CALL_OPTION_KEYS.has(key)) {
      throw new InvalidArgumentError({
        argument: `providerOptions.${MEDIAGATE_NAMESPACE}.${key}`,
        message: `providerOptions.${MEDIAGATE_NAMESPACE}.${key} is not an option of mediagate (allowed: ${[...CALL_OPTION_KEYS].join(", ")})`,
      });
    }
  }
  const argument = `providerOptions.${MEDIAGATE_NAMESPACE}.cancel_after_s`;
  try {
    readCancelAfterS(options.cancel_after_s, argument);
  } catch (error) {
    if (error instanceof InputError) throw new InvalidArgumentError({ argument, message: error.message });
    throw error;
  }
  return options as MediagateCallOptions;
}

/**
 * The call's own text, named as the AI SDK names it: a prompt or ref that
 * is not well-formed Unicode (a lone surrogate) is refused, since it would be
 * stored and sent as U+FFFD. The rest of the request (`provider_options`) is
 * checked by `submit`, naming its own fields.
 */
export function checkCallText(prompt: string | undefined, call: MediagateCallOptions): void {
  const texts: Array<[string, unknown]> = [
    ["prompt", prompt],
    [`providerOptions.${MEDIAGATE_NAMESPACE}.ref`, call.ref],
  ];
  for (const [argument, text] of texts) {
    const problem = typeof text === "string" ? wellFormedProblem(text) : null;
    if (problem !== null) throw new InvalidArgumentError({ argument, message: `${argument}: ${problem} (allowed: ${WELL_FORMED_ALLOWED})` });
  }
}

import { DApiError } from "./errors.js";

type Headers = Record<string, string | string[] | undefined>;

/**
 * spec D Authentication 1: header `x-key: <API_KEY>` on every call; "it is
 * not a bearer token". Returns the key. A valid key sent only as
 * `Authorization: Bearer …` is refused with its own code, so a client making
 * that mistake sees why. The status for a missing or wrong key is not shown:
 * the sandbox answers 401.
 */
export function authenticate(headers: Headers, apiKeys: ReadonlySet<string>): string {
  const key = headers["x-key"];
  if (typeof key === "string" && apiKeys.has(key)) return key;
  const authorization = headers.authorization;
  if (key === undefined && typeof authorization === "string" && /^bearer\s/i.test(authorization)) {
    throw new DApiError(401, "bearer_not_accepted", "the API key goes in the x-key header, not in a bearer token");
  }
  throw new DApiError(401, "invalid_key", key === undefined ? "the x-key header is missing" : "the x-key header is not a valid key");
}

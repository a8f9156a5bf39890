import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { BApiError } from "./errors.js";

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * spec B Authentication 1: `X-API-Key: <key>` or `Authorization: Bearer
 * <key>`; other vendors' header styles (`x-<vendor>-api-key`) are not
 * accepted. When both are sent, `X-API-Key` is the one checked. Returns the key.
 */
export function authenticate(headers: IncomingHttpHeaders, keys: readonly string[]): string {
  const apiKeyHeader = single(headers["x-api-key"])?.trim();
  const bearer = single(headers.authorization)?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  const given = apiKeyHeader || bearer;
  if (!given) {
    const foreign = Object.keys(headers).filter((name) => /^x-.+-api-key$/i.test(name) || name === "x-key");
    const hint = foreign.length > 0 ? ` (${foreign.join(", ")} is not accepted)` : "";
    throw new BApiError(401, "missing_api_key", `send the key as X-API-Key or Authorization: Bearer${hint}`);
  }
  if (!keys.includes(given)) throw new BApiError(401, "invalid_api_key", "the API key is not valid");
  return given;
}

/** The non-secret name of a key in spend reads: `key_` and 12 hex characters of its SHA-256. */
export function keyId(apiKey: string): string {
  return `key_${createHash("sha256").update(apiKey).digest("hex").slice(0, 12)}`;
}

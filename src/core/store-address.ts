import { ConfigError } from "./errors.js";

/** Where MEDIAGATE_STORE points: a SQLite file, or a PostgreSQL connection string (kept as given for the driver). */
export type StoreAddress = { kind: "sqlite"; path: string } | { kind: "postgres"; connectionString: string };

/** How messages name the setting: the variable and the flag that overrides it. */
export const STORE_SETTING = "MEDIAGATE_STORE (or --store)";

const POSTGRES_SCHEME = /^postgres(ql)?:\/\//i;

/** Reads a store address, or throws a ConfigError naming the setting (with the address masked). */
export function parseStoreAddress(location: string): StoreAddress {
  if (location.startsWith("sqlite:")) return { kind: "sqlite", path: location.slice("sqlite:".length) || "./mediagate.db" };
  if (POSTGRES_SCHEME.test(location)) {
    if (!parsePostgresUrl(location)) {
      throw new ConfigError(
        "MEDIAGATE_STORE",
        `${STORE_SETTING} ${maskStoreAddress(location)} is not a valid PostgreSQL address: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE, with a numeric port and special characters of the password %-encoded`,
      );
    }
    return { kind: "postgres", connectionString: location };
  }
  throw new ConfigError("MEDIAGATE_STORE", `${STORE_SETTING} must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE, got "${maskStoreAddress(location)}"`);
}

/**
 * The address with its password replaced by `***`, for everything printed or
 * logged. Works on text that is not a valid URL too (a mistyped address is
 * exactly what an error message shows): everything between `user:` and the
 * last `@` of the authority is masked, and so is a `password=` parameter.
 */
export function maskStoreAddress(location: string): string {
  let masked = location;
  const start = masked.indexOf("//");
  if (start >= 0) {
    const authorityStart = start + 2;
    const queryAt = masked.indexOf("?", authorityStart);
    const beforeQuery = queryAt < 0 ? masked.length : queryAt;
    // The last '@' before the query ends the user part, even when an unencoded '@' or '/' sits in the password.
    const at = masked.lastIndexOf("@", beforeQuery - 1);
    if (at >= authorityStart) {
      const userinfo = masked.slice(authorityStart, at);
      const colon = userinfo.indexOf(":");
      if (colon >= 0) masked = `${masked.slice(0, authorityStart)}${userinfo.slice(0, colon)}:***${masked.slice(at)}`;
    }
  }
  return masked.replace(/([?&]password=)[^&#]*/gi, "$1***");
}

/**
 * The password of a PostgreSQL address, as written and decoded, for the
 * redaction lists (a driver message could quote either form). Empty for SQLite.
 */
export function storeSecrets(location: string): string[] {
  if (!POSTGRES_SCHEME.test(location)) return [];
  const url = parsePostgresUrl(location);
  const secrets = new Set<string>();
  if (url) {
    if (url.password) {
      secrets.add(url.password);
      secrets.add(safeDecode(url.password));
    }
    const parameter = url.searchParams.get("password");
    if (parameter) secrets.add(parameter);
  }
  return [...secrets].filter(Boolean);
}

/** The address as node-postgres reads it (which tolerates a missing host, `postgres://user@/db?host=/socket`). */
function parsePostgresUrl(location: string): URL | null {
  for (const candidate of [location, location.replace("@/", "@___DUMMY___/")]) {
    try {
      return new URL(candidate);
    } catch {
      // try the next form
    }
  }
  return null;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

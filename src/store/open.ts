import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { ConfigError } from "../core/errors.js";
import { redactSecrets } from "../core/redact.js";
import { maskStoreAddress, parseStoreAddress, STORE_SETTING, type StoreAddress, storeSecrets } from "../core/store-address.js";
import type { Store } from "./store.js";

/**
 * Opens the store named by MEDIAGATE_STORE: `sqlite:PATH` or `postgres://…`.
 * A store that cannot be opened is a configuration problem (nothing was
 * sent): a ConfigError `store_unreachable` in one sentence naming the
 * setting, the address with its password masked, and what failed.
 */
export async function openStore(location: string, options: { poolSize?: number } = {}): Promise<Store> {
  const address = parseStoreAddress(location);
  try {
    // Each driver is loaded when its store is opened: a command on SQLite never loads pg, and the reverse.
    if (address.kind === "sqlite") return await (await import("./sqlite.js")).openSqliteStore(address.path);
    return await (await import("./postgres.js")).openPostgresStore(address.connectionString, options.poolSize === undefined ? {} : { maxConnections: options.poolSize });
  } catch (error) {
    const why = redactSecrets(whyNotOpened(address, error), storeSecrets(location));
    throw new ConfigError("MEDIAGATE_STORE", `${STORE_SETTING} ${maskStoreAddress(location)} cannot be opened: ${why}`, "store_unreachable");
  }
}

/** What went wrong, from the error's code (never its wording), with the driver's own words as the fallback. */
function whyNotOpened(address: StoreAddress, error: unknown): string {
  const failure = error as { code?: unknown; errors?: Array<{ code?: unknown; address?: unknown; port?: unknown }>; address?: unknown; port?: unknown; hostname?: unknown };
  // A host name with several addresses fails as an AggregateError of one failure per address.
  const first = failure.errors?.[0] ?? failure;
  const code = typeof failure.code === "string" ? failure.code : typeof first.code === "string" ? first.code : undefined;
  const driverText = error instanceof Error ? error.message || error.name : String(error);
  if (address.kind === "sqlite") {
    const file = resolve(address.path);
    if (address.path !== ":memory:" && !existsSync(dirname(file))) return `the folder ${dirname(file)} does not exist (create it, or choose a file in an existing folder)`;
    return `SQLite cannot use ${file}: ${driverText}${code ? ` (${code})` : ""}`;
  }
  const where = typeof first.address === "string" ? `${first.address}${first.port !== undefined ? `:${String(first.port)}` : ""}` : "the given host and port";
  switch (code) {
    case "ECONNREFUSED":
      return `nothing accepts connections at ${where} (connection refused); is PostgreSQL running there?`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `the host ${typeof failure.hostname === "string" ? failure.hostname : "of the address"} cannot be resolved (${code})`;
    case "ETIMEDOUT":
    case "ECONNRESET":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `the connection to ${where} failed (${code})`;
  }
  // SQLSTATE codes are five characters: the server answered and refused (unknown database, wrong password, no permission).
  if (code && /^[0-9A-Z]{5}$/.test(code)) return `PostgreSQL refused: ${driverText} (SQLSTATE ${code})`;
  return driverText;
}

import { ConfigError } from "../core/errors.js";
import { openPostgresStore } from "./postgres.js";
import { openSqliteStore } from "./sqlite.js";
import type { Store } from "./store.js";

/** Opens the store named by MEDIAGATE_STORE: `sqlite:PATH` or `postgres://…`. */
export async function openStore(location: string): Promise<Store> {
  if (location.startsWith("sqlite:")) return openSqliteStore(location.slice("sqlite:".length) || "./mediagate.db");
  if (/^postgres(ql)?:\/\//.test(location)) return openPostgresStore(location);
  throw new ConfigError("MEDIAGATE_STORE", `MEDIAGATE_STORE must be sqlite:PATH or postgres://…, got "${location}"`);
}

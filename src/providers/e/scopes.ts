import { ConfigError } from "../../core/errors.js";

/** The names the spec's scope list leaves as placeholders: `<vendor>ID`, `<service>_…`, `<service_short>_apis`. */
export interface EScopeNames {
  vendor: string;
  service: string;
  serviceShort: string;
}

/** spec E token request: "openid, `<vendor>ID`, read_organizations, `<service>_enterprise`, `<service>_api`, `<service_short>_apis`". */
export function eScopeList(names: EScopeNames): string[] {
  return ["openid", `${names.vendor}ID`, "read_organizations", `${names.service}_enterprise`, `${names.service}_api`, `${names.serviceShort}_apis`];
}

/**
 * The scope list the adapter sends: the one configured, else the spec's list
 * filled with the configured names, else null. The spec does not name the
 * placeholders, so there is no list mediagate could send on its own.
 */
export function resolveScopes(config: { scopes?: readonly string[]; scopeNames?: EScopeNames }): string[] | null {
  if (config.scopes !== undefined) {
    if (config.scopes.length === 0) throw new ConfigError("MEDIAGATE_E_SCOPES", "E's scope list is empty");
    for (const scope of config.scopes) {
      // The list is sent comma-separated, so a scope cannot hold a comma; a `<…>` is a placeholder left unfilled.
      if (scope.trim() !== scope || scope === "" || scope.includes(",") || /[<>]/.test(scope)) {
        throw new ConfigError("MEDIAGATE_E_SCOPES", `E scope "${scope}" is not a scope name (no spaces, commas or <placeholders>)`);
      }
    }
    return [...config.scopes];
  }
  if (config.scopeNames !== undefined) {
    const { vendor, service, serviceShort } = config.scopeNames;
    for (const [name, value] of Object.entries({ vendor, service, serviceShort })) {
      if (!/^[A-Za-z0-9_.-]+$/.test(value)) throw new ConfigError("MEDIAGATE_E_SCOPES", `E scope name ${name} "${value}" is not a plain name`);
    }
    return eScopeList(config.scopeNames);
  }
  return null;
}

import { type ConfigVariable, type MediagateConfig } from "../core/config.js";
import { ConfigError } from "../core/errors.js";
import type { ProviderAdapter, ProviderId } from "./adapter.js";
import { createDAdapter } from "./d/index.js";

export interface ProviderEntry {
  id: ProviderId;
  /** Present when mediagate supports the provider; usable for validation and quotes even without credentials. */
  adapter: ProviderAdapter | null;
  /** Variables still to set before jobs can be sent; empty when configured. */
  missing: ConfigVariable[];
  baseUrl: string | null;
}

function missingOf(config: MediagateConfig, names: ConfigVariable[]): ConfigVariable[] {
  return names.filter((name) => !config.values[name]);
}

/**
 * The one place that knows every provider: builds each adapter from the
 * configuration. Nothing falls back to the sandbox: an unconfigured provider
 * reports the variables to set.
 */
export function createProviderRegistry(config: MediagateConfig): Map<ProviderId, ProviderEntry> {
  const values = config.values;
  const registry = new Map<ProviderId, ProviderEntry>();
  const priceView = values.MEDIAGATE_D_PRICE_VIEW;
  if (priceView !== undefined && priceView !== "pricing-page" && priceView !== "docs-from") {
    throw new ConfigError("MEDIAGATE_D_PRICE_VIEW", `MEDIAGATE_D_PRICE_VIEW must be pricing-page or docs-from, got "${priceView}"`);
  }
  registry.set("d", {
    id: "d",
    adapter: createDAdapter({
      baseUrl: values.MEDIAGATE_D_BASE_URL ?? "",
      apiKey: values.MEDIAGATE_D_API_KEY ?? "",
      ...(priceView ? { priceView } : {}),
    }),
    missing: missingOf(config, ["MEDIAGATE_D_BASE_URL", "MEDIAGATE_D_API_KEY"]),
    baseUrl: values.MEDIAGATE_D_BASE_URL ?? null,
  });
  for (const id of ["a", "b", "c", "e", "f"] as const) {
    registry.set(id, { id, adapter: null, missing: [], baseUrl: null });
  }
  return registry;
}

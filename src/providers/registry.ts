import { type ConfigVariable, type MediagateConfig } from "../core/config.js";
import { MICRO_PER_USD, readUsd, USD_ALLOWED } from "../core/money.js";
import { ConfigError } from "../core/errors.js";
import type { ProviderAdapter, ProviderId } from "./adapter.js";
import { createAAdapter } from "./a/index.js";
import { createBAdapter } from "./b/index.js";
import { C_TIER_SLOTS, createCAdapter, type CTier } from "./c/index.js";
import { createDAdapter } from "./d/index.js";
import { createEAdapter } from "./e/index.js";
import { createFAdapter } from "./f/index.js";

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
      ...concurrencyOf(config, "MEDIAGATE_D_CONCURRENCY"),
    }),
    missing: missingOf(config, ["MEDIAGATE_D_BASE_URL", "MEDIAGATE_D_API_KEY"]),
    baseUrl: values.MEDIAGATE_D_BASE_URL ?? null,
  });
  registry.set("a", aEntry(config));
  registry.set("c", cEntry(config));
  registry.set("f", {
    id: "f",
    adapter: createFAdapter({ baseUrl: values.MEDIAGATE_F_BASE_URL ?? "", apiKey: values.MEDIAGATE_F_API_KEY ?? "", ...concurrencyOf(config, "MEDIAGATE_F_CONCURRENCY") }),
    missing: missingOf(config, ["MEDIAGATE_F_BASE_URL", "MEDIAGATE_F_API_KEY"]),
    baseUrl: values.MEDIAGATE_F_BASE_URL ?? null,
  });
  registry.set("e", {
    id: "e",
    adapter: createEAdapter({
      baseUrl: values.MEDIAGATE_E_BASE_URL ?? "",
      authUrl: values.MEDIAGATE_E_AUTH_URL ?? "",
      clientId: values.MEDIAGATE_E_CLIENT_ID ?? "",
      clientSecret: values.MEDIAGATE_E_CLIENT_SECRET ?? "",
      ...(values.MEDIAGATE_E_SCOPES ? { scopes: values.MEDIAGATE_E_SCOPES.split(",").map((scope) => scope.trim()).filter(Boolean) } : {}),
    }),
    missing: missingOf(config, ["MEDIAGATE_E_BASE_URL", "MEDIAGATE_E_AUTH_URL", "MEDIAGATE_E_CLIENT_ID", "MEDIAGATE_E_CLIENT_SECRET", "MEDIAGATE_E_SCOPES"]),
    baseUrl: values.MEDIAGATE_E_BASE_URL ?? null,
  });
  registry.set("b", {
    id: "b",
    adapter: createBAdapter({
      baseUrl: values.MEDIAGATE_B_BASE_URL ?? "",
      apiKey: values.MEDIAGATE_B_API_KEY ?? "",
      ...(values.MEDIAGATE_B_WEBHOOK_SECRET ? { webhookSecret: values.MEDIAGATE_B_WEBHOOK_SECRET } : {}),
      ...concurrencyOf(config, "MEDIAGATE_B_CONCURRENCY"),
    }),
    missing: missingOf(config, ["MEDIAGATE_B_BASE_URL", "MEDIAGATE_B_API_KEY"]),
    baseUrl: values.MEDIAGATE_B_BASE_URL ?? null,
  });
  return registry;
}

/** The largest concurrency a setting may give: far above any published ceiling, and bounded so a typo cannot open thousands of sockets. */
const MAX_CONCURRENCY = 10_000;

/**
 * MEDIAGATE_<P>_CONCURRENCY: the account's concurrent tasks when they differ from what the provider
 * publishes (an arranged or enterprise limit, a private deployment); unset, the published or default one.
 */
function concurrencyOf(config: MediagateConfig, name: "MEDIAGATE_B_CONCURRENCY" | "MEDIAGATE_D_CONCURRENCY" | "MEDIAGATE_F_CONCURRENCY"): { concurrency?: number } {
  const value = config.values[name];
  if (value === undefined || value === "") return {};
  const concurrency = /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!(concurrency >= 1 && concurrency <= MAX_CONCURRENCY)) {
    throw new ConfigError(name, `${name} must be a whole number of concurrent tasks from 1 to ${MAX_CONCURRENCY}, got "${value}"`);
  }
  return { concurrency };
}

function flag(config: MediagateConfig, name: ConfigVariable): boolean {
  const value = config.values[name];
  if (value === undefined || value === "" || value === "0" || value === "false") return false;
  if (value === "1" || value === "true") return true;
  throw new ConfigError(name, `${name} must be 1 or 0, got "${value}"`);
}

function aEntry(config: MediagateConfig): ProviderEntry {
  const values = config.values;
  const rate = values.MEDIAGATE_A_USD_PER_MILLION_TOKENS;
  // Read as any other amount of dollars; USD per million tokens is then micro-USD per token.
  const reading = rate === undefined ? null : readUsd(rate);
  if (reading !== null && "reason" in reading) {
    throw new ConfigError("MEDIAGATE_A_USD_PER_MILLION_TOKENS", `MEDIAGATE_A_USD_PER_MILLION_TOKENS: ${reading.reason} (allowed: ${USD_ALLOWED})`);
  }
  const microUsdPerToken = reading === null ? null : reading.microUsd / MICRO_PER_USD;
  return {
    id: "a",
    adapter: createAAdapter({
      baseUrl: values.MEDIAGATE_A_BASE_URL ?? "",
      apiKey: values.MEDIAGATE_A_API_KEY ?? "",
      enterprise: flag(config, "MEDIAGATE_A_ENTERPRISE"),
      microUsdPerToken,
    }),
    missing: missingOf(config, ["MEDIAGATE_A_BASE_URL", "MEDIAGATE_A_API_KEY"]),
    baseUrl: values.MEDIAGATE_A_BASE_URL ?? null,
  };
}

function cEntry(config: MediagateConfig): ProviderEntry {
  const values = config.values;
  const tier = values.MEDIAGATE_C_TIER ?? "free";
  if (!Object.hasOwn(C_TIER_SLOTS, tier)) {
    throw new ConfigError("MEDIAGATE_C_TIER", `MEDIAGATE_C_TIER must be one of ${Object.keys(C_TIER_SLOTS).join(", ")}, got "${tier}"`);
  }
  return {
    id: "c",
    adapter: createCAdapter({ baseUrl: values.MEDIAGATE_C_BASE_URL ?? "", apiKey: values.MEDIAGATE_C_API_KEY ?? "", tier: tier as CTier }),
    missing: missingOf(config, ["MEDIAGATE_C_BASE_URL", "MEDIAGATE_C_API_KEY"]),
    baseUrl: values.MEDIAGATE_C_BASE_URL ?? null,
  };
}

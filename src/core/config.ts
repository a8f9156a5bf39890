import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { isBlockedPort } from "./blocked-ports.js";
import { ConfigError } from "./errors.js";
import { parseUsd } from "./money.js";
import { storeSecrets } from "./store-address.js";

/**
 * The configuration names are a contract (DESIGN.md): external tools set
 * these variables. Precedence: command-line flags, then the environment,
 * then `mediagate.config.json` (keys are the same variable names).
 */
export const CONFIG_VARIABLES = [
  "MEDIAGATE_STORE",
  "MEDIAGATE_OUTPUT_DIR",
  "MEDIAGATE_PUBLIC_URL",
  "MEDIAGATE_BUDGET_USD",
  "MEDIAGATE_ALLOW_PRIVATE_URLS",
  "MEDIAGATE_A_BASE_URL",
  "MEDIAGATE_A_API_KEY",
  "MEDIAGATE_A_ENTERPRISE",
  "MEDIAGATE_A_USD_PER_MILLION_TOKENS",
  "MEDIAGATE_B_BASE_URL",
  "MEDIAGATE_B_API_KEY",
  "MEDIAGATE_B_WEBHOOK_SECRET",
  "MEDIAGATE_B_CONCURRENCY",
  "MEDIAGATE_C_BASE_URL",
  "MEDIAGATE_C_API_KEY",
  "MEDIAGATE_C_TIER",
  "MEDIAGATE_D_BASE_URL",
  "MEDIAGATE_D_API_KEY",
  "MEDIAGATE_D_PRICE_VIEW",
  "MEDIAGATE_D_CONCURRENCY",
  "MEDIAGATE_E_BASE_URL",
  "MEDIAGATE_E_AUTH_URL",
  "MEDIAGATE_E_CLIENT_ID",
  "MEDIAGATE_E_CLIENT_SECRET",
  "MEDIAGATE_E_SCOPES",
  "MEDIAGATE_F_BASE_URL",
  "MEDIAGATE_F_API_KEY",
  "MEDIAGATE_F_CONCURRENCY",
  "MEDIAGATE_LOG_LEVEL",
  "MEDIAGATE_FALLBACK_AFTER_S",
] as const;
export type ConfigVariable = (typeof CONFIG_VARIABLES)[number];

/** Variables whose values are secrets: redacted everywhere, never printed. */
export const SECRET_VARIABLES: ReadonlySet<ConfigVariable> = new Set([
  "MEDIAGATE_A_API_KEY",
  "MEDIAGATE_B_API_KEY",
  "MEDIAGATE_B_WEBHOOK_SECRET",
  "MEDIAGATE_C_API_KEY",
  "MEDIAGATE_D_API_KEY",
  "MEDIAGATE_E_CLIENT_SECRET",
  "MEDIAGATE_F_API_KEY",
]);

export type ConfigValues = Partial<Record<ConfigVariable, string>>;

export interface MediagateConfig {
  values: ConfigValues;
  store: string;
  outputDir: string;
  publicUrl: string | null;
  budgetMicroUsd: number | null;
  allowPrivateUrls: boolean;
  /** How long a routed job's target may keep failing before accepting (an outage) before the job moves to the next target. */
  fallbackAfterMs: number;
}

/** MEDIAGATE_FALLBACK_AFTER_S unset: a minute of outage moves a routed job on. */
export const DEFAULT_FALLBACK_AFTER_MS = 60_000;

export interface LoadConfigOptions {
  env?: NodeJS.ProcessEnv;
  /** Path of the config file; default `./mediagate.config.json` when it exists. */
  configFile?: string;
  /** Values from command-line flags (highest precedence). */
  overrides?: ConfigValues;
  cwd?: string;
}

function readConfigFile(path: string): ConfigValues {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ConfigError("--config", `cannot read ${path}: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ConfigError("--config", `${path} must hold one JSON object of MEDIAGATE_* keys`);
  }
  const values: ConfigValues = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!(CONFIG_VARIABLES as readonly string[]).includes(key)) {
      throw new ConfigError(key, `${path}: unknown key ${key}; known keys: ${CONFIG_VARIABLES.join(", ")}`);
    }
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw new ConfigError(key, `${path}: ${key} must be a string, number or boolean`);
    }
    values[key as ConfigVariable] = String(value);
  }
  return values;
}

export function loadConfig(options: LoadConfigOptions = {}): MediagateConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const filePath = options.configFile ? resolve(cwd, options.configFile) : resolve(cwd, "mediagate.config.json");
  if (options.configFile && !existsSync(filePath)) {
    throw new ConfigError("--config", `config file ${filePath} does not exist`);
  }
  const fromFile = existsSync(filePath) ? readConfigFile(filePath) : {};
  const values: ConfigValues = { ...fromFile };
  for (const name of CONFIG_VARIABLES) {
    const value = env[name];
    if (value !== undefined && value !== "") values[name] = value;
  }
  for (const [name, value] of Object.entries(options.overrides ?? {})) {
    if (value !== undefined) values[name as ConfigVariable] = value;
  }

  let budgetMicroUsd: number | null = null;
  if (values.MEDIAGATE_BUDGET_USD !== undefined) {
    budgetMicroUsd = parseUsd(values.MEDIAGATE_BUDGET_USD);
    if (budgetMicroUsd === null) {
      throw new ConfigError("MEDIAGATE_BUDGET_USD", `MEDIAGATE_BUDGET_USD must be a USD amount like 2.50, got "${values.MEDIAGATE_BUDGET_USD}"`);
    }
  }
  const publicUrl = values.MEDIAGATE_PUBLIC_URL ?? null;
  if (publicUrl !== null && !isAcceptablePublicUrl(publicUrl)) {
    throw new ConfigError(
      "MEDIAGATE_PUBLIC_URL",
      `MEDIAGATE_PUBLIC_URL must be the public https:// base of \`mediagate serve\` (http only on a loopback address, for local set-ups), got "${publicUrl}"`,
    );
  }
  let fallbackAfterMs = DEFAULT_FALLBACK_AFTER_MS;
  if (values.MEDIAGATE_FALLBACK_AFTER_S !== undefined) {
    const seconds = Number(values.MEDIAGATE_FALLBACK_AFTER_S);
    if (!/^\d+(\.\d+)?$/.test(values.MEDIAGATE_FALLBACK_AFTER_S) || !Number.isFinite(seconds)) {
      throw new ConfigError("MEDIAGATE_FALLBACK_AFTER_S", `MEDIAGATE_FALLBACK_AFTER_S must be a number of seconds from 0, like 60, got "${values.MEDIAGATE_FALLBACK_AFTER_S}"`);
    }
    fallbackAfterMs = Math.round(seconds * 1000);
  }
  for (const name of PROVIDER_ADDRESS_VARIABLES) {
    const value = values[name];
    if (value !== undefined) checkProviderAddress(name, value);
  }
  return {
    values,
    store: values.MEDIAGATE_STORE ?? "sqlite:./mediagate.db",
    outputDir: resolve(cwd, values.MEDIAGATE_OUTPUT_DIR ?? "./mediagate-output"),
    publicUrl,
    budgetMicroUsd,
    allowPrivateUrls: values.MEDIAGATE_ALLOW_PRIVATE_URLS === "1",
    fallbackAfterMs,
  };
}

/** Every configured secret value, for redaction: keys, client secrets, and the store's password. */
export function configSecrets(config: MediagateConfig): string[] {
  const secrets: string[] = [];
  for (const name of SECRET_VARIABLES) {
    const value = config.values[name];
    if (value) secrets.push(value);
  }
  secrets.push(...storeSecrets(config.store));
  return secrets;
}

/** A required value, or a ConfigError naming the variable to set. */
export function requireValue(config: MediagateConfig, name: ConfigVariable, what: string): string {
  const value = config.values[name];
  if (!value) {
    throw new ConfigError(
      name,
      `${what} is not configured: set ${name} (environment, --config file, or run \`mediagate sandbox\` and use the lines it prints)`,
    );
  }
  return value;
}

const PROVIDER_ADDRESS_VARIABLES = [
  "MEDIAGATE_A_BASE_URL",
  "MEDIAGATE_B_BASE_URL",
  "MEDIAGATE_C_BASE_URL",
  "MEDIAGATE_D_BASE_URL",
  "MEDIAGATE_E_BASE_URL",
  "MEDIAGATE_E_AUTH_URL",
  "MEDIAGATE_F_BASE_URL",
] as const satisfies readonly ConfigVariable[];

/**
 * A provider address fetch would refuse before connecting is refused here,
 * before anything is queued: otherwise every job would fail at submit time
 * (and, worse, could not be told apart from a submit that was sent).
 */
function checkProviderAddress(name: ConfigVariable, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, `${name} must be an http(s) URL such as https://api.provider.example/v1, got "${value}"`);
  }
  if (url.username || url.password) {
    // Not echoed: what sits there is likely a credential.
    throw new ConfigError(name, `${name} must not carry a user or password (fetch refuses such URLs; keys go in their own variables)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(name, `${name} must be an http(s) URL such as https://api.provider.example/v1, got "${value}"`);
  }
  if (isBlockedPort(url)) {
    throw new ConfigError(name, `${name} uses port ${url.port}, which fetch never connects to (one of the Fetch standard's blocked ports): choose another port`);
  }
}

/** https anywhere; plain http only on loopback, where a local sandbox delivers to a local `mediagate serve`. */
function isAcceptablePublicUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.protocol === "https:") return true;
  return url.protocol === "http:" && (url.hostname === "127.0.0.1" || url.hostname === "[::1]" || url.hostname === "localhost");
}

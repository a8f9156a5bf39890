import { isUtf8 } from "node:buffer";
import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { isBlockedPort } from "./blocked-ports.js";
import { ConfigError, InputError } from "./errors.js";
import { checkJsonText, JSON_SIZE_ALLOWED, MAX_JSON_BYTES } from "./json-text.js";
import { WELL_FORMED_ALLOWED, wellFormedProblem } from "./well-formed.js";
import { readUsd, USD_ALLOWED } from "./money.js";
import { storeSecrets } from "./store-address.js";
import { displayUrl } from "./redact.js";

/**
 * The configuration names are a contract (DESIGN.md): external tools set
 * these variables. Precedence: command-line flags, then the environment,
 * then `mediagate.config.json` (keys are the same variable names).
 */
export const CONFIG_VARIABLES = [
  "MEDIAGATE_STORE",
  "MEDIAGATE_STORE_POOL_SIZE",
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
  "MEDIAGATE_NOTIFY_URL",
  "MEDIAGATE_NOTIFY_SECRET",
  "MEDIAGATE_NOTIFY_EVENTS",
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
  "MEDIAGATE_NOTIFY_SECRET",
]);

export type ConfigValues = Partial<Record<ConfigVariable, string>>;

export interface MediagateConfig {
  values: ConfigValues;
  store: string;
  /** The most connections this process opens to a PostgreSQL store (MEDIAGATE_STORE_POOL_SIZE); SQLite has one. */
  storePoolSize: number;
  outputDir: string;
  publicUrl: string | null;
  budgetMicroUsd: number | null;
  allowPrivateUrls: boolean;
  /** How long a routed job's target may keep failing before accepting (an outage) before the job moves to the next target. */
  fallbackAfterMs: number;
  /** Where a job without its own `notify_url` is notified (MEDIAGATE_NOTIFY_URL); null: nowhere. */
  notifyUrl: string | null;
  /** The Standard Webhooks secret (`whsec_…`) notifications are signed with; null: none is sent. */
  notifySecret: string | null;
  /** `terminal` (default): a job's end is notified; `all`: every change of its state. */
  notifyEvents: "terminal" | "all";
}

/** The levels MEDIAGATE_LOG_LEVEL (and --log-level) take: pino's, from the fewest lines to the most. */
export const LOG_LEVELS = ["silent", "fatal", "error", "warn", "info", "debug", "trace"] as const;

/** MEDIAGATE_STORE_POOL_SIZE unset: each process opens up to this many connections to a PostgreSQL store. */
export const DEFAULT_STORE_POOL_SIZE = 10;
/** The most MEDIAGATE_STORE_POOL_SIZE may be: far past what one process can keep busy, and past PostgreSQL's default of 100 connections in all. */
const MAX_STORE_POOL_SIZE = 1_000;

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
  // Measured before it is read: a config file is a few hundred bytes, and a path to something huge should not be loaded whole.
  const size = statSync(path).size;
  if (size > MAX_JSON_BYTES) throw new ConfigError("--config", `${path} is ${size} bytes; a config file may be ${JSON_SIZE_ALLOWED}`);
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new ConfigError("--config", `cannot read ${path}: ${(error as Error).message}`);
  }
  // Read as it is, a byte that is not UTF-8 would become U+FFFD: a key or address other than the one written.
  if (!isUtf8(bytes)) throw new ConfigError("--config", `${path} is not UTF-8 text; a config file is JSON, which is UTF-8`);
  const text = bytes.toString("utf8");
  try {
    checkJsonText(text, path);
  } catch (error) {
    if (error instanceof InputError) throw new ConfigError("--config", `${error.message}; a config file holds one flat object of MEDIAGATE_* keys`);
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
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
    const illFormed = typeof value === "string" ? wellFormedProblem(value) : null;
    if (illFormed !== null) throw new ConfigError(key, `${path}: ${key} ${illFormed} (allowed: ${WELL_FORMED_ALLOWED})`);
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
    const reading = readUsd(values.MEDIAGATE_BUDGET_USD);
    if ("reason" in reading) throw new ConfigError("MEDIAGATE_BUDGET_USD", `MEDIAGATE_BUDGET_USD: ${reading.reason} (allowed: ${USD_ALLOWED})`);
    budgetMicroUsd = reading.microUsd;
  }
  const logLevel = values.MEDIAGATE_LOG_LEVEL;
  if (logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError("MEDIAGATE_LOG_LEVEL", `MEDIAGATE_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel.slice(0, 40)}"`);
  }
  const publicUrl = values.MEDIAGATE_PUBLIC_URL ?? null;
  if (publicUrl !== null && !isAcceptablePublicUrl(publicUrl)) {
    throw new ConfigError(
      "MEDIAGATE_PUBLIC_URL",
      `MEDIAGATE_PUBLIC_URL must be the public https:// base of \`mediagate serve\` (http only on a loopback address, for local set-ups), got "${displayUrl(publicUrl)}"`,
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
  let storePoolSize = DEFAULT_STORE_POOL_SIZE;
  if (values.MEDIAGATE_STORE_POOL_SIZE !== undefined) {
    storePoolSize = Number(values.MEDIAGATE_STORE_POOL_SIZE);
    if (!/^\d+$/.test(values.MEDIAGATE_STORE_POOL_SIZE) || storePoolSize < 1 || storePoolSize > MAX_STORE_POOL_SIZE) {
      throw new ConfigError(
        "MEDIAGATE_STORE_POOL_SIZE",
        `MEDIAGATE_STORE_POOL_SIZE must be a whole number of connections from 1 to ${MAX_STORE_POOL_SIZE} (default ${DEFAULT_STORE_POOL_SIZE}), got "${values.MEDIAGATE_STORE_POOL_SIZE}"`,
      );
    }
  }
  for (const name of PROVIDER_ADDRESS_VARIABLES) {
    const value = values[name];
    if (value !== undefined) checkProviderAddress(name, value);
  }
  const allowPrivateUrls = values.MEDIAGATE_ALLOW_PRIVATE_URLS === "1";
  const notifyUrl = values.MEDIAGATE_NOTIFY_URL ?? null;
  if (notifyUrl !== null) checkNotifyUrl(notifyUrl, allowPrivateUrls);
  const notifySecret = values.MEDIAGATE_NOTIFY_SECRET ?? null;
  if (notifySecret !== null && !isStandardWebhooksSecret(notifySecret)) {
    // Not echoed: it is a secret.
    throw new ConfigError(
      "MEDIAGATE_NOTIFY_SECRET",
      "MEDIAGATE_NOTIFY_SECRET must be a Standard Webhooks secret: whsec_ then the base64 of at least 16 random bytes (for example whsec_ followed by the output of `openssl rand -base64 32`)",
    );
  }
  const notifyEvents = values.MEDIAGATE_NOTIFY_EVENTS ?? "terminal";
  if (notifyEvents !== "terminal" && notifyEvents !== "all") {
    throw new ConfigError("MEDIAGATE_NOTIFY_EVENTS", `MEDIAGATE_NOTIFY_EVENTS must be terminal (a job's end, the default) or all (every change of its state), got "${notifyEvents}"`);
  }
  return {
    values,
    store: values.MEDIAGATE_STORE ?? "sqlite:./mediagate.db",
    storePoolSize,
    outputDir: outputLocation(cwd, values.MEDIAGATE_OUTPUT_DIR ?? "./mediagate-output"),
    publicUrl,
    budgetMicroUsd,
    allowPrivateUrls,
    fallbackAfterMs,
    notifyUrl,
    notifySecret,
    notifyEvents,
  };
}

/**
 * MEDIAGATE_OUTPUT_DIR: a folder, made absolute, or an S3-compatible bucket
 * address (`s3://bucket/prefix`), kept as written. The output folder check
 * reports anything else wrong with an address, before anything is sent.
 */
function outputLocation(cwd: string, value: string): string {
  if (!/^s3:\/\//i.test(value)) return resolve(cwd, value);
  if (/^s3:\/\/[^/]*@/i.test(value)) {
    // Not echoed: what sits there is likely a credential.
    throw new ConfigError("MEDIAGATE_OUTPUT_DIR", "MEDIAGATE_OUTPUT_DIR must not carry a user or password (S3 credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the other usual AWS sources)");
  }
  return value.replace(/\/+$/, "");
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
    throw new ConfigError(name, `${name} must be an http(s) URL such as https://api.provider.example/v1, got "${displayUrl(value)}"`);
  }
  if (url.username || url.password) {
    // Not echoed: what sits there is likely a credential.
    throw new ConfigError(name, `${name} must not carry a user or password (fetch refuses such URLs; keys go in their own variables)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(name, `${name} must be an http(s) URL such as https://api.provider.example/v1, got "${displayUrl(value)}"`);
  }
  if (isBlockedPort(url)) {
    throw new ConfigError(name, `${name} uses port ${url.port}, which fetch never connects to (one of the Fetch standard's blocked ports): choose another port`);
  }
}

/**
 * MEDIAGATE_NOTIFY_URL: https, or http where private URLs are allowed (the
 * rule `notify_url` is held to). Whether its host is public is checked at
 * each send, since what a name resolves to can change. Only its origin is
 * echoed: its path or query may carry the receiver's token.
 */
function checkNotifyUrl(value: string, allowPrivateUrls: boolean): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError("MEDIAGATE_NOTIFY_URL", "MEDIAGATE_NOTIFY_URL must be an https:// URL such as https://hooks.example.com/mediagate");
  }
  if (url.username || url.password) throw new ConfigError("MEDIAGATE_NOTIFY_URL", "MEDIAGATE_NOTIFY_URL must not carry a user or password");
  const httpAllowed = allowPrivateUrls && url.protocol === "http:";
  if (url.protocol !== "https:" && !httpAllowed) {
    throw new ConfigError(
      "MEDIAGATE_NOTIFY_URL",
      `MEDIAGATE_NOTIFY_URL must be an https:// URL (plain http only with MEDIAGATE_ALLOW_PRIVATE_URLS=1, for local set-ups), got one starting ${url.protocol}//${url.host}`,
    );
  }
}

/** `whsec_` then canonical base64 of at least 16 bytes: what Standard Webhooks libraries take as a secret. */
function isStandardWebhooksSecret(value: string): boolean {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(value);
  if (!match) return false;
  const key = Buffer.from(match[1]!, "base64");
  return key.length >= 16 && key.toString("base64") === match[1];
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

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CONFIG_VARIABLES, configSecrets, type ConfigVariable, loadConfig, requireValue, SECRET_VARIABLES } from "../../src/core/config.js";
import { configError } from "../helpers/errors.js";
import { createProviderRegistry } from "../../src/providers/registry.js";

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), "mediagate-config-"));
});
afterEach(() => {
  rmSync(folder, { recursive: true, force: true });
});

function writeConfig(name: string, content: unknown): string {
  const path = join(folder, name);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

const load = (env: Record<string, string>, overrides = {}) => loadConfig({ env, cwd: folder, overrides });

describe("configuration", () => {
  it("the variable names are a contract external tools set", () => {
    expect(CONFIG_VARIABLES).toEqual([
      "MEDIAGATE_STORE", "MEDIAGATE_STORE_POOL_SIZE", "MEDIAGATE_OUTPUT_DIR", "MEDIAGATE_PUBLIC_URL", "MEDIAGATE_BUDGET_USD", "MEDIAGATE_ALLOW_PRIVATE_URLS",
      "MEDIAGATE_A_BASE_URL", "MEDIAGATE_A_API_KEY", "MEDIAGATE_A_ENTERPRISE", "MEDIAGATE_A_USD_PER_MILLION_TOKENS",
      "MEDIAGATE_B_BASE_URL", "MEDIAGATE_B_API_KEY", "MEDIAGATE_B_WEBHOOK_SECRET", "MEDIAGATE_B_CONCURRENCY",
      "MEDIAGATE_C_BASE_URL", "MEDIAGATE_C_API_KEY", "MEDIAGATE_C_TIER",
      "MEDIAGATE_D_BASE_URL", "MEDIAGATE_D_API_KEY", "MEDIAGATE_D_PRICE_VIEW", "MEDIAGATE_D_CONCURRENCY",
      "MEDIAGATE_E_BASE_URL", "MEDIAGATE_E_AUTH_URL", "MEDIAGATE_E_CLIENT_ID", "MEDIAGATE_E_CLIENT_SECRET", "MEDIAGATE_E_SCOPES",
      "MEDIAGATE_F_BASE_URL", "MEDIAGATE_F_API_KEY", "MEDIAGATE_F_CONCURRENCY",
      "MEDIAGATE_LOG_LEVEL",
      "MEDIAGATE_FALLBACK_AFTER_S",
      "MEDIAGATE_NOTIFY_URL", "MEDIAGATE_NOTIFY_SECRET", "MEDIAGATE_NOTIFY_EVENTS",
    ]);
  });

  it("with nothing set: a SQLite store in the working folder, outputs under ./mediagate-output, no public URL, no budget, no private URLs", () => {
    expect(load({})).toEqual({
      values: {},
      store: "sqlite:./mediagate.db",
      storePoolSize: 10,
      outputDir: join(folder, "mediagate-output"),
      publicUrl: null,
      budgetMicroUsd: null,
      allowPrivateUrls: false,
      fallbackAfterMs: 60_000,
      notifyUrl: null,
      notifySecret: null,
      notifyEvents: "terminal",
    });
  });

  it("every variable is read from the environment; an empty one counts as unset; others are ignored", () => {
    const env = Object.fromEntries(CONFIG_VARIABLES.map((name) => [name, `value of ${name}`]));
    const { values } = loadConfig({ env: { ...env, MEDIAGATE_BUDGET_USD: "3", MEDIAGATE_PUBLIC_URL: "https://hooks.example", MEDIAGATE_FALLBACK_AFTER_S: "30", MEDIAGATE_STORE_POOL_SIZE: "4", ...baseUrls(), ...notifications(), MEDIAGATE_LOG_LEVEL: "", OTHER: "x" }, cwd: folder });
    for (const name of CONFIG_VARIABLES) {
      if (name === "MEDIAGATE_LOG_LEVEL") expect(values[name]).toBeUndefined();
      else expect(values[name], name).toBeDefined();
    }
    expect(values.MEDIAGATE_C_TIER).toBe("value of MEDIAGATE_C_TIER");
    expect(Object.keys(values)).not.toContain("OTHER");
  });

  it("flags beat the environment, which beats mediagate.config.json in the working folder", () => {
    writeConfig("mediagate.config.json", { MEDIAGATE_STORE: "sqlite:file.db", MEDIAGATE_OUTPUT_DIR: "from-file", MEDIAGATE_LOG_LEVEL: "debug" });
    const config = load({ MEDIAGATE_STORE: "sqlite:env.db", MEDIAGATE_OUTPUT_DIR: "from-env" }, { MEDIAGATE_OUTPUT_DIR: "from-flag", MEDIAGATE_LOG_LEVEL: undefined });
    expect(config.store).toBe("sqlite:env.db");
    expect(config.outputDir).toBe(join(folder, "from-flag"));
    expect(config.values.MEDIAGATE_LOG_LEVEL).toBe("debug");
  });

  it("a config file named with --config is read relative to the working folder; numbers and booleans become strings", () => {
    writeConfig("team.json", { MEDIAGATE_BUDGET_USD: 2.5, MEDIAGATE_ALLOW_PRIVATE_URLS: 1, MEDIAGATE_A_ENTERPRISE: true });
    const config = loadConfig({ env: {}, cwd: folder, configFile: "team.json" });
    expect(config.values).toEqual({ MEDIAGATE_BUDGET_USD: "2.5", MEDIAGATE_ALLOW_PRIVATE_URLS: "1", MEDIAGATE_A_ENTERPRISE: "true" });
    expect(config.budgetMicroUsd).toBe(2_500_000);
    expect(config.allowPrivateUrls).toBe(true);
  });

  it("a --config file that does not exist is refused, naming --config and the path", () => {
    const error = configError(() => loadConfig({ env: {}, cwd: folder, configFile: "missing.json" }));
    expect(error.variable).toBe("--config");
    expect(error.message).toBe(`config file ${join(folder, "missing.json")} does not exist`);
  });

  it("a config file that is not JSON is refused, naming the path and the parser's complaint", () => {
    const path = writeConfig("mediagate.config.json", "{ not json");
    const error = configError(() => load({}));
    expect(error.variable).toBe("--config");
    expect(error.message).toMatch(new RegExp(`^cannot read ${path}: .+`));
  });

  it("a config file must hold one JSON object", () => {
    for (const content of ["[]", "null", '"MEDIAGATE_STORE"', "42"]) {
      const path = writeConfig("mediagate.config.json", content);
      const error = configError(() => load({}));
      expect(error.variable).toBe("--config");
      expect(error.message).toBe(`${path} must hold one JSON object of MEDIAGATE_* keys`);
    }
  });

  it("a config file whose bytes are not UTF-8, or whose value holds a lone surrogate, is refused naming --config or the key (read as it is, it would be another value)", () => {
    writeFileSync(join(folder, "mediagate.config.json"), Buffer.concat([Buffer.from('{"MEDIAGATE_STORE": "sqlite:caf'), Buffer.from([0xe9]), Buffer.from('.db"}')]));
    const bytes = configError(() => load({}));
    expect(bytes.variable).toBe("--config");
    expect(bytes.message).toMatch(/mediagate\.config\.json is not UTF-8 text; a config file is JSON, which is UTF-8$/);
    writeFileSync(join(folder, "mediagate.config.json"), '{"MEDIAGATE_STORE": "sqlite:a\\ud800.db"}');
    const lone = configError(() => load({}));
    expect(lone.variable).toBe("MEDIAGATE_STORE");
    expect(lone.message).toMatch(/: MEDIAGATE_STORE holds a lone surrogate U\+D800 at position 9, which is not a character/);
  });

  it("an unknown key in the config file is refused, naming it and listing the known keys", () => {
    const path = writeConfig("mediagate.config.json", { MEDIAGATE_STORE: "sqlite:x.db", MEDIAGATE_BUDGET: "2" });
    const error = configError(() => load({}));
    expect(error.variable).toBe("MEDIAGATE_BUDGET");
    expect(error.message).toBe(`${path}: unknown key MEDIAGATE_BUDGET; known keys: ${CONFIG_VARIABLES.join(", ")}`);
  });

  it("a config value that is an object, an array or null is refused, naming the key", () => {
    for (const value of [{ usd: 2 }, ["2"], null]) {
      const path = writeConfig("mediagate.config.json", { MEDIAGATE_BUDGET_USD: value });
      const error = configError(() => load({}));
      expect(error.variable).toBe("MEDIAGATE_BUDGET_USD");
      expect(error.message).toBe(`${path}: MEDIAGATE_BUDGET_USD must be a string, number or boolean`);
    }
  });

  it("the budget is read as USD into micro-USD; anything else is refused in one sentence naming the variable", () => {
    expect(load({ MEDIAGATE_BUDGET_USD: "$2.50" }).budgetMicroUsd).toBe(2_500_000);
    expect(load({ MEDIAGATE_BUDGET_USD: "0" }).budgetMicroUsd).toBe(0);
    const error = configError(() => load({ MEDIAGATE_BUDGET_USD: "two dollars" }));
    expect(error.variable).toBe("MEDIAGATE_BUDGET_USD");
    expect(error.code).toBe("not_configured");
    expect(error.message).toBe('MEDIAGATE_BUDGET_USD: "two dollars" is not an amount of US dollars (allowed: an amount of US dollars from 0 to 1000000000 with at most 6 decimals, like 25 or 2.50)');
  });

  it("a budget past $1,000,000,000 (in the environment or a config file) is refused naming MEDIAGATE_BUDGET_USD, not stored as a float or refused by PostgreSQL's bigint", () => {
    expect(load({ MEDIAGATE_BUDGET_USD: "1000000000" }).budgetMicroUsd).toBe(1e15);
    for (const value of ["9300000000000", "99999999999999999"]) {
      const error = configError(() => load({ MEDIAGATE_BUDGET_USD: value }));
      expect(error.variable).toBe("MEDIAGATE_BUDGET_USD");
      expect(error.message).toBe(`MEDIAGATE_BUDGET_USD: ${value} is more than $1000000000 (allowed: an amount of US dollars from 0 to 1000000000 with at most 6 decimals, like 25 or 2.50)`);
    }
    // A number in the file is read as it is written: 1e21 is not an amount typed in dollars.
    writeConfig("mediagate.config.json", { MEDIAGATE_BUDGET_USD: 1e21 });
    expect(configError(() => load({})).message).toMatch(/^MEDIAGATE_BUDGET_USD: "1e\+21" is not an amount of US dollars/);
  });

  it("A's price per million tokens is an amount of dollars like any other: past $1,000,000,000, not a plain decimal, or Infinity is refused naming MEDIAGATE_A_USD_PER_MILLION_TOKENS", () => {
    const config = load({ MEDIAGATE_A_USD_PER_MILLION_TOKENS: "1.5" });
    expect(createProviderRegistry(config).get("a")!.adapter!.estimate).toBeDefined();
    for (const value of ["1e400", "1e20", "-1", "99999999999999999", "0x10"]) {
      const error = configError(() => createProviderRegistry(load({ MEDIAGATE_A_USD_PER_MILLION_TOKENS: value })));
      expect(error.variable, value).toBe("MEDIAGATE_A_USD_PER_MILLION_TOKENS");
      expect(error.message).toMatch(/^MEDIAGATE_A_USD_PER_MILLION_TOKENS: .* \(allowed: an amount of US dollars from 0 to 1000000000/);
    }
  });

  it("MEDIAGATE_LOG_LEVEL is one of pino's levels; another is refused naming it (an engine crashed on pino's own message)", () => {
    expect(load({ MEDIAGATE_LOG_LEVEL: "debug" }).values.MEDIAGATE_LOG_LEVEL).toBe("debug");
    expect(configError(() => load({ MEDIAGATE_LOG_LEVEL: "loud" })).message).toBe('MEDIAGATE_LOG_LEVEL must be one of silent, fatal, error, warn, info, debug, trace, got "loud"');
  });

  it("MEDIAGATE_FALLBACK_AFTER_S: seconds of outage before a routed job moves to its next target (default 60); anything but a number of seconds is refused naming it", () => {
    expect(load({ MEDIAGATE_FALLBACK_AFTER_S: "2.5" }).fallbackAfterMs).toBe(2_500);
    expect(load({ MEDIAGATE_FALLBACK_AFTER_S: "0" }).fallbackAfterMs).toBe(0);
    for (const value of ["-1", "1m", "soon"]) {
      expect(() => load({ MEDIAGATE_FALLBACK_AFTER_S: value })).toThrow(`MEDIAGATE_FALLBACK_AFTER_S must be a number of seconds from 0, like 60, got "${value}"`);
    }
  });

  it("MEDIAGATE_STORE_POOL_SIZE: the most connections a process opens to a PostgreSQL store (default 10); anything but a whole number from 1 to 1000 is refused naming it", () => {
    expect(load({ MEDIAGATE_STORE_POOL_SIZE: "3" }).storePoolSize).toBe(3);
    expect(load({ MEDIAGATE_STORE_POOL_SIZE: "1" }).storePoolSize).toBe(1);
    expect(load({ MEDIAGATE_STORE_POOL_SIZE: "1000" }).storePoolSize).toBe(1000);
    for (const value of ["0", "1001", "-2", "2.5", "ten", "1e2"]) {
      const error = configError(() => load({ MEDIAGATE_STORE_POOL_SIZE: value }));
      expect(error.variable).toBe("MEDIAGATE_STORE_POOL_SIZE");
      expect(error.message).toBe(`MEDIAGATE_STORE_POOL_SIZE must be a whole number of connections from 1 to 1000 (default 10), got "${value}"`);
    }
  });

  it("private URLs are allowed only by MEDIAGATE_ALLOW_PRIVATE_URLS=1", () => {
    expect(load({ MEDIAGATE_ALLOW_PRIVATE_URLS: "1" }).allowPrivateUrls).toBe(true);
    for (const value of ["0", "true", "yes"]) expect(load({ MEDIAGATE_ALLOW_PRIVATE_URLS: value }).allowPrivateUrls).toBe(false);
  });

  it("the public URL is https, or http on a loopback address for local set-ups", () => {
    for (const url of ["https://hooks.example.com/mediagate", "https://10.0.0.5", "http://127.0.0.1:8787", "http://[::1]:8787", "http://localhost:8787/"]) {
      expect(load({ MEDIAGATE_PUBLIC_URL: url }).publicUrl).toBe(url);
    }
  });

  it("a public URL that is plain http elsewhere, another scheme or not a URL is refused, naming the variable", () => {
    // Quoted as an error quotes a URL: origin and path, never a user part or a query.
    const cases: Array<[string, string]> = [
      ["http://hooks.example.com", "http://hooks.example.com/"],
      ["http://10.0.0.5:8787", "http://10.0.0.5:8787/"],
      ["ftp://127.0.0.1/", "ftp://127.0.0.1/"],
      ["hooks.example.com", "hooks.example.com"],
      ["http://127.0.0.2:8787", "http://127.0.0.2:8787/"],
      ["http://admin:pa55@hooks.example.com/in?token=t0k3n", "http://hooks.example.com/in?…"],
    ];
    for (const [url, shown] of cases) {
      const error = configError(() => load({ MEDIAGATE_PUBLIC_URL: url }));
      expect(error.variable).toBe("MEDIAGATE_PUBLIC_URL");
      expect(error.message).toBe(
        `MEDIAGATE_PUBLIC_URL must be the public https:// base of \`mediagate serve\` (http only on a loopback address, for local set-ups), got "${shown}"`,
      );
    }
  });

  it("every provider address is checked before anything is queued", () => {
    for (const name of Object.keys(baseUrls()) as ConfigVariable[]) {
      expect(configError(() => load({ [name]: "not a url" })).variable).toBe(name);
      expect(load({ [name]: "http://127.0.0.1:8080/v1" }).values[name]).toBe("http://127.0.0.1:8080/v1");
    }
  });

  it("a provider address must be an http(s) URL", () => {
    for (const value of ["api.provider.example", "ftp://api.provider.example/v1", "file:///etc/passwd"]) {
      const error = configError(() => load({ MEDIAGATE_D_BASE_URL: value }));
      expect(error.variable).toBe("MEDIAGATE_D_BASE_URL");
      expect(error.message).toBe(`MEDIAGATE_D_BASE_URL must be an http(s) URL such as https://api.provider.example/v1, got "${value}"`);
    }
  });

  it("a provider address carrying a user or password is refused without echoing it", () => {
    for (const value of ["https://key-123456@api.provider.example/v1", "https://user:pw-123456@api.provider.example/v1", "https://:pw-123456@api.provider.example/v1"]) {
      const error = configError(() => load({ MEDIAGATE_F_BASE_URL: value }));
      expect(error.variable).toBe("MEDIAGATE_F_BASE_URL");
      expect(error.message).toBe("MEDIAGATE_F_BASE_URL must not carry a user or password (fetch refuses such URLs; keys go in their own variables)");
    }
  });

  it("a provider address on a port fetch never connects to is refused, naming the port", () => {
    const error = configError(() => load({ MEDIAGATE_E_AUTH_URL: "http://127.0.0.1:6000/token" }));
    expect(error.variable).toBe("MEDIAGATE_E_AUTH_URL");
    expect(error.message).toBe(
      "MEDIAGATE_E_AUTH_URL uses port 6000, which fetch never connects to (one of the Fetch standard's blocked ports): choose another port",
    );
  });

  it("the secrets are the API keys, the webhook secret, the client secret, the notifications' signing secret and the store's password, and nothing else", () => {
    expect([...SECRET_VARIABLES].sort()).toEqual([
      "MEDIAGATE_A_API_KEY", "MEDIAGATE_B_API_KEY", "MEDIAGATE_B_WEBHOOK_SECRET", "MEDIAGATE_C_API_KEY", "MEDIAGATE_D_API_KEY", "MEDIAGATE_E_CLIENT_SECRET", "MEDIAGATE_F_API_KEY", "MEDIAGATE_NOTIFY_SECRET",
    ]);
    const env = Object.fromEntries([...SECRET_VARIABLES].map((name) => [name, name === "MEDIAGATE_NOTIFY_SECRET" ? notifications().MEDIAGATE_NOTIFY_SECRET : `secret of ${name}`]));
    const config = load({ ...env, MEDIAGATE_E_CLIENT_ID: "client-id", MEDIAGATE_STORE: "postgres://mediagate:store-pw@db/jobs" });
    expect(configSecrets(config).sort()).toEqual([...Object.values(env), "store-pw"].sort());
  });

  it("notifications: MEDIAGATE_NOTIFY_URL, MEDIAGATE_NOTIFY_SECRET and MEDIAGATE_NOTIFY_EVENTS are read as given", () => {
    expect(load(notifications())).toMatchObject({ notifyUrl: "https://hooks.example.com/mediagate?token=t0k3n", notifySecret: notifications().MEDIAGATE_NOTIFY_SECRET, notifyEvents: "all" });
    expect(load({ MEDIAGATE_NOTIFY_URL: "http://127.0.0.1:9000/hook", MEDIAGATE_ALLOW_PRIVATE_URLS: "1" }).notifyUrl).toBe("http://127.0.0.1:9000/hook");
  });

  it("MEDIAGATE_NOTIFY_URL must be https (http only where private URLs are allowed) and carry no credentials; the refusal names it without echoing its path or query", () => {
    const refusals: Array<[string, string]> = [
      ["http://hooks.example.com/x?token=s3cr3t", "MEDIAGATE_NOTIFY_URL must be an https:// URL (plain http only with MEDIAGATE_ALLOW_PRIVATE_URLS=1, for local set-ups), got one starting http://hooks.example.com"],
      ["ftp://hooks.example.com/x", "MEDIAGATE_NOTIFY_URL must be an https:// URL (plain http only with MEDIAGATE_ALLOW_PRIVATE_URLS=1, for local set-ups), got one starting ftp://hooks.example.com"],
      ["hooks.example.com/x?token=s3cr3t", "MEDIAGATE_NOTIFY_URL must be an https:// URL such as https://hooks.example.com/mediagate"],
      ["https://user:s3cr3t@hooks.example.com/x", "MEDIAGATE_NOTIFY_URL must not carry a user or password"],
    ];
    for (const [url, message] of refusals) {
      const error = configError(() => load({ MEDIAGATE_NOTIFY_URL: url }));
      expect(error.variable).toBe("MEDIAGATE_NOTIFY_URL");
      expect(error.message).toBe(message);
    }
  });

  it("MEDIAGATE_NOTIFY_SECRET must be whsec_ and the base64 of at least 16 bytes; the refusal never echoes it", () => {
    // Too short, not base64, or not whsec_ at all.
    for (const secret of ["s3cr3t-but-not-whsec", "whsec_", "whsec_c2hvcnQ=", `whsec_${"x".repeat(30)}!`, `whsec_${Buffer.alloc(24, 7).toString("base64")}x`]) {
      const error = configError(() => load({ MEDIAGATE_NOTIFY_SECRET: secret }));
      expect(error.variable).toBe("MEDIAGATE_NOTIFY_SECRET");
      expect(error.message).toMatch(/^MEDIAGATE_NOTIFY_SECRET must be a Standard Webhooks secret: whsec_ then the base64 of at least 16 random bytes/);
      if (secret.length > 6) expect(error.message).not.toContain(secret);
    }
  });

  it("MEDIAGATE_NOTIFY_EVENTS is terminal (the default) or all", () => {
    expect(load({ MEDIAGATE_NOTIFY_EVENTS: "terminal" }).notifyEvents).toBe("terminal");
    const error = configError(() => load({ MEDIAGATE_NOTIFY_EVENTS: "every" }));
    expect(error.variable).toBe("MEDIAGATE_NOTIFY_EVENTS");
    expect(error.message).toBe('MEDIAGATE_NOTIFY_EVENTS must be terminal (a job\'s end, the default) or all (every change of its state), got "every"');
  });

  it("an empty secret given as a flag is not a secret to redact", () => {
    expect(configSecrets(load({}, { MEDIAGATE_D_API_KEY: "" }))).toEqual([]);
  });

  it("requireValue returns a configured value, or names the variable to set and how", () => {
    const config = load({ MEDIAGATE_D_API_KEY: "d-key-1234" }, { MEDIAGATE_F_API_KEY: "" });
    expect(requireValue(config, "MEDIAGATE_D_API_KEY", "D's API key")).toBe("d-key-1234");
    for (const name of ["MEDIAGATE_C_API_KEY", "MEDIAGATE_F_API_KEY"] as const) {
      const error = configError(() => requireValue(config, name, "the API key"));
      expect(error.variable).toBe(name);
      expect(error.code).toBe("not_configured");
      expect(error.message).toBe(`the API key is not configured: set ${name} (environment, --config file, or run \`mediagate sandbox\` and use the lines it prints)`);
    }
  });
});

function notifications(): Record<"MEDIAGATE_NOTIFY_URL" | "MEDIAGATE_NOTIFY_SECRET" | "MEDIAGATE_NOTIFY_EVENTS", string> {
  return {
    MEDIAGATE_NOTIFY_URL: "https://hooks.example.com/mediagate?token=t0k3n",
    MEDIAGATE_NOTIFY_SECRET: `whsec_${Buffer.alloc(24, 7).toString("base64")}`,
    MEDIAGATE_NOTIFY_EVENTS: "all",
  };
}

function baseUrls(): Record<string, string> {
  return {
    MEDIAGATE_A_BASE_URL: "https://a.example/v1",
    MEDIAGATE_B_BASE_URL: "https://b.example/v1",
    MEDIAGATE_C_BASE_URL: "https://c.example/v1",
    MEDIAGATE_D_BASE_URL: "https://d.example/v1",
    MEDIAGATE_E_BASE_URL: "https://e.example/v1",
    MEDIAGATE_E_AUTH_URL: "https://e.example/oauth/token",
    MEDIAGATE_F_BASE_URL: "https://f.example/v1",
  };
}

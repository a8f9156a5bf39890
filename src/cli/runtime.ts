import type { Clock } from "../core/clock.js";
import { configSecrets, loadConfig, type ConfigValues, type MediagateConfig } from "../core/config.js";
import { Engine } from "../engine/engine.js";
import { createLogger } from "../engine/logger.js";
import { createProviderRegistry, type ProviderEntry } from "../providers/registry.js";
import type { ProviderId } from "../providers/adapter.js";
import { notificationPolicyOf, notifierOf } from "../server/notifications.js";
import { openStore } from "../store/open.js";
import type { Store } from "../store/store.js";

/** Options every command accepts. */
export interface GlobalOptions {
  json?: boolean;
  config?: string;
  store?: string;
  outputDir?: string;
  budgetUsd?: string;
  logLevel?: string;
}

export interface Runtime {
  config: MediagateConfig;
  providers: Map<ProviderId, ProviderEntry>;
  secrets: () => string[];
  store(): Promise<Store>;
  engine(): Promise<Engine>;
  close(): Promise<void>;
}

/** Loads configuration (flags > environment > config file) and opens what a command needs, lazily. */
export function createRuntime(options: GlobalOptions, extra: ConfigValues = {}, engineOptions: { clock?: Clock } = {}): Runtime {
  const overrides: ConfigValues = { ...extra };
  if (options.store) overrides.MEDIAGATE_STORE = options.store;
  if (options.outputDir) overrides.MEDIAGATE_OUTPUT_DIR = options.outputDir;
  if (options.budgetUsd) overrides.MEDIAGATE_BUDGET_USD = options.budgetUsd;
  if (options.logLevel) overrides.MEDIAGATE_LOG_LEVEL = options.logLevel;
  const config = loadConfig({ ...(options.config ? { configFile: options.config } : {}), overrides });
  const providers = createProviderRegistry(config);
  // Keys from the configuration, and whatever adapters hold now (E's tokens).
  const secrets = () => [...configSecrets(config), ...[...providers.values()].flatMap((entry) => entry.adapter?.secrets?.() ?? [])];
  let store: Store | null = null;
  let engine: Engine | null = null;
  const runtime: Runtime = {
    config,
    providers,
    secrets,
    async store() {
      // Every process that moves jobs (an API's cancel too) writes the notifications they owe by the same rule.
      if (!store) {
        const opened = await openStore(config.store, { poolSize: config.storePoolSize });
        opened.setNotificationPolicy(notificationPolicyOf(config));
        store ??= opened;
      }
      return store;
    },
    async engine() {
      if (!engine) {
        engine = new Engine({
          store: await runtime.store(),
          providers,
          secrets,
          allowPrivateUrls: config.allowPrivateUrls,
          publicUrl: config.publicUrl,
          fallbackAfterMs: config.fallbackAfterMs,
          notifications: notifierOf(config),
          ...(engineOptions.clock ? { clock: engineOptions.clock } : {}),
          log: createLogger({ level: config.values.MEDIAGATE_LOG_LEVEL ?? "warn", secrets }),
        });
      }
      return engine;
    },
    async close() {
      if (engine) await engine.stop();
      if (store) await store.close();
      engine = null;
      store = null;
    },
  };
  return runtime;
}

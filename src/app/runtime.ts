import type { Clock } from "../core/clock.js";
import { configSecrets, loadConfig, type ConfigValues, type MediagateConfig } from "../core/config.js";
import type { ProviderId } from "../core/provider-id.js";
import { Engine } from "../engine/engine.js";
import { createLogger } from "../engine/logger.js";
import { createProviderRegistry, type ProviderEntry } from "../providers/registry.js";
import { openStore } from "../store/open.js";
import type { Store } from "../store/store.js";
import { notificationPolicyOf, notifierOf } from "./notifications.js";

/** Where a runtime's configuration comes from: MEDIAGATE_* values (flags > environment > config file). */
export interface RuntimeSettings {
  /** Values that win over the environment and the file (a command's flags). */
  overrides?: ConfigValues;
  /** The environment to read (default `process.env`). */
  env?: NodeJS.ProcessEnv | ConfigValues;
  /** A config file with the same keys (default `./mediagate.config.json` when it exists). */
  configFile?: string;
  /** The engine's clock (tests). */
  clock?: Clock;
}

/** What every face runs on: the configuration, the providers, and the store and engine, opened when first asked for. */
export interface Runtime {
  config: MediagateConfig;
  providers: Map<ProviderId, ProviderEntry>;
  /** Every secret a message could leak: keys from the configuration, and what adapters hold now (E's tokens). */
  secrets: () => string[];
  store(): Promise<Store>;
  engine(): Promise<Engine>;
  close(): Promise<void>;
}

/** Loads the configuration and opens what a face needs of it, lazily: a command that only validates opens no store. */
export function createRuntime(settings: RuntimeSettings = {}): Runtime {
  const config = loadConfig({
    ...(settings.env ? { env: settings.env as NodeJS.ProcessEnv } : {}),
    ...(settings.configFile ? { configFile: settings.configFile } : {}),
    overrides: settings.overrides ?? {},
  });
  const providers = createProviderRegistry(config);
  const secrets = () => [...configSecrets(config), ...[...providers.values()].flatMap((entry) => entry.adapter?.secrets?.() ?? [])];
  let store: Promise<Store> | null = null;
  let engine: Engine | null = null;
  const runtime: Runtime = {
    config,
    providers,
    secrets,
    store() {
      // Every process that moves jobs (an API's cancel too) writes the notifications they owe by the same rule.
      store ??= openStore(config.store, { poolSize: config.storePoolSize }).then((opened) => {
        opened.setNotificationPolicy(notificationPolicyOf(config));
        return opened;
      });
      // A store that failed to open (a wrong address) is tried again by the next call, once it may have been fixed.
      store.catch(() => (store = null));
      return store;
    },
    async engine() {
      if (!engine) {
        const opened = await runtime.store();
        engine ??= new Engine({
          store: opened,
          providers,
          secrets,
          allowPrivateUrls: config.allowPrivateUrls,
          publicUrl: config.publicUrl,
          fallbackAfterMs: config.fallbackAfterMs,
          notifications: notifierOf(config),
          ...(settings.clock ? { clock: settings.clock } : {}),
          log: createLogger({ level: config.values.MEDIAGATE_LOG_LEVEL ?? "warn", secrets }),
        });
      }
      return engine;
    },
    async close() {
      const opened = store;
      if (engine) await engine.stop();
      if (opened) await (await opened.catch(() => null))?.close();
      engine = null;
      store = null;
    },
  };
  return runtime;
}

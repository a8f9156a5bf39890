import type { Clock } from "../core/clock.js";
import { configSecrets, loadConfig, type ConfigValues, type MediagateConfig } from "../core/config.js";
import type { ProviderId } from "../core/provider-id.js";
import { newJobTrace, parseTraceparent, type JobTrace } from "../core/trace-context.js";
import type { JobTracer } from "../core/tracing.js";
import { Engine } from "../engine/engine.js";
import { createLogger } from "../engine/logger.js";
import { createProviderRegistry, type ProviderEntry } from "../providers/registry.js";
import { openStore } from "../store/open.js";
import type { Store } from "../store/store.js";
import { traceSettingsOf, type TraceSettings } from "../telemetry/settings.js";
import { notificationPolicyOf, notifierOf } from "./notifications.js";
import { tracingJobEnds, type OutputTypeOf } from "./traced-store.js";

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
  /** Where traces are exported (OTEL_EXPORTER_OTLP_*), or null: none, and nothing of OpenTelemetry is loaded. */
  traceSettings: TraceSettings | null;
  /** The tracer, loaded when first asked for; null when traces are off. */
  tracer(): Promise<JobTracer | null>;
  /**
   * The trace a job admitted now joins: the caller's when its `traceparent` (an API request's header) is valid and
   * sampled, else a new one; null when traces are off (nothing is stored) or the caller asked for no sampling.
   */
  jobTrace(traceparent?: string | null): JobTrace | null;
  /** Emits the spans of jobs that ended here (read from the store, so before it closes), exports them, and stops the tracer. */
  finishTraces(): Promise<void>;
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
  // OpenTelemetry's variables, read from the same environment: a bad value is refused here, before anything is sent.
  const traceSettings = traceSettingsOf((settings.env ?? process.env) as Record<string, string | undefined>);
  // The exporter's headers carry a backend's key: redacted like ours.
  const traceSecrets = Object.values(traceSettings?.headers ?? {});
  const secrets = () => [...configSecrets(config), ...traceSecrets, ...[...providers.values()].flatMap((entry) => entry.adapter?.secrets?.() ?? [])];
  const outputTypeOf: OutputTypeOf = (job) => providers.get(job.provider)?.adapter?.commonCapabilities?.(job.model)?.task ?? null;
  let store: Promise<Store> | null = null;
  let engine: Engine | null = null;
  let tracer: Promise<JobTracer> | null = null;
  let jobEnds: { settled(): Promise<void> } | null = null;
  const runtime: Runtime = {
    config,
    providers,
    secrets,
    traceSettings,
    tracer() {
      if (!traceSettings) return Promise.resolve(null);
      // Imported only now: a process without an endpoint loads nothing of OpenTelemetry (bench/trace-cost.ts shows it).
      tracer ??= import("../telemetry/otel.js").then((otel) => otel.openOtelTracer(traceSettings));
      return tracer;
    },
    jobTrace(traceparent = null) {
      return traceSettings ? newJobTrace(parseTraceparent(traceparent)) : null;
    },
    store() {
      // Every process that moves jobs (an API's cancel too) writes the notifications they owe by the same rule.
      store ??= openStore(config.store, { poolSize: config.storePoolSize }).then(async (opened) => {
        opened.setNotificationPolicy(notificationPolicyOf(config));
        const traces = await runtime.tracer();
        if (!traces) return opened;
        // Traced: whichever of this process's writers ends a job emits its span.
        const traced = tracingJobEnds(opened, traces, outputTypeOf);
        jobEnds = traced;
        return traced.store;
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
          tracer: await runtime.tracer(),
          ...(settings.clock ? { clock: settings.clock } : {}),
          log: createLogger({ level: config.values.MEDIAGATE_LOG_LEVEL ?? "warn", secrets }),
        });
      }
      return engine;
    },
    async finishTraces() {
      await jobEnds?.settled();
      await (await tracer?.catch(() => null))?.shutdown().catch(() => undefined);
      tracer = null;
      jobEnds = null;
    },
    async close() {
      const opened = store;
      if (engine) await engine.stop();
      await runtime.finishTraces();
      if (opened) await (await opened.catch(() => null))?.close();
      engine = null;
      store = null;
    },
  };
  return runtime;
}

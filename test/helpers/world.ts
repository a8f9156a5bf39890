import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { IDEMPOTENT_ATTEMPTS } from "../../src/providers/http.js";
import type { FaultKind } from "../../src/sandbox/index.js";
import type { Clock } from "../../src/core/clock.js";
import type { Job } from "../../src/core/job.js";
import type { OutputWriter } from "../../src/outputs/local-folder.js";
import { loadConfig } from "../../src/core/config.js";
import { Engine } from "../../src/engine/engine.js";
import type { EngineLogger } from "../../src/engine/logger.js";
import type { NotifierOptions } from "../../src/engine/notify.js";
import type { JobRequest } from "../../src/providers/adapter.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import type { ProviderEmulator } from "../../src/sandbox/context.js";
import { startSandbox, type EmulatorSetups, type Sandbox } from "../../src/sandbox/index.js";
import type { Store } from "../../src/store/store.js";
import { type StoreFactory, tempDir } from "./stores.js";
import { until } from "./until.js";
import { waitAndRead } from "./wait.js";

export interface World {
  sandbox: Sandbox;
  folder: string;
  /** Environment pointing mediagate at this sandbox, with a fresh SQLite store and output folder. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** A sandbox with the given emulators on loopback, and the environment that points mediagate at it. */
export async function startWorld(emulators: ProviderEmulator[], options: { timeScale?: number; seed?: number; env?: Record<string, string> } = {}): Promise<World> {
  const sandbox = await startSandbox({
    providers: emulators.map((emulator) => emulator.id),
    emulators: Object.fromEntries(emulators.map((emulator) => [emulator.id, emulator])) as EmulatorSetups,
    timeScale: options.timeScale ?? 1,
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  });
  const folder = tempDir();
  return {
    sandbox,
    folder: folder.path,
    env: {
      MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`,
      MEDIAGATE_OUTPUT_DIR: join(folder.path, "out"),
      ...sandbox.environment,
      ...options.env,
    },
    async close() {
      await sandbox.stop();
      folder.remove();
    },
  };
}

/**
 * An in-process engine on a real store pointed at the world's sandbox.
 * `virtualTime` runs the engine on the sandbox's clock, so provider rules of
 * minutes or days (C's ten-minute release) pass in seconds on both sides.
 */
export function worldEngine(
  world: World,
  store: Store,
  options: { virtualTime?: boolean; publicUrl?: string; leaseMs?: number; outputs?: OutputWriter; maxInFlight?: number; log?: EngineLogger; idleTickMs?: number; notifications?: NotifierOptions; allowPrivateUrls?: boolean } = {},
) {
  const config = loadConfig({ env: world.env, cwd: world.folder });
  const providers = createProviderRegistry(config);
  const clock: Clock | undefined = options.virtualTime ? world.sandbox.clock : undefined;
  const secrets = () => Object.entries(world.env).filter(([name]) => /KEY|SECRET/.test(name)).map(([, value]) => value);
  const engine = new Engine({
    store,
    providers,
    secrets,
    ...(clock ? { clock } : {}),
    ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
    ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
    ...(options.maxInFlight ? { maxInFlight: options.maxInFlight } : {}),
    ...(options.idleTickMs ? { idleTickMs: options.idleTickMs } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(options.outputs ? { outputs: options.outputs } : {}),
    ...(options.notifications ? { notifications: options.notifications } : {}),
    ...(options.allowPrivateUrls !== undefined ? { allowPrivateUrls: options.allowPrivateUrls } : {}),
  });
  let counter = 0;
  return {
    engine,
    providers,
    async enqueue(request: JobRequest, ref = `ref-${++counter}`, extra: { budgetId?: string; batchId?: string; notifyUrl?: string; deadlineAt?: number } = {}) {
      const adapter = providers.get(request.provider)!.adapter!;
      // As the CLI prepares a job: the provider's context for the prefetch and for an estimate the provider gives (B's quote).
      const context = await engine.providerContext(request.provider);
      if (adapter.prefetch) await adapter.prefetch(request, context);
      const validated = adapter.validate(request);
      const estimate = await adapter.estimate(validated, context);
      const now = (clock ?? { now: () => Date.now() }).now();
      const [result] = await store.insertJobs(
        [
          {
            id: `job_${ref}`,
            ref,
            batchId: extra.batchId ?? null,
            provider: request.provider,
            model: validated.model,
            operation: validated.operation,
            body: validated.body,
            facts: validated.facts,
            warnings: validated.warnings,
            estimateMicroUsd: estimate.microUsd,
            estimateSource: estimate.source,
            outDir: join(world.folder, "out"),
            budgetId: extra.budgetId ?? null,
            notifyUrl: extra.notifyUrl ?? null,
            deadlineAt: extra.deadlineAt ?? null,
          },
        ],
        now,
      );
      engine.wake();
      return result!.job;
    },
    wait: (ids: string[]) => waitAndRead(engine, store, ids),
  };
}

/**
 * One failed attempt at `path` (the fault on each of the HTTP layer's own
 * tries), then the next request held a real second: long enough for a test to
 * read the job as the failed attempt left it.
 */
export function failOneAttemptThenHold(world: World, path: RegExp, fault: FaultKind): void {
  world.sandbox.injectFault({ method: "GET", path, fault, times: IDEMPOTENT_ATTEMPTS });
  world.sandbox.injectFault({ method: "GET", path, fault: { kind: "delay", ms: 1_000 }, times: 1 });
}

/**
 * For each test of the enclosing `describe`: a fresh store from `factory`,
 * and the world the test starts in `bed.world`, closed after it.
 */
export function worldPerTest(factory: StoreFactory): { readonly store: Store; world: World | undefined } {
  const bed: { store: Store; world: World | undefined } = { store: undefined as unknown as Store, world: undefined };
  let cleanup: () => Promise<void> = async () => undefined;
  beforeEach(async () => {
    ({ store: bed.store, cleanup } = await factory.open());
  });
  afterEach(async () => {
    await cleanup();
    await bed.world?.close();
    bed.world = undefined;
  });
  return bed;
}

/**
 * Runs the job `start` queues until its result is being downloaded, then stops
 * the engine with the download held: the job is left `capturing`, its link to
 * be read again by the next engine (as after a crash or a Ctrl-C mid-download).
 * Returns the job as the store then has it.
 */
export async function stoppedMidDownload(world: World, store: Store, resultPath: RegExp, start: (engine: ReturnType<typeof worldEngine>) => Promise<Job>): Promise<Job> {
  world.sandbox.injectFault({ method: "GET", path: resultPath, fault: { kind: "delay", ms: 60_000 }, times: 1 });
  const first = worldEngine(world, store, { virtualTime: true });
  const job = await start(first);
  first.engine.start();
  await until(() => world.sandbox.requests().some((request) => resultPath.test(request.url)), "the download to be asked for");
  await first.engine.stop();
  return (await store.getJob(job.id))!;
}

import type { FastifyInstance } from "fastify";
import { createRuntime, type Runtime } from "../../src/cli/runtime.js";
import { createLogger } from "../../src/engine/logger.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { buildServer } from "../../src/server/app.js";
import { startWorld, type World } from "./world.js";

export interface Served {
  world: World;
  runtime: Runtime;
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  url: string;
  emulators: ReturnType<typeof createAllEmulators>;
  close(): Promise<void>;
}

/**
 * `mediagate serve`'s server (API and dashboard) over real HTTP on loopback,
 * its engine running unless told not to, the sandbox behind it with short
 * renders (D 300–500 ms, C 1 s).
 */
export async function serveSandbox(options: { engine?: boolean; emulators?: Parameters<typeof createAllEmulators>[0] } = {}): Promise<Served> {
  const emulators = createAllEmulators({ d: { renderTimeMs: { minMs: 300, maxMs: 500 } }, c: { renderMs: 1_000 }, ...options.emulators });
  const world = await startWorld(emulators.list);
  const runtime = createRuntime({}, world.env);
  const store = await runtime.store();
  const engine = await runtime.engine();
  const log = createLogger({ level: "silent", secrets: runtime.secrets });
  const app = await buildServer({ store, engine, providers: runtime.providers, log, now: () => Date.now() }, { runtime, log });
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  if (options.engine !== false) engine.start();
  return {
    world,
    runtime,
    app,
    url,
    emulators,
    async close() {
      await app.close();
      await runtime.close();
      await world.close();
    },
  };
}

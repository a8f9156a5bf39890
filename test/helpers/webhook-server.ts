import type { FastifyInstance } from "fastify";
import { silentLogger } from "../../src/engine/logger.js";
import { buildServer } from "../../src/server/app.js";
import type { Store } from "../../src/store/store.js";
import { type World, worldEngine } from "./world.js";

/**
 * An engine on the world's sandbox with `mediagate serve`'s real server on
 * loopback as its public URL, so B and F deliveries (and A callbacks) arrive
 * through the same route as in production.
 */
export async function servedEngine(
  world: World,
  store: Store,
  options: Omit<NonNullable<Parameters<typeof worldEngine>[2]>, "publicUrl"> & { /** The ingress clock (the per-source bound, the counters' hours). */ now?: () => number } = {},
) {
  const { now: ingressNow, ...engineOptions } = options;
  const now = ingressNow ?? (options.virtualTime ? () => world.sandbox.clock.now() : () => Date.now());
  // The server must listen before the engine exists (its address is the public URL), so bind first and attach after.
  let ingress: Parameters<typeof buildServer>[0] | undefined;
  const server: FastifyInstance = await buildServer({
    get store() {
      return ingress!.store;
    },
    get engine() {
      return ingress!.engine;
    },
    get providers() {
      return ingress!.providers;
    },
    log: silentLogger,
    now,
  } as Parameters<typeof buildServer>[0]);
  const address = await server.listen({ port: 0, host: "127.0.0.1" });
  const built = worldEngine(world, store, { ...engineOptions, publicUrl: address });
  ingress = { store, engine: built.engine, providers: built.providers, log: silentLogger, now };
  return { ...built, address, server };
}

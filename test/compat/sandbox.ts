import { createAllEmulators, type AllEmulatorOptions, type AllEmulators } from "../../src/sandbox/all.js";
import type { LoggedRequest } from "../../src/sandbox/request-log.js";
import { startSandbox, type RunningSandbox } from "../../src/sandbox/server.js";

/**
 * The whole sandbox as `mediagate sandbox` runs it (all six emulators on one
 * loopback port, their default knobs unless a test says otherwise), for
 * third-party clients pointed at it by their base URL alone.
 */
export interface CompatSandbox {
  sandbox: RunningSandbox;
  emulators: AllEmulators;
  /** Requests that arrived at the sandbox whose path (query excluded) matches. */
  arrived(path: RegExp, method?: string): LoggedRequest[];
  close(): Promise<void>;
}

export async function startCompatSandbox(options: { timeScale?: number; emulators?: AllEmulatorOptions } = {}): Promise<CompatSandbox> {
  const emulators = createAllEmulators(options.emulators);
  const sandbox = await startSandbox({ emulators: emulators.list, timeScale: options.timeScale ?? 1 });
  return {
    sandbox,
    emulators,
    arrived: (path, method) =>
      sandbox.context.requests.filter((entry) => path.test(entry.url.split("?")[0] ?? "") && (method === undefined || entry.method === method)),
    close: () => sandbox.close(),
  };
}

import { startSandbox, type AllEmulators, type LoggedRequest, type Sandbox, type StartSandboxOptions } from "../../src/sandbox/index.js";

/**
 * The whole sandbox as `mediagate sandbox` runs it (all six emulators on one
 * loopback port, their default knobs unless a test says otherwise), for
 * third-party clients pointed at it by their base URL alone.
 */
export interface CompatSandbox {
  sandbox: Sandbox;
  emulators: AllEmulators;
  /** Requests that arrived at the sandbox whose path (query excluded) matches. */
  arrived(path: RegExp, method?: string): LoggedRequest[];
  close(): Promise<void>;
}

export async function startCompatSandbox(options: Omit<StartSandboxOptions, "providers"> = {}): Promise<CompatSandbox> {
  const sandbox = await startSandbox(options);
  return {
    sandbox,
    // All six are started.
    emulators: sandbox.emulators as AllEmulators,
    arrived: (path, method) => sandbox.requests().filter((entry) => path.test(entry.url.split("?")[0] ?? "") && (method === undefined || entry.method === method)),
    close: () => sandbox.stop(),
  };
}

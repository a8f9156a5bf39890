import type { ProviderEmulator, SandboxProviderId } from "./context.js";
import { createDEmulator, type DEmulator } from "./d/index.js";

export interface AllEmulators {
  d: DEmulator;
}

/** Every emulator the sandbox has, with default knobs, keyed by provider. */
export function createAllEmulators(): AllEmulators & { list: ProviderEmulator[] } {
  const d = createDEmulator();
  return { d, list: [d] };
}

/** The `export …` lines that point mediagate at a running sandbox (keys are the sandbox's own, not secrets). */
export function sandboxEnvironment(sandboxUrl: string, providers: readonly SandboxProviderId[]): Record<string, string> {
  const environment: Record<string, string> = {};
  if (providers.includes("d")) {
    environment.MEDIAGATE_D_BASE_URL = `${sandboxUrl}/d`;
    environment.MEDIAGATE_D_API_KEY = "sandbox-d-key";
  }
  return environment;
}

import { createAEmulator, type AEmulator } from "./a/index.js";
import { createBEmulator, type BEmulator } from "./b/index.js";
import { SANDBOX_B_WEBHOOK_SECRET } from "./b/options.js";
import { createCEmulator, type CEmulator } from "./c/index.js";
import type { ProviderEmulator, SandboxProviderId } from "./context.js";
import { createDEmulator, type DEmulator } from "./d/index.js";
import { createEEmulator, type EEmulator } from "./e/index.js";
import { DEFAULT_E_CLIENT } from "./e/options.js";
import { createFEmulator, type FEmulator } from "./f/index.js";

export interface AllEmulators {
  a: AEmulator;
  b: BEmulator;
  c: CEmulator;
  d: DEmulator;
  e: EEmulator;
  f: FEmulator;
}

/**
 * Every emulator the sandbox has, with default knobs, keyed by provider.
 * B and F accept loopback webhook addresses here (a documented deviation), so
 * `mediagate serve` on 127.0.0.1 can receive its deliveries.
 */
export interface AllEmulatorOptions {
  a?: Parameters<typeof createAEmulator>[0];
  b?: Parameters<typeof createBEmulator>[0];
  c?: Parameters<typeof createCEmulator>[0];
  d?: Parameters<typeof createDEmulator>[0];
  e?: Parameters<typeof createEEmulator>[0];
  f?: Parameters<typeof createFEmulator>[0];
}

export const SANDBOX_PROVIDERS: readonly SandboxProviderId[] = ["a", "b", "c", "d", "e", "f"];

const FACTORIES: { [P in SandboxProviderId]: (options: AllEmulatorOptions[P]) => AllEmulators[P] } = {
  a: (options) => createAEmulator(options),
  b: (options) => createBEmulator({ allowLocalWebhookUrls: true, ...options }),
  c: (options) => createCEmulator(options),
  d: (options) => createDEmulator(options),
  e: (options) => createEEmulator(options),
  f: (options) => createFEmulator({ allowLoopbackWebhooks: true, ...options }),
};

/** The emulators of the given providers only (in a–f order), with the same defaults as `createAllEmulators`. */
export function createEmulators(
  providers: readonly SandboxProviderId[],
  options: AllEmulatorOptions = {},
): Partial<AllEmulators> & { list: ProviderEmulator[] } {
  const emulators: Partial<AllEmulators> = {};
  const create = <P extends SandboxProviderId>(provider: P) => {
    emulators[provider] = FACTORIES[provider](options[provider]) as AllEmulators[P];
  };
  for (const provider of SANDBOX_PROVIDERS) if (providers.includes(provider)) create(provider);
  return { ...emulators, list: Object.values(emulators) };
}

export function createAllEmulators(options: AllEmulatorOptions = {}): AllEmulators & { list: ProviderEmulator[] } {
  return createEmulators(SANDBOX_PROVIDERS, options) as AllEmulators & { list: ProviderEmulator[] };
}

/**
 * The `export …` lines that point mediagate at a running sandbox (keys are the
 * sandbox's own, not secrets). `overrides` replace or add variables that
 * follow from the sandbox's knobs (C's tier, B's and D's concurrency).
 */
export function sandboxEnvironment(sandboxUrl: string, providers: readonly SandboxProviderId[], overrides: Record<string, string> = {}): Record<string, string> {
  const environment: Record<string, string> = {};
  if (providers.includes("a")) {
    environment.MEDIAGATE_A_BASE_URL = `${sandboxUrl}/a`;
    environment.MEDIAGATE_A_API_KEY = "sandbox-a-key";
  }
  if (providers.includes("b")) {
    environment.MEDIAGATE_B_BASE_URL = `${sandboxUrl}/b`;
    environment.MEDIAGATE_B_API_KEY = "sandbox-b-key";
    environment.MEDIAGATE_B_WEBHOOK_SECRET = SANDBOX_B_WEBHOOK_SECRET;
  }
  if (providers.includes("c")) {
    environment.MEDIAGATE_C_BASE_URL = `${sandboxUrl}/c`;
    environment.MEDIAGATE_C_API_KEY = "sandbox-c-key";
    environment.MEDIAGATE_C_TIER = "free";
  }
  if (providers.includes("d")) {
    environment.MEDIAGATE_D_BASE_URL = `${sandboxUrl}/d`;
    environment.MEDIAGATE_D_API_KEY = "sandbox-d-key";
  }
  if (providers.includes("e")) {
    environment.MEDIAGATE_E_BASE_URL = `${sandboxUrl}/e`;
    environment.MEDIAGATE_E_AUTH_URL = `${sandboxUrl}/e-auth`;
    environment.MEDIAGATE_E_CLIENT_ID = DEFAULT_E_CLIENT.clientId;
    environment.MEDIAGATE_E_CLIENT_SECRET = DEFAULT_E_CLIENT.clientSecret;
    // The spec's scope list is a template; these are the sandbox's names for its placeholders.
    environment.MEDIAGATE_E_SCOPES = "openid,SandboxID,read_organizations,imagegen_enterprise,imagegen_api,ig_apis";
  }
  if (providers.includes("f")) {
    environment.MEDIAGATE_F_BASE_URL = `${sandboxUrl}/f`;
    environment.MEDIAGATE_F_API_KEY = "sandbox-f-key";
  }
  return { ...environment, ...overrides };
}

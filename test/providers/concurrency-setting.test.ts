import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config.js";
import { ConfigError } from "../../src/core/errors.js";
import { createProviderRegistry } from "../../src/providers/registry.js";

/** The providers built from these variables only (no config file is read: the folder has none). */
function registry(env: Record<string, string>) {
  return createProviderRegistry(loadConfig({ env, cwd: "/nonexistent-mediagate-folder" }));
}

function accountPool(env: Record<string, string>, provider: "b" | "d" | "f", model: string, input: Record<string, unknown>, operation?: string) {
  const adapter = registry(env).get(provider)!.adapter!;
  return adapter.limits(adapter.validate({ provider, model, input, ...(operation ? { operation } : {}) } as Parameters<typeof adapter.validate>[0])).slotPools;
}

describe("MEDIAGATE_<P>_CONCURRENCY: an account's concurrent tasks when they differ from the published ceiling", () => {
  it("D: MEDIAGATE_D_CONCURRENCY sets the account pool; gen-ctx-max keeps its own 6 inside it", () => {
    const image = { prompt: "x", width: 512, height: 512 };
    expect(accountPool({}, "d", "gen-2-pro", image)).toEqual([{ key: "d:account", capacity: 24 }]);
    expect(accountPool({ MEDIAGATE_D_CONCURRENCY: "400" }, "d", "gen-2-pro", image)).toEqual([{ key: "d:account", capacity: 400 }]);
    expect(accountPool({ MEDIAGATE_D_CONCURRENCY: "400" }, "d", "gen-ctx-max", { prompt: "x", width: 512, height: 512, input_image: "https://images.example/a.png" })).toEqual([
      { key: "d:account", capacity: 400 },
      { key: "d:gen-ctx-max", capacity: 6 },
    ]);
    expect(accountPool({ MEDIAGATE_D_CONCURRENCY: "2" }, "d", "gen-ctx-max", { prompt: "x", width: 512, height: 512, input_image: "https://images.example/a.png" })).toEqual([
      { key: "d:account", capacity: 2 },
      { key: "d:gen-ctx-max", capacity: 2 },
    ]);
  });

  it("F: MEDIAGATE_F_CONCURRENCY replaces the default of 8", () => {
    const image = { text_prompt: "x", resolution: "1024x1024" };
    expect(accountPool({}, "f", "img-v2", image)).toEqual([{ key: "f:account", capacity: 8 }]);
    expect(accountPool({ MEDIAGATE_F_CONCURRENCY: "32" }, "f", "img-v2", image)).toEqual([{ key: "f:account", capacity: 32 }]);
  });

  it("anything but a whole number from 1 to 10000 is a ConfigError naming the variable, before any provider is built", () => {
    for (const name of ["MEDIAGATE_B_CONCURRENCY", "MEDIAGATE_D_CONCURRENCY", "MEDIAGATE_F_CONCURRENCY"]) {
      for (const bad of ["0", "-3", "12.5", "lots", "1e3", "10001"]) {
        let thrown: unknown;
        try {
          registry({ [name]: bad });
        } catch (error) {
          thrown = error;
        }
        expect(thrown, `${name}=${bad}`).toBeInstanceOf(ConfigError);
        expect((thrown as ConfigError).variable).toBe(name);
        expect((thrown as ConfigError).message).toBe(`${name} must be a whole number of concurrent tasks from 1 to 10000, got "${bad}"`);
      }
    }
  });
});

describe("a provider's slot pools depend on the request's model and operation only", () => {
  // A store that finds the job asked for taken by another engine claims the queue's next job of the same model and
  // operation in its place, with the pools the engine gave for the first (ClaimInstead.sameAs, migration 16).
  const requests = [
    { provider: "a", model: "vidgen-2-0-250601", operation: null },
    { provider: "b", model: "vendorx/video-2.5", operation: "text-to-video" },
    { provider: "c", model: "v6", operation: null },
    { provider: "d", model: "gen-2-pro", operation: null },
    { provider: "d", model: "gen-ctx-max", operation: null },
    { provider: "e", model: "v3", operation: null },
    { provider: "f", model: "img-v2", operation: null },
  ] as const;
  const bodies = [
    { body: { prompt: "x" }, facts: {} },
    { body: { prompt: "a much longer prompt", width: 2048, height: 512, resolution: "1080p", duration: 10, duration_s: 10, seed: 7 }, facts: { megapixels: 1, seconds: 10 } },
  ];

  it("the same for two requests of one model and operation whatever their bodies, on every provider", () => {
    const providers = registry({});
    for (const { provider, model, operation } of requests) {
      const adapter = providers.get(provider)!.adapter!;
      const [one, other] = bodies.map(({ body, facts }) =>
        adapter.limits({ provider, model, operation, body, facts, warnings: [] } as unknown as Parameters<typeof adapter.limits>[0]).slotPools,
      );
      expect(other, `${provider} ${model}`).toEqual(one);
    }
  });
});

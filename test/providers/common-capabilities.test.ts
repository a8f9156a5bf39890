import { describe, expect, it } from "vitest";
import { checkCommonRequest, COMMON_FIELDS, type CommonField, type CommonRequest } from "../../src/core/common-request.js";
import { loadConfig } from "../../src/core/config.js";
import type { ProviderId } from "../../src/providers/adapter.js";
import { createProviderRegistry } from "../../src/providers/registry.js";

/** A value of each common field that is well formed (whether a target honours it is what is tested). */
const SAMPLE: Record<CommonField, unknown> = {
  prompt: "a kite over dunes",
  size: "1280x720",
  aspect_ratio: "16:9",
  seed: 7,
  n: 2,
  images: ["https://images.example/a.png"],
  duration_s: 5,
  resolution: "720p",
  generate_audio: true,
  first_frame: "https://images.example/first.png",
  last_frame: "https://images.example/last.png",
  reference_images: ["https://images.example/ref.png"],
};

const registry = createProviderRegistry(loadConfig({ env: {}, cwd: process.cwd() }));
/** A model of each provider taking common requests without reading the provider first (B's depend on its catalog). */
const MODELS: Array<[ProviderId, string]> = [["a", "vidgen-2-0-250601"], ["c", "v6"], ["d", "gen-2-pro"], ["e", "v3"], ["f", "img-v2"]];

describe("what `mediagate models --task` says each target refuses is what its mapping refuses", () => {
  for (const [provider, model] of MODELS) {
    it(`${provider.toUpperCase()} common: every field listed as refused makes ${provider}/${model} ineligible, naming that field`, () => {
      const adapter = registry.get(provider)!.adapter!;
      const capabilities = adapter.commonCapabilities!(model)!;
      const refused = Object.keys(capabilities.refuses) as CommonField[];
      for (const field of refused) {
        const request = { task: capabilities.task, prompt: SAMPLE.prompt, [field]: SAMPLE[field] } as CommonRequest;
        const mapping = adapter.fromCommon!(request, { model });
        expect(mapping.ok, `${field} should be refused`).toBe(false);
        expect((mapping as { unhonoured: Array<{ field: string }> }).unhonoured.map((entry) => entry.field)).toContain(field);
      }
      // Every field of the task is described one way or the other.
      for (const field of COMMON_FIELDS) {
        const described = field in capabilities.honours || field in capabilities.refuses;
        if (described) continue;
        // Undescribed: a field of the other task, refused by the request's own check before any mapping sees it.
        const request = { task: capabilities.task, prompt: SAMPLE.prompt, [field]: SAMPLE[field] } as CommonRequest;
        expect(() => checkCommonRequest(request), `${field} is neither described nor refused`).toThrow(`is not a field of a ${capabilities.task} request`);
      }
    });
  }
});

import type { Job } from "../../src/core/job.js";
import type { JobRequest, ProviderId } from "../../src/providers/adapter.js";

/** The six providers, in the order batches interleave them. */
export const PROVIDERS = ["a", "b", "c", "d", "e", "f"] as const;

/** Where each provider's submits, reads and result downloads arrive at the sandbox (path without query). */
export const SUBMIT_PATH: Record<ProviderId, RegExp> = {
  a: /\/contents\/generations\/tasks$/,
  b: /^\/b\/v1\/media\/[a-z]/,
  c: /^\/c\/openapi\/v2\/video\/text\/generate$/,
  d: /^\/d\/v1\//,
  e: /^\/e\/v3\/images\/generate-async$/,
  f: /^\/f\/v1\/[^/]+\/async\/generate$/,
};
export const READ_PATH: Record<ProviderId, RegExp> = {
  a: /\/contents\/generations\/tasks\/cgt-/,
  b: /^\/b\/v1\/media\/jobs\//,
  c: /^\/c\/openapi\/v2\/video\/result\//,
  d: /^\/d-poll\//,
  e: /^\/e-status\//,
  f: /^\/f\/v1\/generations\//,
};
export const RESULT_PATH: Record<ProviderId, RegExp> = {
  a: /^\/a\/results\//,
  b: /^\/b\/files\//,
  c: /^\/c\/results\//,
  d: /^\/d-results\//,
  e: /^\/e-files\//,
  f: /^\/f\/images\//,
};

/** Deterministic randomness for drawing faults and kill points from a seed (the sandbox's own generator). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A text no other job's prompt contains, so the provider's records and the sandbox's log can be matched to the job. */
export const markerOf = (job: Pick<Job, "ref">) => `[${job.ref}]`;

/** A small, cheap job of each provider whose prompt carries its ref's marker. */
export function requestFor(provider: ProviderId, ref: string, index: number): JobRequest {
  const prompt = `${markerOf({ ref })} a lighthouse in weather number ${index}`;
  switch (provider) {
    case "a":
      return { provider, model: "vidgen-2-0-250601", input: { prompt, duration: 5, resolution: "480p", ratio: "16:9" } };
    case "b":
      return { provider, model: "vendorx/video-2.5", operation: "text-to-video", input: { prompt, resolution: "720p", duration_s: 5 } };
    case "c":
      return { provider, model: "v6", input: { prompt, aspect_ratio: "16:9", duration: 5 } };
    case "d":
      return { provider, model: "gen-2-pro", input: { prompt, width: 256, height: 256, seed: index } };
    case "e":
      return { provider, model: "v3", input: { prompt } };
    case "f":
      return { provider, model: "img-v2", input: { text_prompt: prompt, resolution: "256x256" } };
  }
}

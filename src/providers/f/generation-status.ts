import { z } from "zod";
import type { OutputRef, ProviderStatus } from "../adapter.js";

/** spec F generation status: "The read call returns `pending` until the result is ready". */
export const PENDING = "pending";

/**
 * spec F delivery body, also the read payload once ready: `generation_id`,
 * `created` and `data`. Each item: url, prompt, resolution, seed,
 * is_image_safe. Read leniently: every other field, and the format of
 * `created` (not shown), is kept in `raw` as received.
 */
const Item = z.object({
  url: z.string().nullish(),
  prompt: z.string().nullish(),
  resolution: z.string().nullish(),
  seed: z.number().int().nullish(),
  is_image_safe: z.boolean().nullish(),
});
const Answer = z.object({
  status: z.string().optional(),
  data: z.array(z.unknown()).optional(),
  generation_id: z.string().optional(),
  // The endpoint reference page's name for the correlation field (spec F delivery body).
  request_id: z.string().optional(),
});

/** A generation answer mapped to a status, or why it could not be read (the caller decides what that means). */
export type GenerationReading = { kind: "status"; status: ProviderStatus } | { kind: "unreadable"; reason: string };

function outputOf(item: z.infer<typeof Item>): OutputRef | null {
  if (typeof item.url !== "string" || item.url.length === 0) return null;
  return {
    url: item.url,
    // spec F: the per-image facts kept beside the saved file; the seed is needed to reproduce an image.
    metadata: {
      seed: item.seed ?? null,
      prompt: item.prompt ?? null,
      resolution: item.resolution ?? null,
      is_image_safe: item.is_image_safe ?? null,
    },
  };
}

/**
 * Maps a generation read (or a verified delivery body) to a status.
 * `pending` → pending; a payload with `data` → succeeded with one output per
 * image. spec F: "Other status values: not shown" — no failure state is
 * published, so any other status without a result keeps the job pending with
 * the raw value (the engine's tracking deadline bounds it).
 */
export function readGeneration(raw: unknown, generationId: string): GenerationReading {
  const answer = Answer.safeParse(raw);
  if (!answer.success) return { kind: "unreadable", reason: "the answer is not a JSON object with a string status or a data array" };
  const { status, data } = answer.data;
  const namedId = answer.data.generation_id ?? answer.data.request_id;
  if (namedId !== undefined && namedId !== generationId) {
    return { kind: "unreadable", reason: `the answer names generation ${namedId}, not ${generationId}` };
  }
  if (status === PENDING) return { kind: "status", status: { kind: "pending", providerStatus: status, raw } };
  if (data === undefined) {
    if (status === undefined) return { kind: "unreadable", reason: "the answer has neither a status nor a data array" };
    // spec F: "Other status values: not shown." Polled on, marked unrecognised (the engine bounds how long).
    return {
      kind: "status",
      status: { kind: "pending", providerStatus: status, unrecognised: { said: `F answered status "${status.slice(0, 80)}" for generation ${generationId}`, taskUnknown: false }, raw },
    };
  }
  // The ready payload carries no status of its own (spec F: status is on the read call, `pending` while unfinished).
  const providerStatus = status ?? "ready";
  const items = data.map((item) => Item.safeParse(item));
  const outputs = items.flatMap((item) => (item.success ? (outputOf(item.data) ?? []) : []));
  if (outputs.length === 0) {
    // Not shown: a result whose images have no link. Nothing can be saved, so the job fails with the raw payload kept.
    return {
      kind: "status",
      status: {
        kind: "failed",
        providerStatus,
        code: "no_outputs",
        message: `F reported generation ${generationId} ready with ${data.length} image(s) but no usable image link`,
        raw,
      },
    };
  }
  // Not shown either: some items without a link. The ones with links are kept; the raw payload shows the others.
  return { kind: "status", status: { kind: "succeeded", providerStatus, outputs, raw } };
}

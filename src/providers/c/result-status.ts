import type { ProviderStatus } from "../adapter.js";

/** spec C Limits: a task unfinished after ten minutes has its slot released automatically. */
export const C_SLOT_RELEASE_MS = 10 * 60_000;

export interface CResult {
  status: number;
  url?: string | null | undefined;
}

/**
 * spec C result status: 5 generating, 1 success with `Resp.url`, 7
 * moderation failure (credits refunded), 8 generation failure, 6 deleted
 * (known only from the index text). Any other value is unknown: the job
 * keeps being polled, marked unrecognised (the engine ends it when only such
 * values come for a bounded time). `heldForMs` is the time
 * since submit, for the ten-minute slot release.
 */
export function resultStatusOf(result: CResult, heldForMs: number | null, raw: unknown): ProviderStatus | "success_without_url" {
  // The provider holds the slot only while the task generates, and for ten minutes at most.
  const holdsSlot = heldForMs === null || heldForMs < C_SLOT_RELEASE_MS;
  switch (result.status) {
    case 5:
      return { kind: "pending", providerStatus: "5 (generating)", holdsSlot, raw };
    case 1:
      if (!result.url) return "success_without_url";
      return { kind: "succeeded", providerStatus: "1 (success)", outputs: [{ url: result.url }], raw };
    case 7:
      return { kind: "failed", providerStatus: "7 (moderation failure)", code: "moderation_failed", message: "C's moderation rejected the result; the credits are refunded", raw };
    case 8:
      return { kind: "failed", providerStatus: "8 (generation failure)", code: "generation_failed", message: "C reported that generation failed", raw };
    case 6:
      return { kind: "failed", providerStatus: "6 (deleted)", code: "deleted", message: "C reports the video as deleted", raw };
    default:
      // Unknown: not a status we may read as done; keep the slot (as for 5) until the ten-minute release.
      return {
        kind: "pending",
        providerStatus: `${result.status} (unknown status)`,
        holdsSlot,
        unrecognised: { said: `C answered Resp.status ${result.status}`, taskUnknown: false },
        raw,
      };
  }
}

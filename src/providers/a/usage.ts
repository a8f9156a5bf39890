import { z } from "zod";

/**
 * spec A: usage is billed in tokens; the task object has "usage (token
 * count)" whose sub-fields are not shown. Read defensively: a bare number,
 * or `total_tokens`, else `completion_tokens`, of an object.
 */
export interface AUsage {
  tokens: number | null;
  /** The usage value exactly as A gave it. */
  raw: unknown;
}

const TokenCount = z.number().int().nonnegative();
const UsageObject = z.object({ total_tokens: TokenCount.optional(), completion_tokens: TokenCount.optional() });

export function readUsage(raw: unknown): AUsage {
  const bare = TokenCount.safeParse(raw);
  if (bare.success) return { tokens: bare.data, raw };
  const object = UsageObject.safeParse(raw);
  if (object.success) return { tokens: object.data.total_tokens ?? object.data.completion_tokens ?? null, raw };
  return { tokens: null, raw: raw ?? null };
}

/** The usage a succeeded ProviderStatus carries, read back for the charge. */
export const StoredUsage = z.object({ tokens: TokenCount.nullable() });

import { createHash, randomBytes } from "node:crypto";
import { InputError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { MICRO_USD_ALLOWED, microUsdProblem } from "../core/money.js";
import type { ApiToken, Store } from "../store/store.js";

/** The prefix of every API token's secret: a reader (and a secret scanner) can tell what it is. */
export const TOKEN_PREFIX = "mg_";
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const TOKEN_NAME_ALLOWED = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit";

/** The sha256 the store keeps of a secret: enough to recognise it, useless to present. */
export function secretSha256(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** The budget row of a token with a ceiling: its jobs commit against it at each send, like a command's. */
export function tokenBudgetId(tokenId: string): string {
  return `token:${tokenId}`;
}

export interface NewTokenOptions {
  name: string;
  admin?: boolean;
  readOnly?: boolean;
  /** A ceiling on what the token's jobs may spend (each estimate reserved at admission, charges counted). */
  budgetMicroUsd?: number | null;
  /** Its share of a provider's slots against the other tenants' (default 1): see fair share in the README. */
  weight?: number;
  now: number;
}

/** The most a token's weight may be: a share a thousand times another's is already all of it. */
export const MAX_TOKEN_WEIGHT = 1_000;

/**
 * Creates a token and returns its secret, which exists only in this answer:
 * the store keeps its sha256. A name is unique; a read-only token cannot be
 * an admin (an admin changes every job).
 */
export async function createToken(store: Store, options: NewTokenOptions): Promise<{ token: ApiToken; secret: string }> {
  if (!NAME_PATTERN.test(options.name)) throw new InputError("NAME", `"${options.name}" is not a token name`, TOKEN_NAME_ALLOWED);
  if (options.admin && options.readOnly) throw new InputError("--read-only", "and --admin together: an admin token changes every job", "one of --admin and --read-only");
  const budgetProblem = options.budgetMicroUsd == null ? null : microUsdProblem(options.budgetMicroUsd);
  if (budgetProblem !== null) throw new InputError("--budget-usd", `${budgetProblem} as a budget`, MICRO_USD_ALLOWED);
  const weight = options.weight ?? 1;
  if (!Number.isSafeInteger(weight) || weight < 1 || weight > MAX_TOKEN_WEIGHT) throw new InputError("--weight", `${weight} is not a weight`, `a whole number from 1 to ${MAX_TOKEN_WEIGHT}`);
  const secret = `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  const id = newId("tok", options.now);
  const budgetId = options.budgetMicroUsd != null ? tokenBudgetId(id) : null;
  if (budgetId !== null) await store.setBudget(budgetId, options.budgetMicroUsd!, options.now);
  const token = await store.createToken({
    id,
    name: options.name,
    secretSha256: secretSha256(secret),
    admin: options.admin ?? false,
    readOnly: options.readOnly ?? false,
    budgetId,
    createdAt: options.now,
    revokedAt: null,
    weight,
  });
  if (!token) throw new InputError("NAME", `a token named "${options.name}" exists already`, "a new name, or `mediagate token revoke` the old one first");
  return { token, secret };
}

/** The token a bearer secret belongs to, or why it is refused (one sentence; never the secret). */
export async function tokenOfSecret(store: Store, secret: string): Promise<{ token: ApiToken } | { refused: string }> {
  if (!secret.startsWith(TOKEN_PREFIX)) return { refused: `the bearer token is not a mediagate API token (they start with ${TOKEN_PREFIX})` };
  const token = await store.tokenBySecretSha256(secretSha256(secret));
  if (!token) return { refused: "the bearer token is not known to this store" };
  if (token.revokedAt !== null) return { refused: `token ${token.name} was revoked` };
  return { token };
}

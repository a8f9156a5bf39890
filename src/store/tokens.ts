import type { StoreContext } from "./context.js";

/** An API token as stored: never its secret, only the secret's sha256. */
export interface ApiToken {
  id: string;
  name: string;
  secretSha256: string;
  admin: boolean;
  readOnly: boolean;
  budgetId: string | null;
  createdAt: number;
  revokedAt: number | null;
  /** Its share of a provider's slots against the other tenants' (fair share, migration 19); 1 unless set. */
  weight: number;
}

function tokenOf(row: { id: string; name: string; secret_sha256: string; admin: number | boolean; read_only: number | boolean; budget_id: string | null; created_at: number | string; revoked_at: number | string | null; weight: number | string }): ApiToken {
  return {
    id: row.id,
    name: row.name,
    secretSha256: row.secret_sha256,
    admin: Number(row.admin) === 1,
    readOnly: Number(row.read_only) === 1,
    budgetId: row.budget_id,
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    weight: Number(row.weight),
  };
}

export async function createToken(context: StoreContext, token: ApiToken): Promise<ApiToken | null> {
  const taken = await context.db.selectFrom("api_tokens").select("id").where("name", "=", token.name).executeTakeFirst();
  if (taken) return null;
  await context.db
    .insertInto("api_tokens")
    .values({
      id: token.id,
      name: token.name,
      secret_sha256: token.secretSha256,
      admin: token.admin ? 1 : 0,
      read_only: token.readOnly ? 1 : 0,
      budget_id: token.budgetId,
      created_at: token.createdAt,
      revoked_at: token.revokedAt,
      weight: token.weight,
    })
    .onConflict((conflict) => conflict.column("name").doNothing())
    .execute();
  const stored = await context.db.selectFrom("api_tokens").selectAll().where("id", "=", token.id).executeTakeFirst();
  return stored ? tokenOf(stored) : null;
}

export async function tokenBySecretSha256(context: StoreContext, secretSha256: string): Promise<ApiToken | null> {
  const row = await context.db.selectFrom("api_tokens").selectAll().where("secret_sha256", "=", secretSha256).executeTakeFirst();
  return row ? tokenOf(row) : null;
}

export async function tokens(context: StoreContext): Promise<ApiToken[]> {
  return (await context.db.selectFrom("api_tokens").selectAll().orderBy("created_at").orderBy("id").execute()).map(tokenOf);
}

export async function revokeToken(context: StoreContext, nameOrId: string, at: number): Promise<ApiToken | null> {
  await context.db
    .updateTable("api_tokens")
    .set({ revoked_at: at })
    .where((eb) => eb.or([eb("name", "=", nameOrId), eb("id", "=", nameOrId)]))
    .where("revoked_at", "is", null)
    .execute();
  const row = await context.db.selectFrom("api_tokens").selectAll().where((eb) => eb.or([eb("name", "=", nameOrId), eb("id", "=", nameOrId)])).executeTakeFirst();
  return row ? tokenOf(row) : null;
}

export async function hasActiveTokens(context: StoreContext): Promise<boolean> {
  return (await context.db.selectFrom("api_tokens").select("id").where("revoked_at", "is", null).limit(1).executeTakeFirst()) !== undefined;
}

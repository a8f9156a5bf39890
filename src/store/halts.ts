import type { ProviderId } from "../core/provider-id.js";
import type { StoreContext } from "./context.js";

/** Providers halted for every engine on the store, one halt a provider (the first kept) until it is cleared. */

export interface ProviderHalt {
  provider: ProviderId;
  code: string;
  message: string;
  jobId: string | null;
  at: number;
}

export async function haltProvider(context: StoreContext, halt: ProviderHalt): Promise<void> {
  await context.db
    .insertInto("provider_halts")
    .values({ provider: halt.provider, code: halt.code, message: halt.message, job_id: halt.jobId, at: halt.at })
    .onConflict((conflict) => conflict.column("provider").doNothing())
    .execute();
}

export async function clearHalt(context: StoreContext, provider: ProviderId): Promise<void> {
  await context.db.deleteFrom("provider_halts").where("provider", "=", provider).execute();
}

export async function halts(context: StoreContext): Promise<ProviderHalt[]> {
  const rows = await context.db.selectFrom("provider_halts").selectAll().execute();
  return rows.map((row) => ({
    provider: row.provider as ProviderId,
    code: row.code,
    message: row.message,
    jobId: row.job_id,
    at: Number(row.at),
  }));
}

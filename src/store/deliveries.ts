import { sql } from "kysely";
import type { ProviderId } from "../core/provider-id.js";
import type { StoreContext } from "./context.js";

/** Webhook deliveries as received (a provider's delivery id recorded once), and the refused ones counted. */

/** One webhook delivery as received. `deliveryId` is null for rejected ones. */
export interface WebhookDeliveryRecord {
  provider: ProviderId;
  deliveryId: string | null;
  jobId: string | null;
  /** applied: a job was nudged or updated; unmatched: verified but no job of ours; rejected: failed verification. */
  outcome: "applied" | "unmatched" | "rejected";
  reason: string;
  at: number;
}

/** Refused webhook deliveries of one provider, for one reason, in one time bucket. */
export interface WebhookRejectionCount {
  /** One of our provider ids, or `unknown` when the request named none. */
  provider: string;
  /** A stable code (`bad_signature`, `no_webhook_route`, `too_large`, …). */
  reason: string;
  bucketStart: number;
  refused: number;
  /** How many of `refused` were answered 429, their source being past its bound. */
  throttled: number;
  firstAt: number;
  lastAt: number;
}

export async function recordDelivery(context: StoreContext, delivery: WebhookDeliveryRecord): Promise<"recorded" | "duplicate"> {
  const row = {
    provider: delivery.provider,
    delivery_id: delivery.deliveryId,
    job_id: delivery.jobId,
    outcome: delivery.outcome,
    reason: delivery.reason,
    received_at: delivery.at,
  };
  const result = await context.db
    .insertInto("webhook_deliveries")
    .values(row)
    .onConflict((conflict) => conflict.columns(["provider", "delivery_id"]).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0 ? "recorded" : "duplicate";
}

export async function deliveries(context: StoreContext, filter: { provider?: ProviderId; jobId?: string } = {}): Promise<WebhookDeliveryRecord[]> {
  let query = context.db.selectFrom("webhook_deliveries").selectAll().orderBy("id");
  if (filter.provider) query = query.where("provider", "=", filter.provider);
  if (filter.jobId) query = query.where("job_id", "=", filter.jobId);
  return (await query.execute()).map((row) => ({
    provider: row.provider as ProviderId,
    deliveryId: row.delivery_id,
    jobId: row.job_id,
    outcome: row.outcome as WebhookDeliveryRecord["outcome"],
    reason: row.reason,
    at: Number(row.received_at),
  }));
}

// Refused webhook deliveries, counted rather than stored one by one (migration 6).
export async function countWebhookRejections(context: StoreContext, counts: readonly WebhookRejectionCount[]): Promise<void> {
  if (counts.length === 0) return;
  await context.db.transaction().execute(async (trx) => {
    for (const count of counts) {
      await trx
        .insertInto("webhook_rejections")
        .values({
          provider: count.provider,
          reason: count.reason,
          bucket_start: count.bucketStart,
          refused: count.refused,
          throttled: count.throttled,
          first_at: count.firstAt,
          last_at: count.lastAt,
        })
        .onConflict((conflict) =>
          conflict.columns(["provider", "reason", "bucket_start"]).doUpdateSet({
            refused: sql<number>`webhook_rejections.refused + excluded.refused`,
            throttled: sql<number>`webhook_rejections.throttled + excluded.throttled`,
            first_at: context.least(sql`webhook_rejections.first_at`, sql`excluded.first_at`),
            last_at: context.greatest(sql`webhook_rejections.last_at`, sql`excluded.last_at`),
          }),
        )
        .execute();
    }
  });
}

export async function webhookRejections(context: StoreContext, filter: { provider?: string; from?: number; to?: number } = {}): Promise<WebhookRejectionCount[]> {
  let query = context.db.selectFrom("webhook_rejections").selectAll().orderBy("bucket_start").orderBy("provider").orderBy("reason");
  if (filter.provider !== undefined) query = query.where("provider", "=", filter.provider);
  if (filter.from !== undefined) query = query.where("bucket_start", ">=", filter.from);
  if (filter.to !== undefined) query = query.where("bucket_start", "<=", filter.to);
  return (await query.execute()).map((row) => ({
    provider: row.provider,
    reason: row.reason,
    bucketStart: Number(row.bucket_start),
    refused: Number(row.refused),
    throttled: Number(row.throttled),
    firstAt: Number(row.first_at),
    lastAt: Number(row.last_at),
  }));
}

import { keyId } from "./auth.js";
import { BApiError } from "./errors.js";
import { chargeMicroUsd, settledAt, type BJobRecord } from "./jobs.js";

const DAY_MS = 86_400_000;
/** spec B rule 2 and Limits: the span between start_date and end_date is at most 366 days. */
export const MAX_SPAN_DAYS = 366;

function parseDate(value: unknown, name: string): number {
  if (value === undefined || value === "") throw new BApiError(400, "invalid_date_range", `${name} is required (YYYY-MM-DD)`);
  if (typeof value !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(value)) throw new BApiError(400, "invalid_date_range", `${name} must be a date, YYYY-MM-DD`);
  const ms = Date.parse(`${value}T00:00:00Z`);
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== value) throw new BApiError(400, "invalid_date_range", `${name} is not a calendar date`);
  return ms;
}

function dateOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

interface SpendItem {
  key_id: string;
  model: string;
  charge_micro_usd: number;
  jobs: number;
}

/**
 * `GET /billing/spend/daily?start_date&end_date` (spec B: both required,
 * inclusive, at most 366 days apart; shape not shown). The sandbox's answer:
 * `{ start_date, end_date, unit: "micro_usd", total_micro_usd, days: [{ date,
 * total_micro_usd, items: [{ key_id, model, charge_micro_usd, jobs }] }] }`,
 * one day per date of the range (UTC, empty days included), one item per API
 * key and model (`{vendor}/{model}`) with a charge that day. A charge counts
 * on the day it settled (virtual time); jobs settled at 0 are not listed.
 * Keys appear as `key_id` (auth.ts keyId), never as the key.
 */
export function dailySpend(jobs: Iterable<BJobRecord>, now: number, query: { start_date?: unknown; end_date?: unknown }): Record<string, unknown> {
  const start = parseDate(query.start_date, "start_date");
  const end = parseDate(query.end_date, "end_date");
  if (end < start) throw new BApiError(400, "invalid_date_range", "end_date is before start_date");
  const spanDays = (end - start) / DAY_MS;
  if (spanDays > MAX_SPAN_DAYS) throw new BApiError(400, "invalid_date_range", `the span is ${spanDays} days; at most ${MAX_SPAN_DAYS}`);

  const byDay = new Map<string, Map<string, SpendItem>>();
  for (const job of jobs) {
    const charge = chargeMicroUsd(job);
    const at = settledAt(job);
    if (job.rejectedAtSubmit || charge === 0 || at > now || at < start || at >= end + DAY_MS) continue;
    const day = dateOf(at);
    const items = byDay.get(day) ?? new Map<string, SpendItem>();
    byDay.set(day, items);
    const model = `${job.operation.vendor}/${job.operation.model}`;
    const slot = `${job.apiKey}\u0000${model}`;
    const item = items.get(slot) ?? { key_id: keyId(job.apiKey), model, charge_micro_usd: 0, jobs: 0 };
    item.charge_micro_usd += charge;
    item.jobs += 1;
    items.set(slot, item);
  }

  const days = [];
  let total = 0;
  for (let dayMs = start; dayMs <= end; dayMs += DAY_MS) {
    const date = dateOf(dayMs);
    const items = [...(byDay.get(date)?.values() ?? [])].sort((first, second) => first.key_id.localeCompare(second.key_id) || first.model.localeCompare(second.model));
    const dayTotal = items.reduce((sum, item) => sum + item.charge_micro_usd, 0);
    total += dayTotal;
    days.push({ date, total_micro_usd: dayTotal, items });
  }
  return { start_date: dateOf(start), end_date: dateOf(end), unit: "micro_usd", total_micro_usd: total, days };
}

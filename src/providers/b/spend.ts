import { InputError } from "../../core/errors.js";

/** spec B rule 2 and Limits: the span between start_date and end_date is at most 366 days. */
export const MAX_SPEND_SPAN_DAYS = 366;
const DAY_MS = 86_400_000;
const DATE_ALLOWED = "a calendar date YYYY-MM-DD";

/** A date as B's spend read takes it; both are required and inclusive. */
function dayOf(value: unknown, field: "from" | "to"): number {
  if (typeof value !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(value)) throw new InputError(field, "is required", DATE_ALLOWED);
  const ms = Date.parse(`${value}T00:00:00Z`);
  // Date.parse rolls 2025-02-30 over to March; a date that does not print back the same does not exist.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) throw new InputError(field, `${value} is not a calendar date`, DATE_ALLOWED);
  return ms / DAY_MS;
}

/** Checks a spend range before anything is sent: both dates, in order, at most 366 days apart. */
export function checkSpendRange(from: unknown, to: unknown): { from: string; to: string } {
  const start = dayOf(from, "from");
  const end = dayOf(to, "to");
  if (end < start) throw new InputError("to", `${String(to)} is before ${String(from)}`, "a date on or after from");
  const span = end - start;
  if (span > MAX_SPEND_SPAN_DAYS) {
    throw new InputError("to", `${String(from)} to ${String(to)} spans ${span} days; B reads at most ${MAX_SPEND_SPAN_DAYS}`, `at most ${MAX_SPEND_SPAN_DAYS} days after from: split the range`);
  }
  return { from: from as string, to: to as string };
}

/** One charge line of a spend read: a day, a key, a model. */
export interface BSpendRow {
  date: string | null;
  keyId: string | null;
  model: string | null;
  chargeMicroUsd: number;
  /** Job count when B gives one. */
  jobs: number | null;
}

export interface BSpendReport {
  from: string;
  to: string;
  rows: BSpendRow[];
  /** Sum of the rows. */
  totalMicroUsd: number;
  /** B's own top-level `total_micro_usd`, when it gives one as an integer. */
  providerTotalMicroUsd: number | null;
  byKey: Array<{ keyId: string | null; chargeMicroUsd: number }>;
  byModel: Array<{ model: string | null; chargeMicroUsd: number }>;
  raw: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const textOf = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);
const integerOf = (value: unknown): number | null => (typeof value === "number" && Number.isSafeInteger(value) ? value : null);

/**
 * spec B rule 4: "the response shape of … the daily spend: not shown", only
 * that it is daily spend per key and per model. A row is any object holding
 * an integer `charge_micro_usd` (B's name for a charge); its key, model and
 * job count are read from `key_id`/`key`, `model` and `jobs`, and its date
 * from the nearest enclosing `date`. The whole answer is kept as `raw`.
 */
function collectRows(value: unknown, date: string | null, rows: BSpendRow[]): void {
  if (Array.isArray(value)) {
    for (const item of value) collectRows(item, date, rows);
    return;
  }
  if (!isRecord(value)) return;
  const here = textOf(value.date) ?? date;
  const charge = integerOf(value.charge_micro_usd);
  if (charge !== null) {
    rows.push({ date: here, keyId: textOf(value.key_id) ?? textOf(value.key), model: textOf(value.model), chargeMicroUsd: charge, jobs: integerOf(value.jobs) });
    return;
  }
  for (const child of Object.values(value)) collectRows(child, here, rows);
}

function totalsBy<K extends string | null>(rows: BSpendRow[], keyOf: (row: BSpendRow) => K): Array<{ key: K; chargeMicroUsd: number }> {
  const totals = new Map<K, number>();
  for (const row of rows) totals.set(keyOf(row), (totals.get(keyOf(row)) ?? 0) + row.chargeMicroUsd);
  return [...totals].map(([key, chargeMicroUsd]) => ({ key, chargeMicroUsd }));
}

/**
 * `redact` is applied to each key: the shape is not shown, so B may list a key
 * itself rather than an id of it, and a key is never printed.
 */
export function spendReportOf(from: string, to: string, body: unknown, redact: (text: string) => string = (text) => text): BSpendReport {
  const rows: BSpendRow[] = [];
  collectRows(body, null, rows);
  for (const row of rows) if (row.keyId !== null) row.keyId = redact(row.keyId);
  return {
    from,
    to,
    rows,
    totalMicroUsd: rows.reduce((sum, row) => sum + row.chargeMicroUsd, 0),
    providerTotalMicroUsd: isRecord(body) ? integerOf(body.total_micro_usd) : null,
    byKey: totalsBy(rows, (row) => row.keyId).map(({ key, chargeMicroUsd }) => ({ keyId: key, chargeMicroUsd })),
    byModel: totalsBy(rows, (row) => row.model).map(({ key, chargeMicroUsd }) => ({ model: key, chargeMicroUsd })),
    raw: body,
  };
}

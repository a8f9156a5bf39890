import type { BField, BFieldValue, BOperation } from "./operation.js";
import { speechSeconds } from "./operation.js";

type Body = Readonly<Record<string, unknown>>;

function rateFor(operation: BOperation, body: Body): number | null {
  for (const rate of operation.pricing.rates) {
    const matches = Object.entries(rate.when ?? {}).every(([name, value]) => body[name] === value);
    if (matches) return rate.microUsd;
  }
  return null;
}

function billedSeconds(operation: BOperation, body: Body): number {
  switch (operation.pricing.billedQuantity) {
    case "duration_s":
      return typeof body.duration_s === "number" ? body.duration_s : 0;
    case "speech_seconds":
      return typeof body.text === "string" ? speechSeconds(body.text) : 0;
    default:
      return 0;
  }
}

/**
 * The price of a body that passed the input_schema check, in micro-USD: rate
 * × seconds per second, rate × seconds / 60 per minute (prorated by the
 * second, rounded up to a whole micro-USD), the rate per request. A body no
 * rate matches (cannot happen for a valid body) prices at null.
 */
export function priceMicroUsd(operation: BOperation, body: Body): number | null {
  const rateMicroUsd = rateFor(operation, body);
  if (rateMicroUsd === null) return null;
  switch (operation.pricing.unit) {
    case "per_request":
      return rateMicroUsd;
    case "per_second":
      return rateMicroUsd * billedSeconds(operation, body);
    case "per_minute":
      return Math.ceil((rateMicroUsd * billedSeconds(operation, body)) / 60);
  }
}

/** The values a pricing-relevant field may take: the body's own when valid, else every allowed value (or the largest). */
function candidates(field: BField, given: unknown): readonly unknown[] {
  const valid =
    (field.enum ? field.enum.includes(given as BFieldValue) : true) &&
    (field.type === "string"
      ? typeof given === "string" && given.length >= (field.minLength ?? 0) && given.length <= (field.maxLength ?? Infinity)
      : typeof given === "number" && (field.type === "number" || Number.isInteger(given)) && given >= (field.minimum ?? -Infinity) && given <= (field.maximum ?? Infinity));
  if (valid) return [given];
  if (field.enum) return field.enum;
  if (field.type === "string") return ["x".repeat(field.maxLength ?? 1)];
  return [field.maximum ?? field.minimum ?? 0];
}

function pricingFieldNames(operation: BOperation): Set<string> {
  const names = new Set<string>();
  for (const rate of operation.pricing.rates) for (const name of Object.keys(rate.when ?? {})) names.add(name);
  if (operation.pricing.billedQuantity === "duration_s") names.add("duration_s");
  if (operation.pricing.billedQuantity === "speech_seconds") names.add("text");
  return names;
}

/**
 * spec B: "A quote returns an amount only … Use the quote as a budget
 * ceiling". The quote never refuses: every pricing field the body leaves
 * out, or gives a value the operation does not allow, is priced at its
 * dearest allowed value, so the quote is never below the charge of the same
 * body once it is valid.
 */
export function quoteMicroUsd(operation: BOperation, body: unknown): number {
  const given: Body = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Body) : {};
  const fields = operation.fields.filter((field) => pricingFieldNames(operation).has(field.name));
  let combinations: Record<string, unknown>[] = [{}];
  for (const field of fields) {
    const values = candidates(field, given[field.name]);
    combinations = combinations.flatMap((combination) => values.map((value) => ({ ...combination, [field.name]: value })));
  }
  let highest = 0;
  for (const combination of combinations) highest = Math.max(highest, priceMicroUsd(operation, combination) ?? 0);
  return highest;
}

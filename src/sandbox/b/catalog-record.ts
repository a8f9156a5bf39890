import type { BField, BFieldValue, BOperation } from "./operation.js";

/**
 * spec B rule 4: the shapes of the catalog list and record are not shown.
 * The sandbox's record (snake_case, like the job object):
 *
 * - always: `api_id`, `vendor`, `model`, `function`, `title`,
 *   `output_media_type`, `availability` ("available" | "unavailable") and
 *   `pricing` { unit, currency, rates: [{ conditions, rate_usd,
 *   rate_micro_usd }], billed_quantity, platform_fee_included, as_of, source };
 * - with `?expand=inputs` also: `request_fields` (one object per field, with
 *   type, required, enum, bounds, default), `required_inputs` (names),
 *   `enum_values` (field name → allowed values) and `input_schema` (JSON
 *   Schema 2020-12, `additionalProperties: false`).
 *
 * `webhook_url` is not in any input_schema: it is a top-level submit field of
 * every operation (spec B Events 1), taken out of the body before the schema
 * check.
 */

/** spec B Pricing constants: prices are stated as of a date and include the 5 % platform fee. */
export const PRICES_AS_OF = "2025-06-01";

const JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema";

export function inputSchema(operation: BOperation): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const field of operation.fields) properties[field.name] = fieldSchema(field);
  return {
    $schema: JSON_SCHEMA_2020_12,
    $id: `https://b.sandbox.invalid/schemas/${operation.apiId}.json`,
    title: operation.title,
    type: "object",
    properties,
    required: operation.fields.filter((field) => field.required).map((field) => field.name),
    additionalProperties: false,
  };
}

function fieldSchema(field: BField): Record<string, unknown> {
  const schema: Record<string, unknown> = { type: field.type, description: field.description };
  if (field.format) schema.format = field.format;
  if (field.enum) schema.enum = [...field.enum];
  if (field.minimum !== undefined) schema.minimum = field.minimum;
  if (field.maximum !== undefined) schema.maximum = field.maximum;
  if (field.minLength !== undefined) schema.minLength = field.minLength;
  if (field.maxLength !== undefined) schema.maxLength = field.maxLength;
  if (field.default !== undefined) schema.default = field.default;
  return schema;
}

function pricingRecord(operation: BOperation): Record<string, unknown> {
  const { pricing } = operation;
  return {
    unit: pricing.unit,
    currency: "USD",
    rates: pricing.rates.map((rate) => ({ conditions: { ...rate.when }, rate_usd: rate.usd, rate_micro_usd: rate.microUsd })),
    billed_quantity: pricing.billedQuantity ?? null,
    platform_fee_included: true,
    as_of: PRICES_AS_OF,
    source: pricing.source,
  };
}

/** The record of the list and of a read without `expand=inputs`. */
export function summaryRecord(operation: BOperation): Record<string, unknown> {
  return {
    api_id: operation.apiId,
    vendor: operation.vendor,
    model: operation.model,
    function: operation.function,
    title: operation.title,
    output_media_type: operation.outputMediaType,
    availability: operation.availability,
    pricing: pricingRecord(operation),
  };
}

/** The record of `GET /catalog/apis/{api_id}?expand=inputs`. */
export function expandedRecord(operation: BOperation): Record<string, unknown> {
  const enumValues: Record<string, BFieldValue[]> = {};
  for (const field of operation.fields) if (field.enum) enumValues[field.name] = [...field.enum];
  return {
    ...summaryRecord(operation),
    request_fields: operation.fields.map((field) => {
      const { name, type, required, description, format, enum: allowed, minimum, maximum, minLength, maxLength } = field;
      return {
        name,
        type,
        required,
        description,
        format: format ?? null,
        enum: allowed ? [...allowed] : null,
        minimum: minimum ?? null,
        maximum: maximum ?? null,
        min_length: minLength ?? null,
        max_length: maxLength ?? null,
        default: field.default ?? null,
      };
    }),
    required_inputs: operation.fields.filter((field) => field.required).map((field) => field.name),
    enum_values: enumValues,
    input_schema: inputSchema(operation),
  };
}
